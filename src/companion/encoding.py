"""A result dict as the arrays of an ``.npz`` and the JSON values beside them, and back.

An experiment returns a dict of arrays, numbers, strings, nested dicts and lists; a stored result is
an ``.npz`` of arrays plus a JSON (:func:`companion.provenance.save_result`). :func:`flatten_result`
splits the dict into the two (nested keys as ``"outer/inner"`` paths, list items as ``"name/@i"``,
number keys as ``"#<json>"``) and :func:`unflatten_result` joins them back. Stored runs
(:mod:`companion.store`) and sweep points (:mod:`companion.sweep`) are written and read through
these two, so every stored result has one encoding.
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Mapping

import numpy as np

__all__ = ["flatten_result", "unflatten_result"]


def _encode_key(k: Any) -> str:
    """One path component: a plain string as is; a number/bool key, or a string that starts with
    ``#`` or ``@``, as ``#`` + its JSON (so ``{0.25: ...}`` comes back with the float key 0.25)."""
    if isinstance(k, np.generic):
        k = k.item()
    if isinstance(k, str):
        if "/" in k:
            raise ValueError(f"result keys must not contain '/', got {k!r}")
        return "#" + json.dumps(k) if k[:1] in ("#", "@") else k
    if isinstance(k, (bool, int, float)):
        return "#" + json.dumps(k)
    raise ValueError(f"result keys must be strings, numbers or bools, got {k!r} ({type(k).__name__})")


def _decode_part(part: str) -> Any:
    if part.startswith("@"):
        return _Slot(int(part[1:]))
    return json.loads(part[1:]) if part.startswith("#") else part


def _as_array(v: Any) -> np.ndarray | None:
    """``v`` as a numeric/string array, or None when it is not one (None, ragged lists, objects)."""
    if v is None:
        return None
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    try:
        with warnings.catch_warnings():  # numpy warns before refusing a ragged list
            warnings.simplefilter("ignore")
            arr = np.asarray(v)
    except (ValueError, TypeError):
        return None
    return arr if arr.dtype.kind in "biufcUS" else None


def flatten_result(result: Mapping[str, Any], prefix: str = "") -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Split a result dict into arrays (for the .npz) and everything else (for the JSON).

    Nested dicts become ``"outer/inner"`` keys (a number key ``k`` becomes ``"#k"``); a list that is
    not a rectangular array (dicts, arrays of different shapes) is stored item by item as
    ``"name/@0"``, ``"name/@1"``...; numbers, bools, strings, lists of numbers, numpy arrays and
    torch tensors become arrays; anything else (None, objects) goes to the JSON.
    :func:`unflatten_result` undoes all of this.

    Examples
    --------
    >>> arrays, other = flatten_result({"x": [1.0, 2.0], "fit": {"slope": 0.5}, "note": None})
    >>> sorted(arrays), other
    (['fit/slope', 'x'], {'note': None})
    >>> sorted(flatten_result({"runs": [{"a": 1}, {"a": 2}], "by_rank": {8: [0.5]}})[0])
    ['by_rank/#8', 'runs/@0/a', 'runs/@1/a']
    """
    if not isinstance(result, Mapping):
        raise TypeError(f"an experiment must return a dict, got {type(result).__name__}")
    arrays: dict[str, np.ndarray] = {}
    other: dict[str, Any] = {}

    def put(name: str, v: Any) -> None:
        if isinstance(v, Mapping):
            a, o = flatten_result(v, prefix=name + "/")
            arrays.update(a)
            other.update(o)
            return
        arr = _as_array(v)
        if arr is not None:
            arrays[name] = arr
        elif isinstance(v, (list, tuple)) and len(v) > 0:
            for i, item in enumerate(v):
                put(f"{name}/@{i}", item)
        else:
            other[name] = v

    for k, v in result.items():
        put(prefix + _encode_key(k), v)
    return arrays, other


class _Slot(int):
    """A list position decoded from an ``@i`` path component (not a dict key)."""


def _lists(d: Any) -> Any:
    """Turn the dicts of list positions that :func:`flatten_result` made back into lists (an
    empty dict in a list stores nothing, so a missing position is an empty dict)."""
    if not isinstance(d, dict):
        return d
    out = {k: _lists(v) for k, v in d.items()}
    if out and all(isinstance(k, _Slot) for k in out):
        return [out.get(i, {}) for i in range(max(out) + 1)]
    return out


def unflatten_result(arrays: Mapping[str, np.ndarray], other: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Inverse of :func:`flatten_result` (0-d arrays come back as Python scalars, lists of numbers as
    arrays, tuples as lists).

    Examples
    --------
    >>> unflatten_result(*flatten_result({"fit": {"slope": 0.5}, "n": 3}))
    {'fit': {'slope': 0.5}, 'n': 3}
    >>> back = unflatten_result(*flatten_result({"runs": [{"a": 1}, {"a": 2}], "by_rank": {8: [0.5]}}))
    >>> back["runs"], back["by_rank"][8].tolist()
    ([{'a': 1}, {'a': 2}], [0.5])
    """
    out: dict[str, Any] = {}
    items = [(k, v.item() if getattr(v, "ndim", 1) == 0 else v) for k, v in arrays.items()]
    for k, v in items + list((other or {}).items()):
        *outer, last = k.split("/")
        d = out
        for o in outer:
            d = d.setdefault(_decode_part(o), {})
        d[_decode_part(last)] = v
    return _lists(out)
