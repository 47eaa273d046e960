"""Tables of notebook 06 (per-head QK operators): one row per group or per (group, layer).

Each function takes the measured operators or the :func:`~geolip_lib.operators.analyse`
dicts of the trained model and, where there is one, of the same architecture at random
initialisation (``null``: ``{group: analysis}``, possibly empty), and returns plain rows
(a list of dicts, for ``metrics.json``) or a :class:`pandas.DataFrame` (for display).
Random-init columns are NaN where a group has no null.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from ..metrics.intervals import format_value, null_over_seeds
from ..metrics.sampled_null import SampledNull
from ..results import headline

from .measure import QKOperators
from .nulls import ITEM_KIND

__all__ = ["group_rows", "cosine_table", "rescale_table", "sign_table", "principal_angle_table", "verdict_rows",
           "SEED_MEAN", "PROJECT_MEAN", "SPECTRAL_KEYS", "spectral_records", "spectral_table", "FIRST_GROUP",
           "first_group_headline", "null_over_init_seeds", "OPERATOR_CLAIMS", "SEED_PER_LAYER", "seed_definition",
           "operator_claims"]

NAN = float("nan")


def _arr(x) -> np.ndarray:
    return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)


def group_rows(ops: Mapping[str, QKOperators]) -> list[dict]:
    """One row per measured attention group: shape of the stack and whether q/k are normed."""
    return [{"group": g, "layers": len(o.layers), "heads": o.n_heads, "kv_heads": o.n_kv_heads,
             "head_dim": o.head_dim, "hidden": o.hidden, "top_k": o.top_k,
             "qk_norm": bool(o.meta.get("qk_norm")), "layer_ids": str(o.layers)} for g, o in ops.items()]


def cosine_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Operator cosine per group: diagonal (≡ 1), adjacent mean / min / max, first and middle
    layer to the anchor, and the adjacent mean at random init."""
    rows = []
    for g, a in analyses.items():
        adj = _arr(a["adjacent_cos"])
        cta = _arr(a["cos_to_anchor"])
        rows.append({"group": g, "diag (should be 1)": a["diag_cos_mean"], "adjacent mean": a["adjacent_mean"],
                     "adjacent min": adj.min() if adj.size else NAN, "adjacent max": adj.max() if adj.size else NAN,
                     "first→anchor": float(cta[0]), "mid→anchor": float(cta[len(a["layers"]) // 2]),
                     "adjacent mean (random init)": null[g]["adjacent_mean"] if g in null else NAN})
    return pd.DataFrame(rows)


def rescale_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Per (group, layer): cosine to the anchor, best scalar ``T`` and the residual fraction
    ``√(1 − cos²)`` (means over heads), and the residual fraction at random init."""
    rows = []
    for g, a in analyses.items():
        r = {k: _arr(v) for k, v in a["rescale"].items()}
        rn = _arr(null[g]["rescale"]["mean_resid_frac"]) if g in null else None
        for i, L in enumerate(a["layers"]):
            rows.append({"group": g, "layer": L, "cos": float(r["mean_cos"][i]), "T_opt": float(r["mean_T"][i]),
                         "resid_frac": float(r["mean_resid_frac"][i]),
                         "resid_frac (random init)": float(rn[i]) if rn is not None else NAN})
    return pd.DataFrame(rows)


def sign_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Per (group, k): mean top-k sign agreement with the anchor, by depth band, and at random init."""
    rows = []
    for g, a in analyses.items():
        for k, s in a["sign_agreement"].items():
            ns = null.get(g, {}).get("sign_agreement", {}).get(k)
            rows.append({"group": g, "k": k, "mean": s["mean"], **s["bands"],
                         "mean (random init)": ns["mean"] if ns else NAN})
    return pd.DataFrame(rows)


def principal_angle_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Per (group, layer): principal angles of the top-k eigen-subspace to the anchor's
    (mean and min cosine, mean angle, top-1 overlap) and the mean angle at random init."""
    rows = []
    for g, a in analyses.items():
        pa = {k: _arr(v) for k, v in a["principal_angles"].items()}
        pn = _arr(null[g]["principal_angles"]["mean_deg"]) if g in null else None
        for i, L in enumerate(a["layers"]):
            rows.append({"group": g, "layer": L, "meanCosPA": float(pa["mean_cos"][i]),
                         "minCosPA": float(pa["min_cos"][i]), "mean angle (deg)": float(pa["mean_deg"][i]),
                         "top1 overlap": float(pa["top1_overlap"][i]),
                         "mean angle (deg, random init)": float(pn[i]) if pn is not None else NAN})
    return pd.DataFrame(rows)


#: the verdict table's two readings of the mean operator cosine to the anchor
SEED_MEAN, PROJECT_MEAN = "seed's mean cos to anchor (anchor included)", "project's mean cos to anchor (anchor excluded)"


def verdict_rows(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> list[dict]:
    """Per group: the mean operator cosine to the anchor and the seed's grade of it, by the seed's
    arithmetic (every layer, the anchor's self-cosine included: ``analysis["seed"]``) and by the
    project's (anchor excluded), the adjacent mean, and the same at random init."""
    rows = []
    for g, a in analyses.items():
        b = null.get(g)
        rows.append({"group": g, SEED_MEAN: a["seed"]["mean_cos_to_anchor"], "seed's verdict": a["seed"]["verdict"],
                     PROJECT_MEAN: a["mean_cos_to_anchor"], "project's verdict": a["verdict"],
                     "adjacent": a["adjacent_mean"],
                     f"{SEED_MEAN} (random init)": b["seed"]["mean_cos_to_anchor"] if b else NAN,
                     f"{PROJECT_MEAN} (random init)": b["mean_cos_to_anchor"] if b else NAN,
                     "project's verdict (random init)": b["verdict"] if b else ""})
    return rows


#: seed 004's question, per group: key in :func:`spectral_records` -> (label, the
#: :func:`~geolip_lib.operators.headline_samples` key of its items, value in an analysis)
SPECTRAL_KEYS = {
    "operator_cos_to_anchor": ("operator cos→anchor", "cos_to_anchor", lambda a: a["mean_cos_to_anchor"]),
    "spectral_cos_to_anchor": ("spectral cos→anchor", "spec_cos_to_anchor",
                               lambda a: a["spectral"]["mean_cos_to_anchor"]),
    "spectral_minus_operator": ("spectral − operator (→anchor)", "spec_minus_op",
                                lambda a: a["spectral"]["mean_cos_to_anchor"] - a["mean_cos_to_anchor"]),
    "operator_cos_adjacent": ("operator cos adjacent", "cos_adjacent", lambda a: a["adjacent_mean"]),
    "spectral_cos_adjacent": ("spectral cos adjacent", "spec_cos_adjacent", lambda a: a["spectral"]["adjacent_mean"]),
}

SPECTRAL_NOTES = {
    "spectral_cos_to_anchor": "Cosine between sorted eigen-spectra of the symmetric parts; sorted spectra of "
                              "independent random operators of one shape are already close, so read it beside "
                              "random init.",
    "spectral_minus_operator": "Paired over the same layer pairs and heads: > 0 where layers share the spectral "
                               "shape more than the operator itself.",
}


def _over(samples: Mapping, item: str) -> str:
    """What an exact mean is over: "<n> <items>" (:func:`~geolip_lib.operators.headline_samples`)."""
    return f"{len(samples[item]['values'])} {samples[item]['what']}"


def null_over_init_seeds(null_samples, item: str):
    """The random-init null of a mean over layer pairs and heads, as a distribution over the init
    seeds: each seed's mean of its ``headline_samples`` items (equal to its analysis value). A
    :class:`~geolip_lib.metrics.sampled_null.SampledNull` (each seed a sample of the group's
    layers, :mod:`geolip_lib.operators.nulls`) gives the prediction interval of one whole model."""
    vals = [float(np.mean(ns[item]["values"])) for ns in null_samples or [] if item in ns]
    if vals and isinstance(null_samples, SampledNull):
        return null_samples.distribution(vals, ITEM_KIND.get(item, "pairs"))
    return null_over_seeds(vals, what=f"{len(vals)} random-init seeds") if vals else None


def spectral_records(analyses: Mapping[str, dict], null: Mapping[str, dict], intervals: Mapping[str, dict],
                     null_intervals: Mapping[str, dict], samples: Mapping[str, dict] | None = None,
                     null_samples: Mapping[str, list] | None = None) -> dict:
    """Operator vs spectral cosine per group, each a :func:`geolip_lib.results.headline` record.

    Parameters
    ----------
    analyses, null : dict
        ``{group: analysis}`` (trained, random init).
    intervals, null_intervals : dict
        ``{group: {headline_samples key: Interval}}`` — the bootstraps of the items each
        value averages (layer pairs, or (layer pair, head) cells of a short stack).
    samples, null_samples : dict, optional
        ``{group: headline_samples}`` and ``{group: [headline_samples per init seed]}``. Given,
        each value is what it is — a mean over **every** layer pair and head, exact — with
        the bootstrap over its items kept as ``items_interval`` (how much it rests on which
        pairs), and the random-init null is the distribution over the init seeds.

    Returns
    -------
    dict ``{group: {key: headline dict}}`` for the keys of :data:`SPECTRAL_KEYS` whose
    items exist (a one-layer group has none); the random-init value and its interval are
    the ``"random_init"`` null.
    """
    out: dict = {}
    for g, a in analyses.items():
        b, iv, niv = null.get(g), intervals.get(g, {}), null_intervals.get(g, {})
        out[g] = {}
        for key, (label, item, val) in SPECTRAL_KEYS.items():
            if item not in iv:
                continue
            if samples is None:
                out[g][key] = headline(val(a), interval=iv.get(item), label=label, fmt="+.4f",
                                       note=SPECTRAL_NOTES.get(key),
                                       nulls={"random_init": {"value": val(b), "interval": niv.get(item)}} if b else None)
                continue
            n = null_over_init_seeds((null_samples or {}).get(g), item)
            h = headline(val(a), interval="exact", over=_over(samples[g], item), label=label, fmt="+.4f",
                         note=SPECTRAL_NOTES.get(key), nulls={"random_init": n} if n else None)
            h["items_interval"] = iv[item].as_dict()
            out[g][key] = h
    return out


#: seed 004's question as claims records (``params/claims/seed-004.yaml``): record -> its
#: :data:`SPECTRAL_KEYS` key. Every group is a scope ("decoder.self", "encoder.self", "vision.self",
#: "decoder.cross"); the claims file says which scopes a reading reads.
OPERATOR_CLAIMS = {"qk_operator_cos": "operator_cos_to_anchor", "qk_spectral_cos": "spectral_cos_to_anchor",
                   "qk_spectral_minus_operator": "spectral_minus_operator"}

#: the seed's arithmetic of each record: its per-layer values to the anchor, the anchor's own layer
#: included, from an analysis's ``"seed"`` dict (:func:`~geolip_lib.operators.analyse`); the seed's
#: value is their mean over every layer
SEED_PER_LAYER = {"operator_cos_to_anchor": lambda s: _arr(s["cos_to_anchor"]),
                  "spectral_cos_to_anchor": lambda s: _arr(s["spectral_cos_to_anchor"]),
                  "spectral_minus_operator": lambda s: _arr(s["spectral_cos_to_anchor"]) - _arr(s["cos_to_anchor"])}

SEED_NOTE = ("The seed's arithmetic (its verdict cell): per layer the mean over heads of the signed cosine to the "
             "anchor, then the mean over every layer, the anchor's cosine with itself included. The project's "
             "definition, the anchor left out, is 'project'.")


def _seed_null(project_null: Mapping, n_layers: int, anchor_self: float) -> dict:
    """The random-init null of the project's mean (anchor excluded) carried to the seed's arithmetic.

    A whole model's seed value is ``((n_layers − 1)·project + anchor_self)/n_layers``, with
    ``anchor_self`` (the anchor's cosine with itself) fixed at random init, so the null's value,
    per-seed values and prediction interval map through that increasing line exactly."""
    def f(x):
        return None if x is None else ((n_layers - 1) * float(x) + anchor_self) / n_layers
    iv = dict(project_null.get("interval") or {})
    if iv:
        iv.update(lo=f(iv.get("lo")), hi=f(iv.get("hi")), method=f"{iv.get('method', '')}; carried to the seed's "
                  f"arithmetic, ((n − 1)·x + {anchor_self:.6g})/n over the n = {n_layers} layers")
    out = {k: v for k, v in project_null.items() if k not in ("separated", "interval", "value", "per_seed")}
    return {**out, "value": f(project_null.get("value")), "interval": iv or None,
            "per_seed": [f(x) for x in project_null.get("per_seed") or []]}


def seed_definition(key: str, project: Mapping, analysis: Mapping, null_analysis: Mapping | None) -> dict:
    """One claims record of seed 004: the seed's arithmetic as the headline (exact, over every
    layer and head, anchor included; :data:`SEED_PER_LAYER`) and the project's definition
    ``project`` (the :func:`spectral_records` headline, anchor excluded), each with its
    random-init null."""
    per_layer = SEED_PER_LAYER[key](analysis["seed"])
    L, H = len(per_layer), analysis["seed"]["n_heads"]
    nulls = {}
    n = (project.get("nulls") or {}).get("random_init")
    if n and null_analysis is not None:
        anchor_self = float(SEED_PER_LAYER[key](null_analysis["seed"])[null_analysis["anchor_position"]])
        nulls["random_init"] = _seed_null(n, L, anchor_self)
    label = f"{project.get('label') or key} (seed's arithmetic: anchor included)"
    out = headline(float(per_layer.mean()), interval="exact", over=f"{L} layers × {H} heads, the anchor's own "
                   "layer included", nulls=nulls, label=label, fmt=project.get("fmt") or "+.4f", note=SEED_NOTE)
    out["project"] = dict(project)
    return out


def operator_claims(spectral: Mapping[str, Mapping[str, dict]], analyses: Mapping[str, dict],
                    null: Mapping[str, dict]) -> dict:
    """``metrics["claims"]`` records of notebook 06 for seed 004's claims: per record of
    :data:`OPERATOR_CLAIMS` and group, the seed's arithmetic as the headline with the project's
    definition under ``project`` (:func:`seed_definition`; the project's from
    :func:`spectral_records`: exact means over every layer other than the anchor and every head,
    the random-init null over its init seeds). ``analyses`` and ``null``: ``{group: analysis}``
    (trained, random init). A group without layer pairs (one layer) records nothing."""
    claims = {"qk_operator_cos": {}, "qk_spectral_cos": {}, "qk_spectral_minus_operator": {}}
    for g, recs in spectral.items():
        for record, key in OPERATOR_CLAIMS.items():
            if key in recs:
                claims[record][g] = seed_definition(key, recs[key], analyses[g], null.get(g))
    return claims


#: notebook 06's headlines of the first group -> (label, fmt, note)
FIRST_GROUP = {
    "cos_to_anchor": ("cos→anchor (first group)", "+.4f", "First attention group ({g}), the anchor left out (the "
                      "project's mean; the seed's, anchor included, is metrics.claims.qk_operator_cos); independent "
                      "random operators have cosine ≈ 0."),
    "cos_adjacent": ("cos adjacent", "+.4f", None),
    "pa_deg": ("top-{top_k} PA (deg)", ".1f", "Random subspaces of a wide space are nearly orthogonal (≈ 90°)."),
    "sign_agree": ("sign agree top-{k0}", ".3f", "The anchor layer agrees with itself (1.0) and is included, as in the "
                                                "seed; chance is 0.5."),
}


def first_group_headline(group: str, values: Mapping[str, float], samples: Mapping, null_samples: list, *,
                         k0: int | None, top_k: int) -> dict:
    """Notebook 06's headline numbers of the first attention group (:data:`FIRST_GROUP`).

    Each is a mean over every layer pair and head of the group (``values``, from its
    analysis): exact, "exact (all <n> <items>)" from ``samples`` (its
    :func:`~geolip_lib.operators.headline_samples`). The random-init null is the same mean
    on each init seed's twin (``null_samples``: one ``headline_samples`` per seed), its
    interval the 95 % prediction interval over those seeds; the sign agreement also has
    chance (0.5).
    """
    out = {}
    for key, (label, fmt, note) in FIRST_GROUP.items():
        if key not in values or values[key] is None or key not in samples:
            continue
        nulls = {}
        n = null_over_init_seeds(null_samples, key)
        if n is not None:
            nulls["random_init"] = n
        if key == "sign_agree":
            nulls["chance"] = {"value": 0.5, "interval": "exact"}
        out[key] = headline(values[key], interval="exact", over=_over(samples, key), nulls=nulls,
                            label=label.format(top_k=top_k, k0=k0), fmt=fmt,
                            note=None if note is None else note.format(g=group))
    return out


def spectral_table(records: Mapping[str, dict]) -> pd.DataFrame:
    """One row per (group, quantity) of :func:`spectral_records`: trained and random init,
    each ``value [95 % interval]`` ("–" where the group has no random-init null)."""
    rows = []
    for g, rec in records.items():
        for key, (label, _, _) in SPECTRAL_KEYS.items():
            e = rec.get(key)
            if e is None:
                continue
            n = (e.get("nulls") or {}).get("random_init")
            rows.append({"group": g, "quantity": label,
                         "trained [95 % interval]": format_value(e["value"], e.get("items_interval") or e["interval"]),
                         "random init [95 % interval]": format_value(n["value"], n.get("interval")) if n else "–"})
    return pd.DataFrame(rows)
