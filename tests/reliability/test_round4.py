"""Round four: figures that could run script or fill memory, caches that lie, a claims
bound past a float's range, a cache folder that cannot be written.

Probes of the readers call the reader (the report's figure check, ``report.checks``, the sha256
and null caches, the claims loader); the cache-folder probe runs ``run_all.main`` in-process and
asserts the one line, exit 2, the output root not created and the sentinel beside it intact.
"""
from __future__ import annotations

import hashlib
import json
import os

import matplotlib
import matplotlib.pyplot as plt
import pytest

from geolip_lib import nullcache, paths, provenance
from geolip_lib.report import checks, records
from geolip_lib.report.records import read_record

from .test_claims_files import _one_line
from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two

matplotlib.use("Agg")

PER_MODEL = "  rng:\n    per_model: true\n    models: [{m}]\n"


def _png(path) -> None:
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    fig.savefig(path)
    plt.close(fig)


def _job_with_figures(job, figures: list[dict]):
    job.mkdir(parents=True, exist_ok=True)
    (job / "metrics.json").write_text(json.dumps({"headline": {}, "figures": figures}))
    return job / "metrics.json"


# ------------------------------------------------------------------ 1. figures that could run script
SVG = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(document.domain)</script></svg>"


def test_only_png_and_jpeg_figures_are_taken_and_their_bytes_must_say_so(tmp_path):
    """An SVG key figure was embedded as an inert ``<img>`` but linked "for full size": opened as
    a document, its script ran. A ``.png`` holding SVG or HTML is no image either."""
    job = tmp_path / "r" / "nb" / "a"
    job.mkdir(parents=True)
    (job / "evil.svg").write_bytes(SVG)
    (job / "fake.png").write_bytes(SVG)
    (job / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 64)
    _png(job / "good.png")
    where = _job_with_figures(job, [{"file": n, "title": n} for n in ("evil.svg", "fake.png", "good.png",
                                                                       "photo.jpg")])
    rec = read_record("nb", job)
    assert rec.problems == [
        f"{where}: field 'figures[0].file' names 'evil.svg', not an image (.png, .jpg, .jpeg); left out",
        f"{where}: field 'figures[1].file' names 'fake.png', whose bytes are not a PNG image (they begin "
        f"{SVG[:8]!r}); left out (rerun the job)"]
    assert [f["file"] for f in rec.figures] == ["good.png", "photo.jpg"]


def test_the_reader_checks_look_at_the_files_the_pages_link(tmp_path):
    """``report.checks.problems`` checked pages only: a linked SVG (or a page it did not write,
    or an image whose bytes are markup) passed."""
    root = tmp_path / "r"
    job = root / "nb" / "a"
    job.mkdir(parents=True)
    (job / "evil.svg").write_bytes(SVG)
    (job / "fake.png").write_bytes(SVG)
    (job / ".hidden.html").write_text("<script>alert(1)</script>")
    _png(job / "good.png")
    (root / "index.html").write_text(
        "<html><body><a href='nb/a/evil.svg'>full size</a><img src='nb/a/fake.png'>"
        "<a href='nb/a/.hidden.html'>x</a><a href='nb/a/good.png'><img src='nb/a/good.png'></a></body></html>")
    assert checks.problems(root) == [
        "index.html: <a href='nb/a/evil.svg'>: nb/a/evil.svg is a document that can run script when opened "
        "(.svg); the report links only its own pages and PNG or JPEG images",
        "index.html: <img src='nb/a/fake.png'>: nb/a/fake.png is not a PNG image (its bytes begin "
        f"{SVG[:8]!r}); the report links only its own pages and PNG or JPEG images",
        "index.html: <a href='nb/a/.hidden.html'>: nb/a/.hidden.html is a document that can run script when opened "
        "(a page the report did not write); the report links only its own pages and PNG or JPEG images"]


# ------------------------------------------------------------------ 2. a figure of a gigabyte
def test_a_figure_over_the_size_limit_is_left_out_with_one_line(tmp_path):
    """A 1 GB key figure drove the PDF step to 15 GB of memory (base64 in one page)."""
    assert records.MAX_FIGURE_BYTES == 20 * 2 ** 20
    job = tmp_path / "r" / "nb" / "a"
    job.mkdir(parents=True)
    with open(job / "huge.png", "wb") as fh:  # sparse: a PNG's first bytes, then 21 MB of nothing
        fh.write(b"\x89PNG\r\n\x1a\n")
        fh.truncate(21 * 2 ** 20)
    _png(job / "small.png")
    where = _job_with_figures(job, [{"file": "huge.png", "title": "huge", "key": True},
                                    {"file": "small.png", "title": "small"}])
    rec = read_record("nb", job)
    assert rec.problems == [f"{where}: field 'figures[0].file' names 'huge.png', {21 * 2 ** 20} bytes, over the "
                            f"limit of {20 * 2 ** 20} for a figure; left out (save the figure smaller)"]
    assert [f["file"] for f in rec.figures] == ["small.png"]


# ------------------------------------------------------------------ 3. a malformed sha256 cache
@pytest.mark.parametrize("text", ["[]", "5", "NaN", '{"KEY": 12}', '{"KEY": "deadbeef"}', '{"KEY": NaN}',
                                  '{"KEY": ["%s"]}' % ("0" * 64)])
def test_a_malformed_sha256_cache_is_ignored_and_rebuilt(tmp_path, monkeypatch, text):
    """``.cache/sha256.json`` as ``[]`` failed every job with an AttributeError; a value of the
    wrong shape under the file's own key was returned as its digest. (Round five: the cache is a signed
    record, ``{"entries": ...}``; a file written by hand is not read at all.)"""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # a cache key of the probe's own
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    st = f.stat()
    key = provenance.sha_cache_key(f.resolve(), st)
    cache = tmp_path / "sha256.json"
    cache.write_text(text.replace("KEY", key))
    want = hashlib.sha256(b"weights").hexdigest()
    assert provenance.file_sha256(f, cache=cache) == want
    assert json.loads(cache.read_text())["entries"] == {key: want}  # rebuilt: what it held is gone
    assert provenance.file_sha256(f, cache=cache) == want


# ------------------------------------------------------------------ 4. the null cache: digest, shape, provenance
@pytest.fixture
def ncache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    monkeypatch.setenv(nullcache.ENV, "on")
    return tmp_path


def _record(what, key):
    path = nullcache.cache_path(nullcache.cache_key(what, key))
    return path, json.loads(path.read_text())


def test_a_poisoned_null_record_is_recomputed_with_one_warning(ncache, capsys):
    """Numbers ×0.9 with the key intact were used (a null 8.866 read as 8.162)."""
    value, hit = nullcache.cached("probe", {"m": "t5"}, lambda: [8.866, 9.0])
    assert not hit
    path, rec = _record("probe", {"m": "t5"})
    assert rec["sha256"] == nullcache.value_digest([8.866, 9.0])
    rec["value"] = [v * 0.9 for v in rec["value"]]
    path.write_text(json.dumps(rec))
    capsys.readouterr()
    assert nullcache.cached("probe", {"m": "t5"}, lambda: [8.866, 9.0]) == ([8.866, 9.0], False)
    assert capsys.readouterr().err.splitlines() == [  # round five: caught by the record's signature first
        f"warning: null cache record {path}: its signature does not verify under your cache key (edited, forged, or "
        "written by another user or an older version); recomputing it"]
    assert nullcache.cached("probe", {"m": "t5"}, lambda: 0) == ([8.866, 9.0], True)  # rewritten whole


def test_a_null_record_of_the_wrong_length_is_recomputed(ncache, capsys):
    """``value: []`` gave a 1-seed null where the drivers said 5 (the digest rewritten to match)."""
    nullcache.cached("probe", {"m": "t5"}, lambda: [{"s": 1}] * 4, expect_len=4)
    path, rec = _record("probe", {"m": "t5"})
    rec["value"], rec["sha256"] = [], nullcache.value_digest([])
    path.write_text(json.dumps(rec))
    capsys.readouterr()
    note = {}
    assert nullcache.cached("probe", {"m": "t5"}, lambda: [{"s": 2}] * 4, expect_len=4, note=note) == \
        ([{"s": 2}] * 4, False)
    assert note == {"from_cache": False}
    assert capsys.readouterr().err.splitlines() == [  # round five: the rewritten digest no longer makes it look sound
        f"warning: null cache record {path}: its signature does not verify under your cache key (edited, forged, or "
        "written by another user or an older version); recomputing it"]
    nullcache.cached("probe", {"m": "t5"}, lambda: 0, expect_len=4, note=note)
    assert note == {"from_cache": True}  # what a caller puts in its drivers


def test_a_null_key_holds_the_library_hash_and_the_callers_check_the_length():
    full = nullcache.cache_key("probe", {"m": "t5"})
    assert full["library"] == provenance.library_hash()
    from geolip_lib.operators import nulls as op_nulls
    from geolip_lib.weights import nulls as w_nulls
    import inspect
    assert "expect_len=n_seeds - 1, note=drivers" in inspect.getsource(w_nulls.battery_null)
    assert "expect_len=n_seeds - 1" in inspect.getsource(op_nulls.operator_null)


# ------------------------------------------------------------------ 5. a claims bound past a float's range
@pytest.mark.parametrize("rule,key", [
    ({"at_least": "1e400"}, "claims.0.forms.0.rule"),         # read as infinity: "held" for no value
    ({"band": ["0.1", "1e400"]}, "claims.0.forms.0.rule"),
    ({"equals": "-1e400"}, "claims.0.forms.0.rule"),
    ({"at_most": 10 ** 400}, "claims.0.forms.0.rule"),        # a YAML integer: OverflowError before
])
def test_a_claims_bound_past_a_floats_range_is_one_line(tmp_path, rule, key):
    msg = _one_line(tmp_path, lambda d: d["claims"][0]["forms"][0].update(rule=rule))
    assert f"key '{key}'" in msg and "beyond the range of a float" in msg, msg


# ------------------------------------------------------------------ 6. a cache folder that cannot be written
def test_a_cache_that_is_a_file_is_one_line_before_anything(box, capsys, monkeypatch):
    cache = box.tmp / "cachefile"
    cache.write_text("x")
    box.write(PER_MODEL.format(m="tiny-bert"))
    fix = "set GEOLIP_CACHE to a folder you can write, or unset it for <checkout>/.cache"
    for value, why in ((cache, f"{cache} is a file"), (cache / "sub", f"{cache} is a file"),
                       ("", "it is empty")):
        monkeypatch.setenv("GEOLIP_CACHE", str(value))
        assert refused(box, capsys) == [f"error: GEOLIP_CACHE={value} is not a writable folder: {why}; {fix}"]
    assert cache.read_text() == "x"


def test_a_read_only_cache_is_one_line(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setenv("GEOLIP_CACHE", str(ro / "sub"))
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(ro) else real(p, mode, **kw))
    assert paths.cache_problem() == (f"GEOLIP_CACHE={ro / 'sub'} is not a writable folder: {ro} is read-only; set "
                                     "GEOLIP_CACHE to a folder you can write, or unset it for <checkout>/.cache")
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "fine" / "new"))
    assert paths.cache_problem() is None
