"""companion.pages.paper_figure hands chapters the config under the parameters' names now: a result
stored before a rename (here lemma-a1's ``count``, now ``trials``) reads like one computed today."""
from __future__ import annotations

from companion import pages
from companion.registry import get


def test_a_renamed_parameter_reads_by_its_name_now(tmp_path):
    fast = get("spectral-lemma-a1").run("fast", trials=5)
    stored_then = dict(fast, config={("count" if k == "trials" else k): v for k, v in fast["config"].items()})
    got = pages.paper_figure("spectral-lemma-a1", stored_then, root=tmp_path)  # nothing stored there: the fallback
    assert got["config"]["trials"] == 5 and "count" not in got["config"]
    assert stored_then["config"]["count"] == 5  # the caller's result is not changed
