"""Notebook 01_embedding_terrain executed on the tiny profile; recorded values read back."""
from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import numpy as np
import pytest

from geolip_lib import metrics as M
from geolip_lib import models

pytestmark = pytest.mark.notebooks
NB = "01_embedding_terrain"


def _check_common(m: dict, model: str) -> dict:
    assert m["notebook"] == NB and m["model"] == model
    met, head = m["metrics"], m["headline"]
    V, D = met["embedding_shape"]
    # census: components sum to the (unique) parameter count
    census = met["census"]
    assert sum(census["components"].values()) == census["total"] > 0
    # PR within (1, D], Gaussian baseline PR close to D
    pr = head["pr"]["value"]
    assert 1 < pr <= D + 1e-9 and head["pr"]["baseline_kind"] == "gaussian"
    assert 1 < head["pr"]["baseline"] <= D + 1e-9
    # pentachoron CV finite beside both baselines
    pent = met["pentachoron"]
    for k in ("embedding", "gaussian", "random_init"):
        assert math.isfinite(pent[k]["cv"]) and pent[k]["cv"] > 0, (k, pent[k])
        # a table of at most metrics.EXACT_MAX 5-row subsets is measured on every one (exact), else N_SIMPLICES draws
        want = math.comb(pent[k]["n_rows"], 5) if pent[k]["exact"] else m["parameters"]["N_SIMPLICES"]
        assert pent[k]["n_valid"] <= pent[k]["n_sampled"] == want
        assert pent[k]["exact"] == (math.comb(pent[k]["n_rows"], 5) <= M.EXACT_MAX)
    assert head["pentachoron_cv"]["value"] == pent["embedding"]["cv"]
    assert head["pentachoron_cv_init"]["nulls"]["random_init"]["per_seed"][0] == pent["random_init"]["cv"]
    assert head["volume_ratio"]["value"] > 0
    # cosine statistics on the seeded sample: every pair of the sample
    n = min(m["parameters"]["N_COS_SAMPLE"], V)
    cos = met["cosine"]
    assert cos["n_sample"] == n and cos["n_pairs"] == n * (n - 1) // 2
    assert -1 <= cos["min"] <= cos["mean"] <= cos["max"] <= 1
    assert set(cos["near_constants"]) == set(M.NAMED_CONSTANTS)
    job = Path(m["_job_dir"])
    assert (job / "terrain_map.png").stat().st_size > 1000 and (job / "layers.png").exists()
    # every headline with a value says its kind: exact (no interval: [v, v]) or a 95 % interval holding it;
    # every null is a distribution over its own 5 seeds
    for key, h in head.items():
        if h["value"] is not None:
            assert h["interval"] and h["kind"] in ("exact", "sampled"), key
            if h["kind"] == "exact":
                assert h["interval"]["lo"] == h["interval"]["hi"] == h["value"], key
            else:
                assert h["interval"]["level"] == 0.95 and h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"], key
        for name, n in h["nulls"].items():
            if key == "volume_ratio" and name == "gaussian":
                assert n["value"] == 1.0 and n["interval"]["kind"] == "exact"  # 1 by construction
                continue
            assert len(n["per_seed"]) == 5 and n["interval"]["kind"] == "over_seeds", (key, name)
            assert n["interval"]["lo"] <= n["value"] <= n["interval"]["hi"], (key, name)
    assert head["pr"]["kind"] == "exact" and head["pr"]["interval"]["method"] == f"exact (all {V} rows)"
    assert head["pr"]["nulls"]["gaussian"]["per_seed"][0] == pytest.approx(met["eigenspectrum_gaussian"]["pr"], rel=1e-9)
    iv = head["pentachoron_cv"]["interval"]
    assert iv["lo"] <= head["pentachoron_cv"]["value"] <= iv["hi"] and ("fresh draws of" in iv["method"]
                                                                    or "5-row subsets" in iv["method"])
    assert list(head["pentachoron_cv"]["nulls"]) == ["gaussian", "sphere", "random_init"]
    assert all(n["interval"] for n in head["pentachoron_cv"]["nulls"].values())
    assert list(head["pr"]["nulls"]) == ["gaussian", "random_init"]
    assert head["cosine_mean"]["nulls"]["gaussian"]["interval"]["lo"] <= met["cosine_gaussian"]["mean"]
    # the sphere null: points on the unit sphere of the same dimension, same draws
    assert pent["sphere"]["n_sampled"] == pent["embedding"]["n_sampled"]
    # no figure data under private keys anywhere
    _no_private_keys({k: v for k, v in m.items() if k != "_job_dir"})
    # figures: key figures marked, each saved one shown as an image output, no temporary paths
    figs = m["figures"]
    assert {f["file"] for f in figs if f["key"]} == {"terrain_map.png", "headline_nulls.png"}
    assert all((job / f["file"]).exists() for f in figs)
    nb = nbformat.read(str(job / "executed.ipynb"), as_version=4)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in outs) >= len(figs)
    text = json.dumps(outs)
    assert ".partial" not in text
    assert not [o for o in outs if o.get("name") == "stderr" and "Warning" in o.get("text", "")]
    return met


def _no_private_keys(d, path="") -> None:
    if isinstance(d, dict):
        for k, v in d.items():
            assert not str(k).startswith("_"), f"private key {path}/{k} in metrics.json"
            _no_private_keys(v, f"{path}/{k}")
    elif isinstance(d, list):
        for v in d:
            _no_private_keys(v, path)


def test_tiny_t5_values_match_an_independent_computation(run_notebook):
    m = run_notebook(NB, "tiny-t5")
    met = _check_common(m, "tiny-t5")
    lm = models.load("tiny-t5")
    E = lm.input_embeddings().double().numpy()
    p = m["parameters"]
    assert met["census"]["total"] == sum(t.numel() for t in lm.model.parameters())
    # PR from the covariance of every row
    C = np.cov(E.T, bias=True)
    ev = np.linalg.eigvalsh(C)
    assert m["headline"]["pr"]["value"] == pytest.approx(ev.sum() ** 2 / (ev ** 2).sum(), rel=1e-9)
    # pentachoron CV: the same draws through the slow bordered Cayley-Menger loop
    idx = M.sample_distinct_rows(E.shape[0], p["N_SIMPLICES"], 5, seed=p["SEED"])
    vols = np.sqrt([M.cayley_menger_volume_sq_reference(E[i]) for i in idx])
    assert m["headline"]["pentachoron_cv"]["value"] == pytest.approx(vols.std() / vols.mean(), rel=1e-8)
    # its interval: fresh draws of as many simplices from the table itself
    from geolip_lib.probes.uncertainty import pentachoron_cv_interval
    Et = lm.input_embeddings()
    iv, drawn = pentachoron_cv_interval(Et, M.pentachoron_cv(Et, p["N_SIMPLICES"], seed=p["SEED"]), seed=p["SEED"])
    assert m["headline"]["pentachoron_cv"]["interval"]["lo"] == pytest.approx(iv.lo, rel=1e-6)
    assert m["headline"]["pentachoron_cv"]["interval"]["hi"] == pytest.approx(iv.hi, rel=1e-6)
    assert "fresh draws" in iv.method and met["pentachoron"]["embedding"]["redrawn"]["draws"] == drawn["draws"]
    # PR of every row: exact, no interval; PR / D the same number over D
    assert m["headline"]["pr"]["interval"]["method"] == f"exact (all {E.shape[0]} rows)"
    assert m["headline"]["pr_over_dim"]["value"] == pytest.approx(m["headline"]["pr"]["value"] / E.shape[1], rel=1e-12)
    # the random-init null over 5 init seeds: seed k >= 1 is the input table of init seed params.seed + 1 + k,
    # drawn alone by the model's own initialisation (seed 0 is the notebook's whole twin)
    from geolip_lib.probes.uncertainty import random_init_table
    E4 = random_init_table(lm, lm.params.seed + 5).double().numpy()
    assert E4.shape == E.shape
    d = met["random_init_null"]  # what the null cost, for the plan: seed 0 whole, 4 tables alone
    assert d["seeds"] == 5 and d["tables_only"] == 4 and d["init_seeds"] == [lm.params.seed + 1 + k for k in range(5)]
    assert "Relative position bias" not in m.get("not_run", {})  # T5 has one; other sections record why not
    ev4 = np.linalg.eigvalsh(np.cov(E4.T, bias=True))
    assert m["headline"]["pr"]["nulls"]["random_init"]["per_seed"][4] == pytest.approx(
        ev4.sum() ** 2 / (ev4 ** 2).sum(), rel=1e-9)
    # cosine distribution on default_rng(SEED).choice(V, N_COS_SAMPLE, replace=False)
    rows = np.random.default_rng(p["SEED"]).choice(E.shape[0], p["N_COS_SAMPLE"], replace=False)
    S = E[rows] / np.linalg.norm(E[rows], axis=1, keepdims=True)
    flat = (S @ S.T)[np.triu_indices(len(rows), 1)]
    assert met["cosine"]["mean"] == pytest.approx(flat.mean(), abs=1e-12)
    assert met["cosine"]["percentiles"]["95"] == pytest.approx(np.percentile(flat, 95), abs=1e-12)
    # family-specific probes: encoder + decoder layers, relative position bias, tying
    n_layers = lm.config.num_layers
    assert set(met["layers"]) == {"encoder", "decoder"}
    assert len(met["layers"]["encoder"]["mean_norm"]) == n_layers + 1
    assert met["position_bias"]["applicable"] and len(met["position_bias"]["tables"]) == 2
    assert met["tying"]["output_tied"] is True
    assert met["digits"]["applicable"] and -1 <= met["digits"]["corr_abs_diff"] <= 1
    assert met["embed_vs_output"]["applicable"] is False
    assert met["vision_tables"] == {}
    _check_restored(m, lm, E)


def _check_restored(m: dict, lm, E: np.ndarray) -> None:
    """Seed §1's encoder-vs-decoder comparison, §13a's token-id-range categories and
    cumulative variance, and the claims record, read back and recomputed."""
    import torch

    met, p = m["metrics"], m["parameters"]
    # encoder vs decoder: the seed's pair, layers [0, n // 2, n], recomputed by a direct forward pass
    ed = met["encoder_decoder"]
    n = lm.config.num_layers
    assert ed["applicable"] and ed["layers"] == sorted({0, n // 2, n})
    assert (ed["source"], ed["target"]) == ("translate English to German: The house is big.", "Das Haus ist groß.")
    with torch.no_grad():
        src = lm.tokenizer(ed["source"], return_tensors="pt").input_ids
        tgt = lm.tokenizer(ed["target"], return_tensors="pt").input_ids
        enc = lm.model.encoder(input_ids=src, output_hidden_states=True)
        dec = lm.model.decoder(input_ids=tgt, encoder_hidden_states=enc.last_hidden_state, output_hidden_states=True)
    k = min(src.shape[1], tgt.shape[1])
    for b, iv in zip(ed["by_layer"], ed["intervals"]):
        want = torch.nn.functional.cosine_similarity(enc.hidden_states[b["layer"]][0, :k],
                                                     dec.hidden_states[b["layer"]][0, :k], dim=1).numpy()
        np.testing.assert_allclose(b["cosine"], want, rtol=1e-5, atol=1e-6)
        assert b["mean"] == pytest.approx(want.mean(), abs=1e-6) and b["seed_mean"] == pytest.approx(want[:5].mean(), abs=1e-6)
        assert iv["lo"] <= b["mean"] <= iv["hi"] and f"of {k} positions" in iv["method"]
    assert met["encoder_decoder_random_init"]["applicable"]
    # token-id ranges: the seed's ids, and the characters' own tokens beside them
    defs = met["token_ranges"]["definitions"]
    assert defs["seed"]["ASCII digits"]["ids"] == list(range(48, 58))
    assert defs["seed"]["last 100 ids"]["ids"] == list(range(E.shape[0] - 100, E.shape[0]))
    proj = defs["project"]["ASCII digits"]
    assert [lm.tokenizer.decode([i]).strip() for i in proj["ids"]] == [str(d) for d in range(10)]
    U = E[proj["ids"]] / np.linalg.norm(E[proj["ids"]], axis=1, keepdims=True)
    assert proj["intra_cos"] == pytest.approx((U @ U.T)[np.triu_indices(10, 1)].mean(), abs=1e-12)
    iv = met["token_ranges"]["intervals"]["project"]["ASCII digits"]
    assert iv["lo"] <= proj["intra_cos"] <= iv["hi"] and "of 10 tokens" in iv["method"]
    # cumulative variance: the PCA of every row, first 200 components
    for name in ("embedding", "gaussian", "random_init"):
        cv = np.asarray(met["cumulative_variance"][name])
        assert len(cv) == min(200, E.shape[1]) and np.all(np.diff(cv) >= 0) and cv[-1] == pytest.approx(1.0)
    s = np.linalg.svd(E - E.mean(0), compute_uv=False)
    np.testing.assert_allclose(met["cumulative_variance"]["embedding"], (np.cumsum(s ** 2) / (s ** 2).sum())[:200],
                               rtol=1e-9)
    # the claims record: the seed's definition, with the three nulls under the contract's names
    c = met["claims"]["pentachoron_cv"]["embedding"]
    assert c["value"] == m["headline"]["pentachoron_cv"]["value"] and c["interval"] == m["headline"]["pentachoron_cv"]["interval"]
    assert list(c["nulls"]) == ["gaussian", "unit sphere", "random init"]
    assert c["nulls"]["unit sphere"]["per_seed"][0] == met["pentachoron"]["sphere"]["cv"]
    assert c["nulls"]["random init"]["per_seed"][0] == met["pentachoron"]["random_init"]["cv"]
    assert "5-row subsets" in c["note"] and p["N_SIMPLICES"] == met["pentachoron"]["embedding"]["n_sampled"]
    V = E.shape[0]
    assert c["rows"] == {"n": V, "of": V, "text": f"all {V} rows"} and f"measured on all {V} rows" in c["note"]
    # the second reading: the rows less the tokenizer's special tokens, the same draws where they avoid them
    special = {i for i in lm.tokenizer.all_special_ids if 0 <= i < min(V, len(lm.tokenizer))}
    cc, pc = met["claims"]["pentachoron_cv"]["embedding_content"], met["pentachoron_content"]
    assert cc["rows"]["n"] == pc["n_rows"] == min(V, len(lm.tokenizer)) - len(special) and cc["rows"]["of"] == V
    assert {int(i) for i in cc["rows"]["special"]} == special and cc["rows"]["text"] in cc["note"]
    keep = np.setdiff1d(np.arange(min(V, len(lm.tokenizer))), sorted(special))
    idx = M.sample_distinct_rows(V, p["N_SIMPLICES"], 5, seed=p["SEED"])  # the embedding's draws
    shared = idx[~np.isin(idx, sorted(special)).any(axis=1) & (idx < len(lm.tokenizer)).all(axis=1)]
    pos = np.full(V, -1)
    pos[keep] = np.arange(len(keep))
    sets = pos[shared]
    vc = np.sqrt([M.cayley_menger_volume_sq_reference(E[keep][i]) for i in sets])
    assert pc["n_sampled"] == p["N_SIMPLICES"] and len(sets) <= p["N_SIMPLICES"]
    if len(sets) == p["N_SIMPLICES"]:  # no drawn subset touched a special row: the same CV
        assert cc["value"] == pytest.approx(vc.std() / vc.mean(), rel=1e-8)
    assert list(cc["nulls"]) == ["gaussian", "unit sphere", "random init"]
    assert m["headline"]["pentachoron_cv_content"]["value"] == cc["value"]
    job = Path(m["_job_dir"])
    assert (job / "encoder_decoder.png").exists() and (job / "cumulative_variance.png").exists()


def test_tiny_dinov2_vision_paths(run_notebook):
    m = run_notebook(NB, "tiny-dinov2")
    met = _check_common(m, "tiny-dinov2")
    for probe in ("digits", "categories", "special_tokens"):
        assert met[probe]["applicable"] is False and met[probe]["reason"]
    assert m["headline"]["digit_corr"]["value"] is None and m["headline"]["digit_corr"]["nulls"] == {}
    assert set(met["vision_tables"]) == {"position", "patch"}
    assert met["layers"]["vision"]["n_sequences"] == m["parameters"]["N_IMAGES"]
    assert met["position_bias"]["applicable"] is False
    # restored seed measurements that do not apply say so; a vision model records no token-embedding claim
    assert met["encoder_decoder"] == {"applicable": False,
                                      "reason": "not an encoder–decoder model (dinov2): no decoder reads an encoder"}
    assert met["token_ranges"]["applicable"] is False and "claims" not in met
    nb = nbformat.read(str(Path(m["_job_dir"]) / "executed.ipynb"), as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "Encoder vs decoder hidden states: not applicable — not an encoder–decoder model (dinov2)" in text
    # each section that cannot run records why, once, in metrics.json
    nr = m["not_run"]
    assert nr["Encoder vs decoder hidden states"] == ("not applicable — not an encoder–decoder model (dinov2): no "
                                                      "decoder reads an encoder.")
    assert {"Digit manifold", "Special tokens", "Relative position bias"} <= set(nr)
    assert text.count("Encoder vs decoder hidden states: not applicable") == 1  # one line, not repeated


def test_deterministic_metrics_json(run_notebook):
    a = run_notebook(NB, "tiny-t5")
    b = run_notebook(NB, "tiny-t5", SEED=0)  # same parameters, a second execution
    assert a["_job_dir"] != b["_job_dir"]
    ja = json.loads(Path(a["_job_dir"], "metrics.json").read_text())
    jb = json.loads(Path(b["_job_dir"], "metrics.json").read_text())
    ja.pop("provenance"), jb.pop("provenance")  # wall time, timestamps
    assert ja == jb
