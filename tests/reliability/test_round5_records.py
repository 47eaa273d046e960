"""Round five: every cached record read as data, authenticated, and never a hang.

The sha256 a null record or a remembered answer carries detects damage, not forgery: a null's
``q_sparsity`` 1.0 -> 0.92, or a remembered refusal turned into ``[]``, with the digest recomputed, was
read as the answer (a GGUF header record carried no digest at all). Records are now signed with an HMAC
under a per-user key kept outside the cache (``geolip_lib.cache_auth``). A remembered record that is a
named pipe hung ``--plan`` and every run with no output; a link to ``/dev/zero`` read until memory ran
out: every cached record is now opened without blocking, a regular file of bounded size only. A poisoned
WordNet lexicon in the shared cache (every ``min_depth`` 0, arrays of the wrong length) was copied and
used: it is now checked against the build's own invariants.

Each probe does what the user (or someone who can write the cache) did and asserts the one line the
user sees and that the answer is the computed one. A probe that could hang runs in a subprocess with a
timeout (and a memory limit where it could fill memory), so that a regression fails rather than hangs.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import resource
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from geolip_lib import cache_auth, nullcache
from geolip_lib.lexical import wordnet as W
from geolip_lib.runner import remembered as R
from tests.unit.runner.test_remembered import Counter

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
SIGNATURE = ("its signature does not verify under your cache key (edited, forged, or written by another user or an "
             "older version)")


@pytest.fixture
def keyed(tmp_path, monkeypatch):
    """An empty project cache and an empty config folder (where the key is made on first use)."""
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv(nullcache.ENV, "on")
    monkeypatch.delenv("GEOLIP_REMEMBER", raising=False)
    return tmp_path


# ------------------------------------------------------------------ 1. records forged with a recomputed digest
SEEDS = [{"q_sparsity": 1.0, "cv": 0.25}] * 4


def test_a_null_record_forged_with_its_digest_recomputed_is_recomputed(keyed, capsys):
    """A null's ``q_sparsity`` 1.0 -> 0.92 with its sha256 recomputed was read as the null."""
    assert nullcache.cached("battery_null", {"m": "t5"}, lambda: SEEDS, expect_len=4) == (SEEDS, False)
    path = nullcache.cache_path(nullcache.cache_key("battery_null", {"m": "t5"}))
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["value"] = [{**s, "q_sparsity": 0.92} for s in rec["value"]]
    rec["sha256"] = nullcache.value_digest(rec["value"])
    path.write_text(json.dumps(rec), encoding="utf-8")
    capsys.readouterr()
    assert nullcache.cached("battery_null", {"m": "t5"}, lambda: SEEDS, expect_len=4) == (SEEDS, False)
    assert capsys.readouterr().err.splitlines() == [f"warning: null cache record {path}: {SIGNATURE}; recomputing it"]
    assert nullcache.cached("battery_null", {"m": "t5"}, lambda: 0, expect_len=4) == (SEEDS, True)  # rewritten, signed


def test_a_remembered_refusal_forged_into_no_problem_is_computed_again(keyed, capsys):
    """A remembered refusal turned into ``[]`` (no problem) with its sha256 recomputed let a broken model through."""
    refusal = Counter(["model 'm': a problem"])
    assert R.remembered("model-problems", ["m"], refusal, check=R.lines_ok) == refusal.value and refusal.calls == 1
    (path,) = (keyed / "cache" / "remembered" / "model-problems").iterdir()
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["value"], rec["sha256"] = [], nullcache.value_digest([], allow_nan=True)
    path.write_text(json.dumps(rec), encoding="utf-8")
    capsys.readouterr()
    assert R.remembered("model-problems", ["m"], refusal, check=R.lines_ok) == refusal.value and refusal.calls == 2
    assert capsys.readouterr().err.splitlines() == [
        f"warning: remembered answer {path}: {SIGNATURE}; computing it again"]
    assert R.remembered("model-problems", ["m"], refusal, check=R.lines_ok) == refusal.value and refusal.calls == 2


def test_a_gguf_header_record_forged_is_read_again(keyed, gguf_bytes, monkeypatch, capsys):
    """A GGUF header record edited in the cache (one layer fewer, a tensor's type) was the plan's and the
    preflight's description of the file."""
    from geolip_lib.models import gguf as G

    f = keyed / "model" / "tiny-llama.Q.gguf"
    f.parent.mkdir()
    f.write_bytes(gguf_bytes)
    reads, real = [], G._reader
    monkeypatch.setattr(G, "_reader", lambda p: reads.append(p) or real(p))
    first = G.header(f)
    path = G._header_file(first["sha256"])
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["metadata"]["llama.block_count"] = 1
    name = next(iter(rec["tensors"]))
    rec["tensors"][name]["type"] = "Q8_0"
    path.write_text(json.dumps(rec), encoding="utf-8")
    capsys.readouterr()
    again = G.header(f)
    assert len(reads) == 2 and again["metadata"]["llama.block_count"] == 2
    assert again["tensors"] == first["tensors"]
    assert capsys.readouterr().err.splitlines() == [
        f"warning: GGUF header record {path}: {SIGNATURE}; reading the header again"]
    assert G.header(f) == again and len(reads) == 2  # rewritten, signed


def test_the_key_is_private_made_once_and_a_key_open_to_others_is_not_used(keyed, capsys):
    """The key lives outside the cache, mode 0600; a key others can read (they could sign records) or another
    user's is refused in one line, and every answer is computed afresh, nothing read from the cache or written."""
    nullcache.cached("probe", {"k": 1}, lambda: [1.0])
    secret = keyed / "config" / "geolip" / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
    assert len(secret.read_text().strip()) == 64
    made = {p for p in keyed.rglob("*") if p.is_file()}
    assert made == {secret, nullcache.cache_path(nullcache.cache_key("probe", {"k": 1}))}  # nothing elsewhere
    assert nullcache.cached("probe", {"k": 1}, lambda: 0) == ([1.0], True)
    key = secret.read_text()
    secret.chmod(0o644)
    cache_auth._load.cache_clear()
    capsys.readouterr()
    assert nullcache.cached("probe", {"k": 1}, lambda: [2.0]) == ([2.0], False)
    assert nullcache.cached("probe", {"k": 2}, lambda: [3.0]) == ([3.0], False)
    assert R.remembered("r", ["k"], Counter([])) == []
    assert capsys.readouterr().err.splitlines() == [
        f"warning: the cache key {secret} is open to group or others (mode 0644); anyone who reads it can forge cached "
        f"answers: chmod 600 {secret}; until then cached answers are not trusted and are computed afresh"]
    assert {p for p in keyed.rglob("*") if p.is_file()} == made  # nothing written without a usable key
    if os.getuid() == 0:  # only root can give a file away
        secret.chmod(0o600)
        os.chown(secret, 12345, -1)
        cache_auth._load.cache_clear()
        assert nullcache.cached("probe", {"k": 1}, lambda: [4.0]) == ([4.0], False)
        assert capsys.readouterr().err.splitlines() == [
            f"warning: the cache key {secret} belongs to uid 12345, not to you (uid 0); remove it (a new key is made "
            "on the next run); until then cached answers are not trusted and are computed afresh"]
        os.chown(secret, 0, -1)
    assert secret.read_text() == key  # never replaced behind the user's back
    cache_auth._load.cache_clear()


def test_a_record_another_user_signed_is_recomputed_and_rewritten_under_ones_own_key(keyed, monkeypatch, capsys):
    """What a cache several users share trusts (README, "Caches"): a record verifies only under the key of the
    user who wrote it; another user's is recomputed, in one line, and rewritten under one's own key."""
    nullcache.cached("probe", {"k": 1}, lambda: [1.0])
    path = nullcache.cache_path(nullcache.cache_key("probe", {"k": 1}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(keyed / "other-user"))
    capsys.readouterr()
    assert nullcache.cached("probe", {"k": 1}, lambda: [1.0]) == ([1.0], False)
    assert capsys.readouterr().err.splitlines() == [f"warning: null cache record {path}: {SIGNATURE}; recomputing it"]
    assert nullcache.cached("probe", {"k": 1}, lambda: 0) == ([1.0], True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(keyed / "config"))
    assert nullcache.cached("probe", {"k": 1}, lambda: [1.0]) == ([1.0], False)  # and the first user's key again


# ------------------------------------------------------------------ 2. records that are pipes or devices: no hang
def test_a_remembered_record_that_is_a_named_pipe_does_not_hang_the_plan(sandbox, tmp_path):
    """``--plan`` (and every run) hung with no output on a remembered record that is a named pipe (the fitted
    costs' record: ``runner/cost_model.py``); Ctrl-C then blamed "building the report"."""
    env = {**os.environ, "GEOLIP_CACHE": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": str(ROOT)}
    env.pop("GEOLIP_REMEMBER", None)
    cmd = [sys.executable, str(ROOT / "run_all.py"), "--profile", str(sandbox.profile), "--out", str(sandbox.out),
           "--plan"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr[-2000:]
    records = sorted((tmp_path / "cache" / "remembered").rglob("*.json"))
    assert records, "the plan remembered nothing"
    for rec in records:
        rec.unlink()
        os.mkfifo(rec)
    try:
        again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("--plan waited on a remembered record that is a named pipe (no output for 60 s)")
    assert again.returncode == 0 and again.stdout.rstrip().endswith("fits."), again.stderr[-2000:]
    for rec in records:
        assert (f"warning: remembered answer {rec}: not a regular file (a pipe, a device or a folder); not read; "
                "computing it again") in again.stderr.splitlines()
        assert stat.S_ISREG(rec.lstat().st_mode)  # replaced by the answer computed again


PROBE = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    from geolip_lib import nullcache, provenance
    from geolip_lib.runner import remembered as R

    which, how = sys.argv[1:3]
    cache = Path(os.environ["GEOLIP_CACHE"])
    calls = []

    def plant(p):
        p.unlink()
        os.mkfifo(p) if how == "fifo" else os.symlink("/dev/zero", p)

    def compute():
        calls.append(1)
        return ["model 'm': a problem"]

    if which == "remembered":
        ask = lambda: R.remembered("r", ["k"], compute, check=R.lines_ok)
        ask()
        (path,) = (cache / "remembered" / "r").iterdir()
    elif which == "nulls":
        ask = lambda: nullcache.cached("probe", {"k": 1}, compute)[0]
        ask()
        path = nullcache.cache_path(nullcache.cache_key("probe", {"k": 1}))
    else:  # the sha256 cache
        f = cache.parent / "weights.bin"
        f.write_bytes(b"weights")
        path = cache / "sha256.json"
        ask = lambda: (calls.append(1), provenance.file_sha256(f, cache=path))[1]
        ask()
    plant(path)
    print(json.dumps({"path": str(path), "answers": [ask(), ask()], "calls": len(calls),
                      "regular": path.is_file() and not path.is_symlink()}))
''')


@pytest.mark.parametrize("how", ["fifo", "link to /dev/zero"])
@pytest.mark.parametrize("which", ["remembered", "nulls", "sha256"])
def test_a_cached_record_that_is_a_pipe_or_a_link_to_dev_zero_is_a_miss(tmp_path, which, how):
    """A remembered answer that is a pipe hung; one that is a link to ``/dev/zero`` read until memory ran out
    (here: a 1 GB address-space limit in a subprocess, so that a regression fails, not the machine). A null
    record (which skipped both, silently) and the sha256 cache (read bounded since its key changed) are read the
    same way."""
    env = {**os.environ, "GEOLIP_CACHE": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": str(ROOT), nullcache.ENV: "on"}
    env.pop("GEOLIP_REMEMBER", None)
    room = (8 if which == "nulls" else 1) << 30  # a null's value goes through torch's isinstance (it maps ~3.4 GB)
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (room, room))  # noqa: E731
    try:
        r = subprocess.run([sys.executable, "-c", PROBE, which, how.split()[0]], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the {which} cache waited on a record that is a {how} (no answer for 60 s)")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    path = out["path"]
    if which == "sha256":
        assert out["answers"] == [hashlib.sha256(b"weights").hexdigest()] * 2 and out["regular"]
        return
    assert out["answers"] == [["model 'm': a problem"]] * 2 and out["calls"] == 2 and out["regular"]
    what, then = (("remembered answer", "computing it again") if which == "remembered" else
                  ("null cache record", "recomputing it"))
    why = ("not a regular file (a pipe, a device or a folder); not read" if how == "fifo" else
           "cannot be read (Too many levels of symbolic links)")
    assert r.stderr.splitlines() == [f"warning: {what} {path}: {why}; {then}"]


GGUF_PROBE = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    from geolip_lib.models import gguf as G

    f, how = Path(sys.argv[1]), sys.argv[2]
    reads, real = [], G._reader
    G._reader = lambda p: reads.append(1) or real(p)
    first = G.header(f)
    path = G._header_file(first["sha256"])
    path.unlink()
    os.mkfifo(path) if how == "fifo" else os.symlink("/dev/zero", path)
    again = G.header(f)
    print(json.dumps({"path": str(path), "same": again == first, "reads": len(reads)}))
''')


@pytest.mark.parametrize("how", ["fifo", "link to /dev/zero"])
def test_a_gguf_header_record_that_is_a_pipe_or_a_device_is_read_again(tmp_path, gguf_bytes, how):
    """A GGUF header record that is a pipe hung the plan and the preflight of a GGUF model."""
    f = tmp_path / "model" / "tiny-llama.Q.gguf"
    f.parent.mkdir()
    f.write_bytes(gguf_bytes)
    env = {**os.environ, "GEOLIP_CACHE": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": str(ROOT)}
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # noqa: E731 - torch maps ~3.4 GB
    try:
        r = subprocess.run([sys.executable, "-c", GGUF_PROBE, str(f), how.split()[0]], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the GGUF header cache waited on a record that is a {how} (no answer for 120 s)")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert out["same"] and out["reads"] == 2
    why = ("not a regular file (a pipe, a device or a folder); not read" if how == "fifo" else
           "cannot be read (Too many levels of symbolic links)")
    assert f"warning: GGUF header record {out['path']}: {why}; reading the header again" in r.stderr.splitlines()


# ------------------------------------------------------------------ 3. a poisoned shared WordNet lexicon
@pytest.fixture(scope="module")
def lexicon():
    """This checkout's lexicon (make setup built it; built here otherwise, ~50 s)."""
    return W.load_lexicon()


def _clone(monkeypatch, tmp_path):
    """A fresh checkout's cache and a shared cache holding the file of the right name; the build is not run
    (a rebuild raises ``RuntimeError('rebuilt')``)."""
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "clone-cache"))
    monkeypatch.setenv("GEOLIP_SHARED_CACHE", str(tmp_path / "home-cache"))
    calls = []

    def fake_build(progress=True):
        calls.append(1)
        raise RuntimeError("rebuilt")

    monkeypatch.setattr(W, "build_lexicon", fake_build)
    shared = tmp_path / "home-cache" / "wordnet" / f"lexicon-{W._cache_key()}.npz"
    shared.parent.mkdir(parents=True)
    return shared, calls


def _more(a: np.ndarray, at: int) -> np.ndarray:
    b = a.copy()
    b[at] += 1
    return b


def _step(lx, dist: int, by: int) -> np.ndarray:
    """``anc_dist`` with one ancestor at ``dist`` moved by ``by``, in a table whose largest distance stays."""
    rows = np.repeat(np.arange(len(lx)), np.diff(lx.anc_indptr))
    out = lx.anc_dist.copy()
    out[int(np.flatnonzero((lx.anc_dist == dist) & (lx.ecc[rows] >= 4))[100])] += by
    return out


N = 117659  # synsets of WordNet 3.0
POISONS = {
    "every min_depth 0": (lambda lx: dataclasses.replace(lx, min_depth=np.zeros_like(lx.min_depth)),
                          "min_depth is not NLTK's: 0 without hypernyms, else one more than the least of its "
                          "hypernyms'"),
    "pos one short": (lambda lx: dataclasses.replace(lx, pos=lx.pos[:-1]),
                      f"pos is uint8 of shape ({N - 1},), where the build writes uint8 of length {N}"),
    "min_depth as int64": (lambda lx: dataclasses.replace(lx, min_depth=lx.min_depth.astype(np.int64)),
                           f"min_depth is int64 of shape ({N},), where the build writes int16 of length {N}"),
    "a hypernym out of range": (lambda lx: dataclasses.replace(lx, hyper_ids=np.where(
        np.arange(len(lx.hyper_ids)) == 0, N, lx.hyper_ids).astype(np.int32)), f"hyper_ids: an id outside [0, {N})"),
    "max_depth one more": (lambda lx: dataclasses.replace(lx, max_depth=_more(lx.max_depth, 5000)),
                           "max_depth is not NLTK's: 0 without hypernyms, else one more than the greatest of its "
                           "hypernyms'"),
    "a hypernym farther than 1": (lambda lx: dataclasses.replace(lx, anc_dist=_step(lx, 1, +1)),
                                  "an ancestor table missing an ancestor of a hypernym, or farther from it than the "
                                  "hypernym plus one"),
    "an ancestor nearer": (lambda lx: dataclasses.replace(lx, anc_dist=_step(lx, 2, -1)),
                           "an ancestor table with an ancestor its hypernyms do not reach at that distance"),
    "names in another order": (lambda lx: dataclasses.replace(lx, name_rank=lx.name_rank[::-1].copy()),
                               "name_rank is not the names' string order"),
    "a lemma offset past its end": (lambda lx: dataclasses.replace(lx, lemma_indptr=_more(lx.lemma_indptr, N)),
                                    "lemma_indptr are not offsets into the 206978 entries of lemma_names"),
}


@pytest.mark.parametrize("poison", list(POISONS))
def test_a_poisoned_shared_lexicon_is_rebuilt_not_copied(lexicon, tmp_path, monkeypatch, capsys, poison):
    """A lexicon npz of the right name in the shared cache, valid as an npz but not what the build writes, was
    copied into every fresh checkout and used (WordNet depths of 0 for every synset)."""
    change, why = POISONS[poison]
    shared, calls = _clone(monkeypatch, tmp_path)
    shared.write_bytes(change(lexicon).to_npz_bytes())
    capsys.readouterr()
    with pytest.raises(RuntimeError, match="rebuilt"):
        W.load_lexicon.__wrapped__()
    assert calls == [1]
    assert capsys.readouterr().err.splitlines() == [f"warning: WordNet lexicon {shared}: {why}; not used"]
    assert not (tmp_path / "clone-cache" / "wordnet" / shared.name).exists()  # never copied


@pytest.mark.parametrize("how", ["compressed", "pickled"])
def test_a_compressed_or_pickled_lexicon_is_not_loaded(lexicon, tmp_path, monkeypatch, capsys, how):
    """The build stores its arrays uncompressed, without pickles: a deflated member (a bomb could hide in one)
    or an object array is not read."""
    shared, calls = _clone(monkeypatch, tmp_path)
    arrays = dict(np.load(io.BytesIO(lexicon.to_npz_bytes())))
    if how == "compressed":
        np.savez_compressed(shared.with_suffix(""), **arrays)
        why = "ValueError: a compressed member, where the build stores its arrays uncompressed"
    else:
        np.savez(shared.with_suffix(""), **{**arrays, "lexnames": np.array(lexicon.lexnames, dtype=object)})
        why = "ValueError: Object arrays cannot be loaded when allow_pickle=False"
    capsys.readouterr()
    with pytest.raises(RuntimeError, match="rebuilt"):
        W.load_lexicon.__wrapped__()
    assert calls == [1] and capsys.readouterr().err.splitlines() == [
        f"warning: WordNet lexicon {shared}: not the arrays the build writes ({why}); not used"]


@pytest.mark.parametrize("how", ["fifo", "link to /dev/zero"])
def test_a_lexicon_that_is_a_pipe_or_a_device_is_a_miss(tmp_path, monkeypatch, capsys, how):
    shared, calls = _clone(monkeypatch, tmp_path)
    os.mkfifo(shared) if how == "fifo" else os.symlink("/dev/zero", shared)
    capsys.readouterr()
    with pytest.raises(RuntimeError, match="rebuilt"):
        W.load_lexicon.__wrapped__()
    assert capsys.readouterr().err.splitlines() == [
        f"warning: WordNet lexicon {shared}: not a regular file (a pipe, a device or a folder); not read; not used"]


def test_the_lexicon_the_build_writes_passes_its_own_checks_and_is_copied(lexicon, tmp_path, monkeypatch, capsys):
    assert W.lexicon_problem(lexicon) is None
    shared, calls = _clone(monkeypatch, tmp_path)
    shared.write_bytes(lexicon.to_npz_bytes())
    capsys.readouterr()
    got = W.load_lexicon.__wrapped__()
    assert calls == [] and len(got) == len(lexicon) and capsys.readouterr().err == ""
    assert (tmp_path / "clone-cache" / "wordnet" / shared.name).read_bytes() == shared.read_bytes()
