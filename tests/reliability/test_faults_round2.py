"""Round two of the runner's lifecycle probes: publishing never leaves the output root
nor follows a link, a root or lock removed mid-run stops the run, SIGTERM is Ctrl-C, a lock
that is a directory is one line, a dead kernel says how it died, and int8 / misshapen weights
are refused before any kernel. Each probe asserts the exact line, the exit code, and that a
sentinel directory beside the output root survives.

Most probes call the publishing functions or ``run_all.main`` without a kernel; five run a
throw-away notebook (cold kernels where the warm zygote is not what is probed)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertModel

import run_all
from geolip_lib import params, provenance, results
from geolip_lib.models import check
from geolip_lib.models.loading import ModelLoadError
from geolip_lib.models.preflight import check_stored_model
from geolip_lib.runner import lock, resources
from geolip_lib.runner.jobs import Job

from .conftest import ROOT


@pytest.fixture
def sentinel(tmp_path):
    """A directory beside the output root, with a result-like tree: it must survive every probe."""
    d = tmp_path / "beside"
    (d / "a").mkdir(parents=True)
    (d / "keep.txt").write_text("keep")
    (d / "a" / "metrics.json").write_text("{}")
    return d


def intact(d: Path) -> bool:
    return (d / "keep.txt").read_text() == "keep" and (d / "a" / "metrics.json").read_text() == "{}"


def _result(path: Path, value: float) -> Path:
    path.mkdir(parents=True)
    results.record(path, {"value": value})
    return path


# ------------------------------------------------------------------------------ publish / recover, called directly
def test_publish_refuses_targets_outside_the_root_or_beside_their_partial(tmp_path, sentinel):
    root = tmp_path / "out"
    partial = _result(root / "nb" / ".a.partial", 2.0)
    cases = {
        root / "nb" / ".." / ".." / "beside": f"{root}/nb/../../beside: the component '..' would leave the output "
                                               f"root {root}; nothing is written outside it",
        sentinel: f"{sentinel} is not inside the output root {root}; nothing is written outside it",
        root / "nb": f"{partial} and {root / 'nb'} are not in one directory; a result is only renamed in place",
    }
    for final, line in cases.items():
        with pytest.raises(lock.UnsafePathError) as exc:
            run_all.publish(partial, final, root)
        assert str(exc.value) == line
    assert intact(sentinel) and results.read(partial)["metrics"]["value"] == 2.0


def test_publish_never_goes_through_a_linked_notebook_folder(tmp_path, sentinel):
    root = tmp_path / "out"
    root.mkdir()
    (root / "nb").symlink_to(sentinel)
    with pytest.raises(lock.UnsafePathError) as exc:
        run_all.publish(root / "nb" / ".a.partial", root / "nb" / "a", root)
    assert str(exc.value) == (f"{root / 'nb'} is a symbolic link (to {sentinel}); results are never written through "
                              f"links: remove it from the output root {root}")
    assert intact(sentinel)


def test_publish_moves_links_in_its_way_as_links(tmp_path, sentinel):
    """``.a.old`` and the result itself as links to the sentinel: unlinked or replaced, never followed."""
    root = tmp_path / "out"
    partial = _result(root / "nb" / ".a.partial", 2.0)
    (root / "nb" / ".a.old").symlink_to(sentinel)
    (root / "nb" / "a").symlink_to(sentinel / "a")
    run_all.publish(partial, root / "nb" / "a", root)
    assert results.read(root / "nb" / "a")["metrics"]["value"] == 2.0 and not (root / "nb" / "a").is_symlink()
    assert sorted(p.name for p in (root / "nb").iterdir()) == ["a"]
    assert intact(sentinel)


def test_recover_never_follows_links(tmp_path, sentinel, capsys):
    root = tmp_path / "out"
    (root / "nb").mkdir(parents=True)
    (root / "nb" / ".a.old").symlink_to(sentinel)  # would be "restored" as a link to outside
    (sentinel / ".b.old").mkdir()
    (root / "linked").symlink_to(sentinel)  # a notebook folder that is a link: not searched
    assert run_all.recover(root) == []
    assert capsys.readouterr().err.splitlines() == [
        f"removed {root}/nb/.a.old: a symbolic link where a moved-aside result belongs (not followed)"]
    assert not os.path.lexists(root / "nb" / ".a.old") and not (root / "nb" / "a").exists()
    assert (sentinel / ".b.old").is_dir() and not (sentinel / "b").exists() and intact(sentinel)


@pytest.mark.parametrize("notebook,job_id,what,name,where", [
    ("nb", "../../beside", "job id", "../../beside", "out/nb"),
    ("nb", ".", "job id", ".", "out/nb"),
    ("../beside", "a", "notebook", "../beside", "out"),
    ("nb", "/abs/path", "job id", "/abs/path", "out/nb"),
])
def test_execute_job_with_a_traversal_id_touches_nothing(tmp_path, sentinel, notebook, job_id, what, name, where):
    """Defence in depth: preflight refuses these ids; execute_job itself, called directly, does too."""
    job = Job("p", notebook, job_id, None)
    res = run_all.execute_job(job, tmp_path / "out")
    assert not res.ok and res.error == (f"{job.label}: {what} {name!r} is not a single folder name inside "
                                        f"{tmp_path / where}; nothing is written for it")
    assert intact(sentinel) and sorted(p.name for p in tmp_path.iterdir()) == ["beside"]


# ------------------------------------------------------------------------------ the output root at preflight
@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_notebook_folder_that_is_a_link_or_a_file_is_refused_before_any_kernel(sandbox, sentinel, capsys, kind):
    out = sandbox.out
    out.mkdir()
    if kind == "link":
        (out / "ok").symlink_to(sentinel)
        line = (f"error: {out}/ok is a symbolic link (to {sentinel}); results are never written through links: "
                f"remove it from the output root {out}")
    else:
        (out / "ok").write_text("x")
        line = f"error: {out}/ok is a file where a directory of results belongs; move it out of the output root {out}"
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and lines == [line]
    assert intact(sentinel) and not (out / run_all.LOCK).exists()


@pytest.mark.parametrize("kind", ["directory", "link"])
def test_a_lock_that_is_a_directory_or_a_link_is_one_line(sandbox, sentinel, capsys, kind):
    out = sandbox.out
    out.mkdir()
    if kind == "directory":
        (out / run_all.LOCK).mkdir()
        why = "is a directory, not a lock file"
    else:
        (out / run_all.LOCK).symlink_to(sentinel / "keep.txt")
        why = f"is a symbolic link (to {sentinel / 'keep.txt'}), not a lock file"
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and lines == [f"error: {out / run_all.LOCK} {why}; remove it if no run_all is using {out}"]
    assert os.path.lexists(out / run_all.LOCK) and intact(sentinel) and not (out / "ok").exists()


# ------------------------------------------------------------------------------ runs with a kernel
@pytest.mark.slow
def test_linked_failed_partial_and_old_entries_do_not_abort_the_run(sandbox, sentinel, capsys):
    """``a.failed``, ``.a.partial`` and ``.a.old`` as links to the sentinel: the run goes on, unlinks them."""
    d = sandbox.out / "ok"
    d.mkdir(parents=True)
    for name in ("a.failed", ".a.partial", ".a.old"):
        (d / name).symlink_to(sentinel)
    code, lines = sandbox.main("--cold", "--jobs", "1", capsys=capsys)
    assert code == 0, lines
    assert lines[0] == f"removed {d}/.a.old: a symbolic link where a moved-aside result belongs (not followed)"
    assert lines[1] == "[1/1] start ok / a  (limit 1800 s)", lines  # a start line with --jobs 1 too
    assert re.fullmatch(r"\[1/1\] ok    ok / a +[\d.]+s", lines[2]), lines
    assert results.read(d / "a")["metrics"]["value"] == 2.0
    assert sorted(p.name for p in d.iterdir()) == ["a"] and intact(sentinel)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["root", "lock"])
def test_the_root_or_its_lock_removed_mid_run_stops_the_run(sandbox, sentinel, capsys, what):
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {SLEEP: 60.0}}\n")
    out = sandbox.out
    started = threading.Event()

    def remove():
        deadline = time.time() + 240
        while not (out / "ok" / ".a.partial" / "running").exists() and time.time() < deadline:
            time.sleep(0.2)
        started.set()
        if what == "root":
            subprocess.run(["rm", "-rf", str(out)], check=True)
        else:
            (out / run_all.LOCK).unlink()

    t = threading.Thread(target=remove, daemon=True)
    t.start()
    t0 = time.time()
    code, lines = sandbox.main("--cold", "--jobs", "1", capsys=capsys)
    t.join(timeout=5)
    assert started.is_set(), "the job never started"
    cause = (f"the output root {out} was deleted or moved away while the run was going" if what == "root" else
             f"the lock {out / run_all.LOCK} was deleted while the run was going (another run could now write to "
             "the same root)")
    assert code == 2 and lines[-1] == (f"error: {cause}: stopped 1 running job(s) and published nothing more "
                                       "(0 finished before); rerun to start again"), lines
    assert time.time() - t0 < 120  # not the job's 60 s sleep: it was stopped
    assert not run_all.INTERRUPTED.is_set()  # a later run in this process starts clean
    if what == "root":
        assert not out.exists()  # nothing published into, nor left in, a recreated root
    else:
        assert out.is_dir() and not (out / "ok" / "a").exists() and not (out / "ok" / ".a.partial").exists()
    assert intact(sentinel)


@pytest.mark.slow
def test_sigterm_is_handled_like_ctrl_c(timed_out_env, sentinel):
    sandbox, env, runtime, tmp = timed_out_env
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {SLEEP: 60.0}}\n")
    cmd = [sys.executable, "run_all.py", "--profile", str(sandbox.profile), "--out", str(sandbox.out), "--no-pdf",
           "--warm", "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.time() + 240
    while not (sandbox.out / "ok" / ".a.partial" / "running").exists():
        assert time.time() < deadline and proc.poll() is None, "the job never started"
        time.sleep(0.5)
    family = psutil.Process(proc.pid).children(recursive=True)
    assert list(tmp.glob("geolip-warm-*")) and list(tmp.glob("tmp*.json"))  # zygote socket, connection file
    os.kill(proc.pid, signal.SIGTERM)  # what `kill`, systemd and a batch scheduler send
    _, err = proc.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 143, err
    assert lines[-1] == ("terminated (SIGTERM) during ok / a (its partial result was removed): 0 job(s) finished "
                         "and kept; rerun with --resume to go on"), err
    assert "Traceback" not in err
    _, alive = psutil.wait_procs(family, timeout=30)
    assert alive == []  # every kernel, launcher and the zygote stopped
    assert not (sandbox.out / "ok" / ".a.partial").exists() and not (sandbox.out / "ok" / "a").exists()
    assert not (sandbox.out / run_all.LOCK).exists()
    assert sorted(tmp.iterdir()) == [] and sorted(runtime.iterdir()) == []
    assert intact(sentinel)


@pytest.fixture
def timed_out_env(sandbox, tmp_path):
    """The environment of a run in a subprocess whose temporary files (the zygote's socket folder,
    jupyter_client's ``tmp*.json`` connection files) and Jupyter runtime files land in folders of
    this test: what SIGTERM must clean up is then seen apart from other runs'."""
    runtime, tmp = tmp_path / "runtime", tmp_path / "tmp"
    runtime.mkdir()
    tmp.mkdir()
    env = dict(os.environ, GEOLIP_NOTEBOOKS=str(sandbox.nbdir), JUPYTER_RUNTIME_DIR=str(runtime), TMPDIR=str(tmp))
    return sandbox, env, runtime, tmp


def test_a_killed_runners_zygote_folder_is_removed_by_the_next_run(tmp_path, monkeypatch):
    """``kill -9`` of a runner cannot clean up: its ``geolip-warm-<pid>-*`` folder goes with the next run."""
    import tempfile

    from geolip_lib.runner import warm

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (tmp_path / f"{warm.WARM_PREFIX}{dead}-abc").mkdir()
    (tmp_path / f"{warm.WARM_PREFIX}{os.getpid()}-def").mkdir()  # a live run's: kept
    (tmp_path / "geolip-warm-unrelated").mkdir()  # not named after a pid: kept
    resources.remove_orphan_dirs(warm.WARM_PREFIX)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{warm.WARM_PREFIX}{os.getpid()}-def",
                                                          "geolip-warm-unrelated"]


def test_a_cold_kernels_peak_memory_is_sampled():
    """What a cold kernel's death line quotes: its VmHWM, read while it lived."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; b = b'1' * (200 << 20); time.sleep(1.5)"])
    peak = resources.PeakMemory(proc.pid, every_s=0.1).start()
    proc.wait(timeout=60)
    peak.stop()
    assert peak.kb is not None and peak.kb >= 200 << 10


DYING_NB = '''
import os, signal
from geolip_lib import results
out = results.job_dir(OUT_DIR, "ok", None)
ballast = b"\\1" * (MB << 20)  # resident memory, so that the peak is seen
os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does
'''


@pytest.mark.slow
def test_a_dead_kernel_says_how_it_died(sandbox, sentinel, capsys):
    from .conftest import write_notebook

    write_notebook(sandbox.nbdir / "ok.ipynb", DYING_NB, "OUT_DIR = None\nMB = 1")
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {MB: 300}}\n")
    code, lines = sandbox.main("--warm", "--jobs", "1", capsys=capsys)
    assert code == 1, lines
    line = next(ln for ln in lines if ln.startswith("[1/1] FAIL"))
    m = re.fullmatch(r"\[1/1\] FAIL  ok / a +[\d.]+s  DeadKernelError: Kernel died: killed by SIGKILL \(signal 9\), "
                     r"likely out of memory \(or killed by hand\): peak RSS ([\d.]+) (MB|GB) of [\d.]+ GB on this "
                     r"machine", line)
    assert m, line
    assert float(m.group(1)) * (1024 if m.group(2) == "GB" else 1) >= 300  # the ballast was resident
    assert "Traceback" not in "\n".join(lines)
    assert (sandbox.out / "ok" / "a.failed" / "error.txt").read_text().startswith(line.split("s  ", 1)[1])
    assert intact(sentinel)


def test_kernel_death_words(tmp_path):
    """The words for a cold kernel (only its return code), an exit code, and the warm launcher's line."""
    log = tmp_path / "kernel.log"
    assert resources.kernel_death(-9, log) == "killed by SIGKILL (signal 9), likely out of memory (or killed by hand)"
    assert resources.kernel_death(-15, log) == "killed by SIGTERM (signal 15)"
    assert resources.kernel_death(3, log) == "exited with code 3"
    assert resources.kernel_death(None, log) == "its exit status is unknown"
    assert resources.kernel_death(-9, log, sampled_kb=512000).startswith(
        "killed by SIGKILL (signal 9), likely out of memory (or killed by hand): peak RSS at least 500 MB of ")
    log.write_text("noise\n" + resources.KERNEL_END.format(pid=7, status=-9, kb=3355443) + "\n")
    assert resources.kernel_death(-9, log).startswith(
        "killed by SIGKILL (signal 9), likely out of memory (or killed by hand): peak RSS 3.2 GB of ")


# ------------------------------------------------------------------------------ stored dtypes and shapes
def _bert_dir(tmp_path, name: str = "m") -> tuple[Path, Path]:
    d = tmp_path / name
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    BertModel(cfg).save_pretrained(d)
    y = tmp_path / f"{name}.yaml"
    y.write_text(f"name: {name}\nfamily: bert\nsource: local\nlocal_dir: {d}\n")
    return d, y


def _restore(d: Path, fn) -> None:
    f = d / "model.safetensors"
    save_file({k: fn(k, v) for k, v in load_file(f).items()}, str(f), metadata={"format": "pt"})


@pytest.mark.parametrize("dtype,name", [(torch.int8, "int8"), (torch.uint8, "uint8"),
                                        (torch.float8_e4m3fn, "float8_e4m3fn")])
def test_integer_and_quantised_weights_are_refused_naming_tensor_and_file(tmp_path, sentinel, dtype, name):
    d, y = _bert_dir(tmp_path)
    _restore(d, lambda k, v: v.to(dtype) if v.is_floating_point() else v)
    n = len(load_file(d / "model.safetensors"))
    with pytest.raises(ModelLoadError) as exc:
        check_stored_model(check(y))
    assert str(exc.value) == (
        f"model 'm': tensor embeddings.LayerNorm.bias in {d / 'model.safetensors'} is stored as {name} where the "
        f"model has float32 weights (and {n - 1} more tensor(s) like it): integer and quantised checkpoints are "
        "refused (they would be cast to float and measured as the model); re-save it in float16 or float32 "
        "(model.float().save_pretrained(...))")
    assert intact(sentinel)


def test_a_quantization_config_is_refused(tmp_path):
    d, y = _bert_dir(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_8bit": True}
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError) as exc:
        check_stored_model(check(y))
    assert str(exc.value) == (
        f"model 'm': {d / 'config.json'} declares quantization_config (quant_method bitsandbytes): a quantised "
        "checkpoint would be measured as if it were the float model; give the float16 / float32 checkpoint in "
        "local_dir: of params/models/m.yaml")


def test_shapes_that_disagree_with_the_config_are_named(tmp_path):
    d, y = _bert_dir(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["vocab_size"] = 120
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError) as exc:
        check_stored_model(check(y))
    assert str(exc.value) == (
        f"model 'm': tensor embeddings.word_embeddings.weight in {d / 'model.safetensors'} has shape [100, 32], but "
        f"{d / 'config.json'} makes it [120, 32]: the config and the weights disagree; use the config the weights "
        "were saved with")


def test_float16_and_int64_buffers_pass_and_provenance_records_the_stored_dtype(tmp_path):
    d, y = _bert_dir(tmp_path)
    _restore(d, lambda k, v: v.half() if v.is_floating_point() else v)
    sd = load_file(d / "model.safetensors")
    sd["embeddings.position_ids"] = torch.arange(8)[None]  # int64 buffer of older checkpoints: not quantised
    save_file(sd, str(d / "model.safetensors"), metadata={"format": "pt"})
    check_stored_model(check(y))
    lm = SimpleNamespace(params=params.load_model_params(y), _weights_dir=d, config=None, name="m", family="bert",
                         dtype=torch.float32, device="cpu")
    prov = provenance.model_provenance(lm)
    assert prov["dtype"] == "float32" and prov["stored_dtype"] == f"float16 ({len(sd) - 1}), int64 (1)"


def test_int8_weights_stop_the_run_before_any_kernel(tmp_path, sandbox, sentinel, capsys, monkeypatch):
    import shutil

    d, _ = _bert_dir(tmp_path, "int8-bert")
    _restore(d, lambda k, v: v.to(torch.int8) if v.is_floating_point() else v)
    models = tmp_path / "models"
    shutil.copytree(params.MODELS_DIR, models)
    (models / "int8-bert.yaml").write_text(f"name: int8-bert\nfamily: bert\nsource: local\nlocal_dir: {d}\n")
    monkeypatch.setattr(params, "MODELS_DIR", models)
    sandbox.write("  02_weight_topology:\n    models: [int8-bert]\n")
    monkeypatch.setattr(run_all, "NOTEBOOKS", ROOT / "notebooks")
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(ROOT / "notebooks"))
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: params/models/int8-bert.yaml: ")  # the params file that names the folder
    assert (f"model 'int8-bert': tensor embeddings.LayerNorm.bias in {d / 'model.safetensors'}"
            " is stored as int8 where the model has float32 weights") in lines[0]
    assert not (sandbox.out / "02_weight_topology").exists() and intact(sentinel)
