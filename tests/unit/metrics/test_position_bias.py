"""Known-answer tests of geolip_lib.metrics.position_bias (T5 relative-position-bias tables)."""
import numpy as np
import pytest
import torch

from geolip_lib.metrics import position_bias as PB


def _bidir_table():
    # 16 buckets bidirectional: half = 8, distances 0..7 0..7
    nb = 16
    d = PB.bucket_distances(nb, True)
    heads = [
        -d.astype(float),                    # local: peak at distance 0, decreasing
        d.astype(float),                     # global: peak at distance 7 (bucket 7)
        -np.abs(d - 4.0),                    # mixed: peak at distance 4
        np.where(np.arange(nb) == 8, 1.0, 0.0),  # peak at raw bucket 8 = distance 0 upward: local; seed rule: mixed
    ]
    return np.stack(heads, axis=1)


def test_bucket_distances():
    assert PB.bucket_distances(8, True).tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert PB.bucket_distances(5, False).tolist() == [0, 1, 2, 3, 4]


def test_head_types_bidirectional():
    rows = PB.head_topology(_bidir_table(), bidirectional=True)
    assert [r["type"] for r in rows] == ["local", "global", "mixed", "local"]
    assert [r["peak_distance"] for r in rows] == [0, 7, 4, 0]
    assert [r["type_seed"] for r in rows] == ["local", "mixed", "mixed", "mixed"]
    assert rows[0]["monotonic"] == 1.0 and rows[1]["monotonic"] == 0.0
    assert rows[0]["dist_corr"] == pytest.approx(-1.0) and rows[1]["dist_corr"] == pytest.approx(1.0)
    assert PB.type_counts(r["type"] for r in rows) == {"local": 2, "global": 1, "mixed": 1}


def test_head_types_unidirectional_and_constant():
    nb = 10
    d = np.arange(nb, dtype=float)
    T = np.stack([-d, d, np.zeros(nb)], axis=1)
    rows = PB.head_topology(T, bidirectional=False, local_buckets=2)
    assert [r["type"] for r in rows] == ["local", "global", "local"]
    assert np.isnan(rows[2]["dist_corr"])
    assert rows[2]["monotonic"] == 1.0  # a constant head never increases


def test_table_stats_matches_torch():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(32, 6, generator=g, dtype=torch.float64)
    s = PB.table_stats(W)
    assert s["shape"] == [32, 6]
    assert s["std"] == pytest.approx(float(W.std(unbiased=False)), rel=1e-12)
    for h, p in enumerate(s["per_head"]):
        assert p["mean"] == pytest.approx(float(W[:, h].mean()), rel=1e-12, abs=1e-15)
        assert p["max"] == float(W[:, h].max())


def test_bad_table():
    with pytest.raises(ValueError, match="table"):
        PB.table_stats(np.zeros(4))
