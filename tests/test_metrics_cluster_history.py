"""companion.metrics.cluster_history: episodes of a cluster count over saved times."""
from __future__ import annotations

import numpy as np
import pytest

from companion.metrics.cluster_history import count_history


def test_count_history_on_a_known_series():
    ts = np.arange(6) * 0.5
    counts = np.array([[0, 0], [2, 1], [4, 3], [4, 3], [3, 4], [3, 4]])
    h = count_history(ts, counts, 4)
    assert h["largest"].tolist() == [4, 4] and h["first"].tolist() == [1.0, 2.0]
    assert h["lasts"].tolist() == [1.0, 0.5]  # trial 1 keeps 4 to the end: censored at T
    assert h["reached_k"].tolist() == [True, True] and h["first_k"].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="counts must be"):
        count_history(ts, counts[:3], 4)


def test_count_history_of_a_count_never_reached_is_nan():
    h = count_history([0.0, 1.0, 2.0], [[1], [2], [2]], 3)
    assert h["reached_k"].tolist() == [False] and np.isnan(h["first_k"]).all() and np.isnan(h["lasts_k"]).all()
    assert h["largest"].tolist() == [2] and h["lasts"].tolist() == [1.0]
