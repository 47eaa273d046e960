"""``run_all.py --claims FILE ...`` (geolip_lib.runner.claims_run): a claims file's verdict matrix added to an
output root of the root's own profile, no profile written for it; every bad name one line, exit 2, before any
kernel; end to end, the claims notebook runs on the root's results and the report shows the matrix."""
from __future__ import annotations

import json

import pytest

import run_all
from geolip_lib import results
from geolip_lib.params import ParamsError
from geolip_lib.runner.claims_run import CLAIMS_NOTEBOOK, claims_jobs
from geolip_lib.runner.jobs import jobs_for_profile


def test_one_job_per_file_the_profile_parameters_and_its_own_jobs_reused():
    jobs = claims_jobs("demo", ["gao-2019", "seed-001"])
    assert [(j.notebook, j.job_id, j.model, j.parameters["CLAIMS"]) for j in jobs] == [
        (CLAIMS_NOTEBOOK, "gao-2019", None, "gao-2019"), (CLAIMS_NOTEBOOK, "all", None, "seed-001")]
    own = next(j for j in jobs_for_profile("demo", None, [CLAIMS_NOTEBOOK]) if j.job_id == "all")
    assert jobs[1].parameters == {**own.parameters, "CLAIMS": "seed-001"} and jobs[1].timeout_s == own.timeout_s  # as the profile runs it


@pytest.mark.parametrize("names, says", [
    (["../x"], "is not a safe name"),
    (["no-such-paper"], "unknown claims file 'no-such-paper'"),
    (["gao-2019", "gao-2019"], "give each file once"),
    (["/tmp/absent.yaml"], "does not exist"),
])
def test_a_bad_name_is_one_line(names, says):
    with pytest.raises(ParamsError) as exc:
        claims_jobs("demo", names)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def _main(capsys, *args):
    code = run_all.main(list(args))
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    return code, err


def test_refusals_before_any_kernel(tmp_path, capsys):
    code, err = _main(capsys, "--claims", "gao-2019", "--models", "tiny-bert")
    assert code == 2 and err == ["error: --claims runs the claims notebook on the root's results; --models has no "
                                 "place with it: drop one"]
    code, err = _main(capsys, "--claims", "--out", str(tmp_path))
    assert code == 2 and "give one or more claims files" in err[0]
    code, err = _main(capsys, "--claims", "gao-2019", "--out", str(tmp_path / "none"))
    assert code == 2 and len(err) == 1 and "records no profile" in err[0]
    (tmp_path / ".profile.json").write_text(json.dumps({"profile": "demo"}))
    code, err = _main(capsys, "--claims", "gao-2019", "--out", str(tmp_path))
    assert code == 2 and len(err) == 1 and "holds no results" in err[0]
    code, err = _main(capsys, "--claims", "gao-2019", "--profile", "real", "--out", str(tmp_path))
    assert code == 2 and "holds the results of profile 'demo', not 'real'" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".profile.json"]  # nothing written


def _iv(v, h=0.01):
    return {"lo": v - h, "hi": v + h, "method": "bootstrap percentile", "level": 0.95, "kind": "sampled"}


def _root(tmp_path):
    """An output root of the demo profile holding one 01 result of a trained model (MiniLM's values, rounded)."""
    root = tmp_path / "demo"
    job = root / "01_embedding_terrain" / "all-minilm-l6-v2"
    job.mkdir(parents=True)
    null = {"random_init": {"value": 0.0, "interval": _iv(0.0, 0.02)}, "gaussian": {"value": 0.0, "interval": _iv(0.0)}}
    headline = {"cosine_mean": results.headline(0.05, interval=_iv(0.05, 0.005), nulls=null, label="mean cosine"),
                "pr_over_dim": results.headline(0.4, interval="exact", over="30522 rows", label="PR / D",
                                                nulls={"random_init": {"value": 0.98, "interval": _iv(0.98)},
                                                       "gaussian": {"value": 0.99, "interval": _iv(0.99)}})}
    rare = {k: results.headline(v, interval=_iv(v), label=k, nulls={"random_init": {"value": 0.0,
                                                                                      "interval": _iv(0.0)}})
            for k, v in (("cos_to_mean", -0.72), ("norm", 0.82))}
    (job / "metrics.json").write_text(json.dumps({"notebook": "01_embedding_terrain", "model": "all-minilm-l6-v2",
                                                  "headline": headline, "claims": {"rare_words": rare}}))
    (root / ".profile.json").write_text(json.dumps({"profile": "demo"}))
    return root


def test_a_claims_file_adds_its_matrix_to_a_root(tmp_path, capsys):
    root = _root(tmp_path)
    code, err = _main(capsys, "--claims", "gao-2019", "--out", str(root), "--no-pdf")
    assert code == 0, err
    out = json.loads((root / CLAIMS_NOTEBOOK / "gao-2019" / "metrics.json").read_text())
    assert "gao-2019" in json.dumps(out)
    page = (root / "index.html").read_text(encoding="utf-8")
    assert "Gao et al. (2019)" in page and "rare words drive the degeneration" in page
    assert "did not run on this output root" not in page
    assert json.loads((root / ".profile.json").read_text())["profile"] == "demo"
