"""The random-init null cache (geolip_lib.nullcache): hit == miss, keyed by what and the key,
atomic and safe when several jobs (--jobs 2) compute the same null at once."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from geolip_lib import nullcache

pytestmark = pytest.mark.unit


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    monkeypatch.setenv(nullcache.ENV, "on")
    return tmp_path


def test_a_hit_returns_exactly_what_the_miss_returned(cache):
    calls = []

    def compute():
        calls.append(1)
        return {"v": np.float32(0.1), "a": np.arange(3), "t": (1, 2), "nan": float("nan")}

    miss, hit1 = nullcache.cached("probe", {"seed": 3}, compute)
    hit, hit2 = nullcache.cached("probe", {"seed": 3}, compute)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    assert miss == hit == {"v": float(np.float32(0.1)), "a": [0, 1, 2], "t": [1, 2], "nan": None}
    other, h = nullcache.cached("probe", {"seed": 4}, compute)  # another key: computed again
    assert not h and len(calls) == 2
    assert len(list((cache / "nulls" / "probe").glob("*.json"))) == 2


def test_switched_off_computes_and_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv(nullcache.ENV, "off")
    v, hit = nullcache.cached("probe", {"k": 1}, lambda: {"x": (1,)})
    assert v == {"x": [1]} and not hit and not (cache / "nulls").exists()


def test_a_foreign_or_broken_record_is_recomputed(cache):
    v, _ = nullcache.cached("probe", {"k": 1}, lambda: 1)
    path = nullcache.cache_path(nullcache.cache_key("probe", {"k": 1}))
    path.write_text("{half")
    assert nullcache.cached("probe", {"k": 1}, lambda: 2) == (2, False)
    rec = json.loads(path.read_text())
    rec["key"]["key"]["k"] = 9  # a record whose stored key is not this one
    path.write_text(json.dumps(rec))
    assert nullcache.cached("probe", {"k": 1}, lambda: 3) == (3, False)
    with pytest.raises(ValueError, match="safe name"):
        nullcache.cached("../x", {}, lambda: 0)


def test_concurrent_writers_leave_one_whole_record(cache):
    """Eight jobs computing the same null at once: every one gets the same value, and the file
    is one whole JSON record (temporary file + os.replace), no temporary left behind."""
    big = {"values": list(range(20000))}
    out, barrier = [], threading.Barrier(8)

    def job():
        barrier.wait()
        out.append(nullcache.cached("probe", {"k": "same"}, lambda: big)[0])

    threads = [threading.Thread(target=job) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 8 and all(o == big for o in out)
    files = list((cache / "nulls" / "probe").iterdir())
    assert len(files) == 1 and json.loads(files[0].read_text())["value"] == big
