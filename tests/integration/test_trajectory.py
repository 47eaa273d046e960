"""Geometry over training: a params file's checkpoints, the trajectory of notebook
01's and 02's headlines over them, streamed one model at a time, and its figure in the report.

The checkpoints are real: ``scripts/make_tiny_checkpoints.py`` trains tiny-gpt2's random-init
twin for 200 steps on a synthetic counting task, saving with ``save_pretrained`` at steps 0, 10,
30, 100, 200 (cached under .cache/tiny_checkpoints: seconds once made, a few minutes the first
time on a busy 2-core box).
"""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from geolip_lib import models, trajectory
from geolip_lib.models.common import ModelLoadError
from geolip_lib.params import ParamsError, load_model_params
from geolip_lib.paths import ROOT

NAME = "tiny-gpt2-checkpoints"
SMALL_01 = dict(n_cos=300, n_simplices=200, seed=0, n_boot=50)


@pytest.fixture(scope="module")
def ckpt_dirs():
    spec = importlib.util.spec_from_file_location("make_tiny_checkpoints", ROOT / "scripts/make_tiny_checkpoints.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dirs = mod.make()
    assert [d.name for d in dirs] == ["step-0000", "step-0010", "step-0030", "step-0100", "step-0200"]
    return dirs


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if a[k] is None or b[k] is None:
            assert a[k] is None and b[k] is None, k
        else:
            assert math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12), (k, a[k], b[k])


def _write(tmp_path: Path, body: str, name: str = "traj-model") -> Path:
    f = tmp_path / "params" / f"{name}.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f"name: {name}\n{body}")
    return f


def test_checkpoint_folders_are_validated_one_line_each(tmp_path, ckpt_dirs):
    bert = tmp_path / "bert-ckpt"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (bert / "model.safetensors").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    f = _write(tmp_path, "family: gpt2\nsource: local\nlocal_dir: /x\ncheckpoints:\n"
                         f"  - ../missing\n  - ../empty\n  - {bert}\n  - {ckpt_dirs[0]}\n")
    with pytest.raises(ParamsError) as exc:
        trajectory.checkpoints(f)
    lines = exc.value.lines
    assert len(lines) == 3 and all(ln.startswith(f"{f}: ") for ln in lines), lines
    assert "key 'checkpoints[0]'" in lines[0] and str(tmp_path / "missing") in lines[0] and "does not exist" in lines[0]
    assert "key 'checkpoints[1]'" in lines[1] and "not a save_pretrained folder" in lines[1]
    assert "key 'checkpoints[2]'" in lines[2] and "model_type 'bert'" in lines[2] and "family: bert" in lines[2]
    with pytest.raises(ParamsError) as exc:  # preflight (run_all) reads the same lines before any kernel
        models.check(f)
    assert exc.value.lines == lines
    # a relative path is read from the params file's folder
    ok = _write(tmp_path, f"family: gpt2\nsource: local\nlocal_dir: {ckpt_dirs[-1]}\ncheckpoints: [../ck]\n", "rel")
    (tmp_path / "ck").symlink_to(ckpt_dirs[1])
    assert [c.label for c in trajectory.checkpoints(ok)] == ["ck"]
    assert load_model_params(ok).checkpoints == [str(tmp_path / "ck")]


@pytest.mark.parametrize("body, says", [
    ("family: gpt2\nsource: local\nid: /x\nrevisions: [step0]\n", "revisions: are hub revisions of id:"),
    ("family: gpt2\nsource: hub\nid: a/b\nrevisions: [step0]\ncheckpoints: [/x]\n", "not both"),
    ("family: gpt2\nsource: hub\nid: a/b\nrevisions: [step0, step0]\n", "'step0' listed twice"),
])
def test_revisions_and_checkpoints_schema_one_line(tmp_path, body, says):
    with pytest.raises(ParamsError) as exc:
        load_model_params(_write(tmp_path, body))
    assert len(exc.value.lines) == 1 and says in exc.value.lines[0], exc.value.lines


def test_hub_revisions_offline_fail_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    p = {"name": "pythia-14m-steps", "family": "gpt_neox", "source": "hub", "id": "EleutherAI/pythia-14m",
         "revisions": ["step0", "step1000", "step143000"]}
    cks = trajectory.checkpoints(p)
    assert [(c.label, c.step, c.params.revision) for c in cks] == [
        ("step0", 0, "step0"), ("step1000", 1000, "step1000"), ("step143000", 143000, "step143000")]
    with pytest.raises(ModelLoadError) as exc:
        trajectory.run(p, "02_weight_topology")
    msg = str(exc.value)
    assert "\n" not in msg and "revision 'step0'" in msg and "HF_HUB_OFFLINE=1" in msg and "checkpoints:" in msg


def test_trajectory_is_each_checkpoints_own_headline_and_step0_is_the_random_init(ckpt_dirs):
    traj = trajectory.run(NAME, "01_embedding_terrain", **SMALL_01)
    bat = trajectory.run(NAME, "02_weight_topology", n_boot=50)
    assert [p["step"] for p in traj["points"]] == [0, 10, 30, 100, 200]
    for i, d in enumerate(ckpt_dirs):  # each point = the headline of that checkpoint loaded alone
        alone = models.load({**load_model_params(NAME).model_dump(), "checkpoints": [], "local_dir": str(d)})
        _close(traj["points"][i]["values"], trajectory.embedding_values(alone, **SMALL_01))
        _close(bat["points"][i]["values"], trajectory.battery_values(alone, n_boot=50))
    init = models.load(NAME).random_init()  # the notebooks' random-init twin (seed params.seed + 1) is step 0
    _close(traj["points"][0]["values"], trajectory.embedding_values(init, **SMALL_01))
    _close(bat["points"][0]["values"], trajectory.battery_values(init, n_boot=50))
    # training moved the geometry: the last checkpoint is not the first
    assert traj["points"][-1]["values"]["pr"] < 0.5 * traj["points"][0]["values"]["pr"]
    assert bat["points"][-1]["values"]["q_sparsity"] < bat["points"][0]["values"]["q_sparsity"]
    # one model at a time: the resident memory does not grow by a model per checkpoint
    mem = traj["memory"]
    assert mem["n_checkpoints"] == 5 and mem["rss_max_mib"] - mem["rss_first_mib"] < 3 * mem["model_mib"] + 16, mem


def test_claim_bands_come_from_the_claims_file():
    b01, b02 = trajectory.claim_bands("01_embedding_terrain"), trajectory.claim_bands("02_weight_topology")
    assert (b01["pentachoron_cv"]["lo"], b01["pentachoron_cv"]["hi"]) == pytest.approx((0.195, 0.235))
    assert b02["q_sparsity"]["lo"] == pytest.approx(0.9365) and b02["q_sparsity"]["hi"] is None
    assert b02["cross_layer_adj"]["claim"] == "cross_layer_corr"


def test_notebooks_give_the_trajectory_and_the_report_shows_it(tmp_path, ckpt_dirs):
    prof = tmp_path / "traj.yaml"
    prof.write_text(
        "name: traj\nnotebooks:\n"
        f"  01_embedding_terrain:\n    models: [{NAME}]\n"
        "    parameters: {N_COS_SAMPLE: 300, N_SIMPLICES: 200, N_DIST_SAMPLE: 200, N_BOOT: 50}\n"
        f"  02_weight_topology:\n    models: [{NAME}]\n    parameters: {{N_BOOT: 50}}\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "run_all.py", "--profile", str(prof), "--out", str(out), "--no-pdf"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    for nb in ("01_embedding_terrain", "02_weight_topology"):
        job = out / nb / NAME
        m = json.loads((job / "metrics.json").read_text())
        metrics = m.get("metrics", m)
        traj, head = metrics["trajectory"], m["headline"]
        assert [p["label"] for p in traj["points"]] == [d.name for d in ckpt_dirs]
        last = traj["points"][-1]["values"]  # the final checkpoint is the notebook's own model: same headline
        for k, v in last.items():
            if v is not None:
                assert math.isclose(v, head[k]["value"], rel_tol=1e-9), (nb, k, v, head[k]["value"])
        fig = next(f for f in m["figures"] if f["file"] == "trajectory.png")
        assert fig["key"] and (job / "trajectory.png").stat().st_size > 10_000
        assert traj["memory"]["rss_max_mib"] - traj["memory"]["rss_first_mib"] < 3 * traj["memory"]["model_mib"] + 16
    index = (out / "index.html").read_text()
    for nb in ("01_embedding_terrain", "02_weight_topology"):
        assert f"{nb}/{NAME}/trajectory.png" in index, f"{nb}'s trajectory figure is not among the report's key figures"


def test_report_picks_a_trajectory_beside_a_lead_model(tmp_path):
    from geolip_lib.report.records import JobRecord
    from geolip_lib.report.sections import key_figures

    figs = lambda *names: {"figures": [{"file": f"{n}.png", "title": n, "key": True} for n in names]}  # noqa: E731
    lead = JobRecord("01_embedding_terrain", "all-minilm-l6-v2", tmp_path, figs("terrain_map", "headline_nulls"))
    ck = JobRecord("01_embedding_terrain", NAME, tmp_path, figs("terrain_map", "trajectory", "headline_nulls"))
    picked = [(r.job_id, f["file"]) for r, f in key_figures([lead, ck])]
    assert picked == [("all-minilm-l6-v2", "terrain_map.png"), ("all-minilm-l6-v2", "headline_nulls.png"),
                      (NAME, "trajectory.png")]


def test_run_all_refuses_a_bad_checkpoint_folder_before_any_kernel(tmp_path, capsys, ckpt_dirs):
    import run_all

    f = _write(tmp_path, f"family: gpt2\nsource: local\nlocal_dir: {ckpt_dirs[-1]}\ncheckpoints: [nowhere, {ckpt_dirs[0]}]\n")
    prof = tmp_path / "p.yaml"
    prof.write_text("name: p\nnotebooks:\n  02_weight_topology:\n    models: [tiny-bert]\n")
    out = tmp_path / "out"
    assert run_all.main(["--profile", str(prof), "--models", str(f), "--out", str(out), "--no-pdf"]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines == [f"error: {f}: key 'checkpoints[0]': folder {tmp_path / 'params' / 'nowhere'} does not exist "
                     f"(a relative path is read from the params file's folder)"], lines
    assert not out.exists()
