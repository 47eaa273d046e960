"""The notebook runtime and provenance, outside a kernel (a plain Python process)."""
from __future__ import annotations

import hashlib
import json
import os
import time

import matplotlib.pyplot as plt
import numpy as np
import pytest

from geolip_lib import provenance, results, runtime
from geolip_lib.metrics import intervals as I

pytestmark = pytest.mark.unit


def test_declared_parameters_are_the_upper_case_plain_values():
    ns = {"MODEL": "tiny-bert", "OUT_DIR": "/x", "REPORT_ROOT": "/y", "SEED": 3, "SIZES": [1, 2], "np": np,
          "lower": 1, "ARRAY": np.zeros(2), "_PRIVATE": 1, "NONE": None}
    assert runtime.declared_parameters(ns) == {"MODEL": "tiny-bert", "SEED": 3, "SIZES": [1, 2], "NONE": None}


def test_start_seeds_and_finish_records_everything(tmp_path):
    ns = {"OUT_DIR": str(tmp_path / "job"), "SEED": 7, "N": 5}
    job = runtime.start("99_test", ns, load_model=False)
    a = np.random.rand()
    runtime.seed_everything(7)
    assert a == np.random.rand()  # start seeded NumPy's global generator with SEED
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title("A line")
    assert job.figure(fig, "line", key=True) is None  # nothing returned: no path printed under the cell
    assert not plt.fignum_exists(fig.number)  # closed: the inline backend cannot show it twice
    assert job.table({"a": 1.0, "b": 2.5}, caption="numbers") is None
    x = np.random.default_rng(0).normal(size=50)
    job.finish({"n": 5}, {"mean": results.headline(float(x.mean()), interval=I.bootstrap(x), nulls={"zero": 0.0}),
                          "n": results.headline(5, interval="exact")})
    m = json.loads((tmp_path / "job" / "metrics.json").read_text())
    assert m["parameters"] == {"SEED": 7, "N": 5} and m["notebook"] == "99_test"
    assert m["figures"] == [{"file": "line.png", "title": "A line", "key": True}]
    assert (tmp_path / "job" / "line.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert m["headline"]["mean"]["nulls"]["zero"]["separated"] is False
    assert m["headline"]["n"]["interval"]["method"] == "exact (no sampling)"
    assert m["provenance"]["parameters"] == m["parameters"] and m["provenance"]["wall_time_s"] >= 0


def test_finish_refuses_a_headline_without_interval(tmp_path):
    job = runtime.start("99_test", {"OUT_DIR": str(tmp_path)}, load_model=False)
    with pytest.raises(ValueError, match="headline pr: no interval"):
        job.finish({}, {"pr": results.headline(3.0), "na": results.headline(None)})
    assert not (tmp_path / "metrics.json").exists()


def test_finish_records_the_sections_that_did_not_run(tmp_path):
    job = runtime.start("99_test", {"OUT_DIR": str(tmp_path / "a")}, load_model=False)
    job.finish({"n": 1}, not_run={"QK operators ": " no attention weights in this model "})
    m = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert m["not_run"] == {"QK operators": "no attention weights in this model"}  # top level, stripped
    job = runtime.start("99_test", {"OUT_DIR": str(tmp_path / "b")}, load_model=False)
    job.finish({"n": 1})
    assert "not_run" not in json.loads((tmp_path / "b" / "metrics.json").read_text())  # nothing skipped: no key
    for bad, msg in (({"s": "two\nlines"}, "one-line"), ({"": "why"}, "section title"), (["s"], "mapping"),
                     ({"s": 3}, "reason of 's'"), ({"s": "x" * 501}, "at most 500")):
        job = runtime.start("99_test", {"OUT_DIR": str(tmp_path / "c")}, load_model=False)
        with pytest.raises(ValueError, match=msg):
            job.finish({}, not_run=bad)
        assert not (tmp_path / "c" / "metrics.json").exists()


def test_headline_frame_prints_supported_precision_and_marks_separation():
    h = {"cv": results.headline(0.4245, interval=(0.39, 0.45), nulls={"gaussian": 0.2, "sphere": 0.41},
                                label="pentachoron CV")}
    df = runtime.headline_frame(h)
    assert df.loc[0, "value [95 % interval]"] == "0.42 [0.39, 0.45]"
    assert df.loc[0, "null models"] == "gaussian: 0.2 *; sphere: 0.41"


def test_headline_rejects_an_unknown_interval_word():
    with pytest.raises(ValueError, match="interval"):
        results.headline(1.0, interval="approx")


def test_file_sha256_is_cached_by_size_and_mtime(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the cache is signed under a key of the test's own
    f = tmp_path / "w.safetensors"
    f.write_bytes(b"abc" * 1000)
    cache = tmp_path / "sha.json"
    d1 = provenance.file_sha256(f, cache)
    assert d1 == hashlib.sha256(b"abc" * 1000).hexdigest()
    assert json.loads(cache.read_text())  # remembered
    f.write_bytes(b"xyz" * 1000)
    os.utime(f, ns=(time.time_ns(), time.time_ns() + 10 ** 9))
    assert provenance.file_sha256(f, cache) == hashlib.sha256(b"xyz" * 1000).hexdigest()
    assert len(json.loads(cache.read_text())["entries"]) == 1  # the stale entry of this path is dropped


def test_model_provenance_of_the_packaged_minilm():
    from geolip_lib import models

    lm = models.load("all-minilm-l6-v2")
    p = provenance.model_provenance(lm)
    assert p["source"] == "package" and p["dtype"] == "float32" and p["weights"]
    name, info = next(iter(p["weights"].items()))
    path = lm.weights_dir / name
    assert info["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and info["bytes"] == path.stat().st_size


def test_git_info_matches_git(tmp_path):
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=provenance.ROOT).stdout.strip()
    assert provenance.git_info()["commit"] == head
    assert provenance.git_info(tmp_path) == {"commit": None, "dirty": None}  # not a checkout


def test_start_drops_transformers_kernel_fallback_hints(tmp_path, caplog):
    """Qwen3.5's forward logs that causal_conv1d is missing; executed notebooks must not show it."""
    import logging

    runtime.start("99_test", {"OUT_DIR": str(tmp_path)}, load_model=False)
    log = logging.getLogger("transformers.integrations.hub_kernels")
    with caplog.at_level(logging.WARNING):
        log.warning("`causal_conv1d_fn` is falling back to its reference PyTorch implementation because x")
        log.warning("another warning")
    assert [r.getMessage() for r in caplog.records] == ["another warning"]


def test_table_cells_are_escaped(tmp_path, monkeypatch):
    """Token strings such as T5's "</s>" are shown, not swallowed as HTML tags."""
    from geolip_lib import runtime

    shown = []
    monkeypatch.setattr(runtime, "_display", shown.append)
    job = runtime.start("00_template", {"OUT_DIR": str(tmp_path), "SEED": 0}, load_model=False)
    job.table({"token": ["</s>", "<extra_id_0>"], "share": [0.5, 0.25]}, formats={"share": "{:.1%}"})
    html = shown[0].to_html()
    assert "&lt;/s&gt;" in html and "&lt;extra_id_0&gt;" in html and "50.0%" in html
