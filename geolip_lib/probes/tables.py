"""DataFrames of notebook 01's probe results, for ``job.table`` (one row per table or item).

Each function takes what a probe returned (and, where there is one, its 95 % interval)
and returns a :class:`pandas.DataFrame`; numbers stay numbers (the runtime formats them),
and an interval becomes a ``value [lo, hi]`` string printed at the precision it supports.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from ..metrics.intervals import format_value


def census_frame(census: Mapping[str, Any], top: int = 12) -> pd.DataFrame:
    """Parameter count and share of the ``top`` largest components (``parameter_census``)."""
    comps = pd.Series(census["components"], name="params", dtype="int64")
    df = comps.to_frame().assign(share=comps / census["total"])
    df.index.name = "component"
    return df.head(top)


def tying_frame(tying: Mapping[str, Any]) -> pd.DataFrame:
    """``weight_tying`` as one row: names sharing the input embedding, output tied / equal."""
    if not tying.get("applicable", True):
        return pd.DataFrame({"weight tying": [tying.get("reason", "not applicable")]})
    return pd.DataFrame({"shares storage with the input embedding": [", ".join(tying["shared_names"])],
                         "output tied": [tying["output_tied"]], "output equal": [tying["output_equal"]]})


def norm_frame(stats: Mapping[str, Any]) -> pd.DataFrame:
    """Row-norm summary (``norm_stats``): mean, std, min, percentiles, max, zero rows, per-dim stats."""
    n = stats["norm"]
    row = {"mean": n["mean"], "std": n["std"], "min": n["min"],
           **{f"p{p}": v for p, v in n["percentiles"].items()}, "max": n["max"], "zero rows": stats["n_zero"]}
    row.update({k.replace("_", " "): v for k, v in stats["per_dim"].items()})
    return pd.DataFrame([row], index=["row norm"])


def cosine_frame(stats: Mapping[str, Mapping], intervals: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Pairwise-cosine distribution per table (``cosine_stats``), mean with its interval."""
    rows = {}
    for name, c in stats.items():
        iv = (intervals or {}).get(name)
        rows[name] = {"mean [95 % interval]": format_value(c["mean"], iv), "std": c["std"],
                      **{f"p{p}": v for p, v in c["percentiles"].items()}, "pairs": c["n_pairs"]}
    return pd.DataFrame(rows).T.infer_objects()


def near_constants_frame(stats: Mapping[str, Mapping]) -> pd.DataFrame:
    """Share of pairwise cosines within ``±tol`` of each named constant, per table."""
    rows = {name: {f"{k} ({v['value']:g})": v["frac_within"] for k, v in c["near_constants"].items()}
            for name, c in stats.items()}
    return pd.DataFrame(rows).T


def eigen_frame(eig: Mapping[str, Mapping], intervals: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """PR (with interval), PR / D, entropy effective dimension, dims per variance, per table."""
    rows = {}
    for name, e in eig.items():
        iv = (intervals or {}).get(name)
        rows[name] = {"PR [95 % interval]": format_value(e["pr"], iv), "PR / D": e["pr_over_dim"],
                      "effective dim": e["effective_dimension"], "top share": e["top_fraction"],
                      **{f"dims {float(f):.0%}": d for f, d in e["dims_for_variance"].items()},
                      "rows": e["n_rows_used"]}
    return pd.DataFrame(rows).T.infer_objects()


def pentachoron_frame(summary: Mapping[str, Any], intervals: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Pentachoron CV (with interval), valid simplices and mean volume per table (``pentachoron_probe``)."""
    rows = {}
    for name, r in summary.items():
        if not isinstance(r, Mapping):
            continue
        iv = (intervals or {}).get(name)
        rows[name] = {"CV [95 % interval]": format_value(r["cv"], iv), "rows": r.get("n_rows", ""),
                      "valid": r["n_valid"], "sampled": r["n_sampled"],
                      "exact": "every subset" if r.get("exact") else "", "mean volume": r["mean"],
                      "std volume": r["std"], "note": r["reason"] or ""}
    return pd.DataFrame(rows).T.infer_objects()


def digits_frame(digits: Mapping[str, Mapping], intervals: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """``|i - j|`` correlation (with interval), adjacent / non-adjacent mean cosine, per table."""
    rows = {}
    for name, d in digits.items():
        if not d.get("applicable"):
            continue
        iv = (intervals or {}).get(name)
        rows[name] = {"|i-j| corr [95 % interval]": format_value(d["corr_abs_diff"], iv),
                      "adjacent": d["adjacent_mean"], "non-adjacent": d["nonadjacent_mean"], "gap": d["gap"]}
    return pd.DataFrame(rows).T.infer_objects()


def category_frame(cat: Mapping[str, Any]) -> pd.DataFrame:
    """Single-token words, intra-category cosine and lift per category (``category_probe``)."""
    df = pd.DataFrame(cat["categories"]).T[["n", "intra_cos", "lift"]].infer_objects()
    return df.rename(columns={"n": "words", "intra_cos": "intra cosine"})


def _shown(token: str) -> str:
    """A token string for an HTML table: angle brackets as ‹ › (``</s>`` would vanish as a tag)."""
    return str(token).replace("<", "‹").replace(">", "›")


def token_range_frame(probe: Mapping[str, Any], intervals: Mapping[str, Mapping[str, Any]] | None = None,
                      random_init: Mapping[str, Any] | None = None, show: int = 6) -> pd.DataFrame:
    """Seed 001 §13a's token categories (``token_range_probe``), both definitions.

    Rows ``(definition, category)``; columns: ids, how many are the named characters, the
    intra-category cosine with its interval (``intervals[definition][category]``), its std
    over pairs, its lift over the global mean, the same ids' cosine in the random-init
    table (``random_init``: that table's ``token_range_probe``), and the first tokens
    (angle brackets shown as ‹ ›, so that ``<extra_id_0>`` or ``a</w>`` survive an HTML
    table).
    """
    rows = {}
    for definition, cats in probe["definitions"].items():
        for name, r in cats.items():
            iv = ((intervals or {}).get(definition) or {}).get(name)
            null = (((random_init or {}).get("definitions") or {}).get(definition) or {}).get(name) or {}
            rows[(definition, name)] = {
                "ids": r["n"], "named chars": "–" if r["named_chars"] is None else f"{r['named_chars']} of {r['n']}",
                "intra cosine [95 % interval]": format_value(r["intra_cos"], iv) if r["intra_cos"] is not None
                else r.get("reason", "–"),
                "std": r["intra_std"], "lift": r["lift"], "random init": null.get("intra_cos"),
                "first tokens": _shown(" ".join(r["tokens"][:show]))}
    df = pd.DataFrame(rows).T.infer_objects()
    df.index.names = ["definition", "category"]
    return df


def _at(seq: Sequence[Any] | None, k: int) -> Any:
    return seq[k] if seq is not None and k < len(seq) else None


def encoder_decoder_frame(result: Mapping[str, Any], intervals: Sequence[Any] | None = None,
                          random_init: Mapping[str, Any] | None = None,
                          random_init_intervals: Sequence[Any] | None = None) -> pd.DataFrame:
    """Encoder–decoder cosine per layer (``encoder_decoder_cosine``): positions compared, the
    mean over positions with its interval (``intervals``, one per layer), the seed's
    first-5 mean, and the random-init model's mean (``random_init``: its
    ``encoder_decoder_cosine``) with its interval."""
    null = {b["layer"]: (b, _at(random_init_intervals, k)) for k, b in enumerate((random_init or {}).get("by_layer", []))}
    rows = {}
    for k, b in enumerate(result["by_layer"]):
        row = {"positions": b["n_positions"], "mean [95 % interval]": format_value(b["mean"], _at(intervals, k)),
               "seed: first 5": b["seed_mean"]}
        if b["layer"] in null:
            row["random init [95 % interval]"] = format_value(null[b["layer"]][0]["mean"], null[b["layer"]][1])
        rows[f"layer {b['layer']}"] = row
    return pd.DataFrame(rows).T.infer_objects()


def encoder_decoder_positions_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """Encoder–decoder cosine at each position (rows ``t``, with the source and target
    tokens there, angle brackets as ‹ ›) and layer (columns), as seed 001 §1 printed it."""
    n = max(b["n_positions"] for b in result["by_layer"])
    df = pd.DataFrame({"source token": [_shown(t) for t in result["source_tokens"][:n]],
                       "target token": [_shown(t) for t in result["target_tokens"][:n]]})
    for b in result["by_layer"]:
        df[f"layer {b['layer']}"] = pd.Series(b["cosine"], dtype=float)
    df.index.name = "position"
    return df


def layers_frame(layers: Mapping[str, Mapping]) -> pd.DataFrame:
    """Per-layer norm and within-sequence cosine (``layer_geometry``), every stack, long format."""
    cols = ["layer", "mean_norm", "std_norm", "mean_cos", "std_cos"]
    parts = [pd.DataFrame({c: g[c] for c in cols}).assign(stack=stack) for stack, g in layers.items()]
    df = pd.concat(parts, ignore_index=True)[["stack", *cols]]
    return df.rename(columns=lambda c: c.replace("_", " "))


def special_tokens_frame(sp: Mapping[str, Any]) -> pd.DataFrame:
    """Id, norm and norm z-score of each special token (``special_tokens``)."""
    df = pd.DataFrame(sp["tokens"]).T.infer_objects()
    df.index.name = "token"
    return df.rename(columns={"norm_z": "norm z"})


def position_bias_frame(rpb: Mapping[str, Any]) -> pd.DataFrame:
    """Shape and value range of each relative-position-bias table (``relative_position_bias``)."""
    rows = {name: {"buckets": t["shape"][0], "heads": t["shape"][1], "mean": t["mean"], "std": t["std"],
                   "min": t["min"], "max": t["max"]} for name, t in rpb["tables"].items()}
    return pd.DataFrame(rows).T.infer_objects()


def distances_frame(dist: Mapping[str, Any]) -> pd.DataFrame:
    """Pairwise Euclidean distance summary (``euclidean_distances``), one row."""
    keys = ("mean", "std", "cv", "min", "median", "max", "mean_over_sqrt_dim", "n_pairs")
    return pd.DataFrame([{k.replace("_", " "): dist[k] for k in keys}], index=["distance"])


def embed_vs_output_frame(evo: Mapping[str, Any]) -> pd.DataFrame:
    """Per-token input/output cosine summary and Frobenius norms (``embed_vs_output``), one row."""
    c, f = evo["per_token_cosine"], evo["frobenius"]
    row = {"cosine mean": c["mean"], "cosine std": c["std"], "cosine min": c["min"], "cosine max": c["max"],
           "‖E‖": f["embed"], "‖O‖": f["output"], "‖E − O‖ / ‖E‖": f["relative"]}
    return pd.DataFrame([row], index=["input vs output"])


def vision_frame(vis: Mapping[str, Mapping]) -> pd.DataFrame:
    """PR, its Gaussian null, mean cosine and pentachoron CV of each vision-tower table."""
    rows = {name: {"shape": " x ".join(map(str, e["shape"])), "PR": e["pr"], "PR gaussian": e["pr_gaussian"],
                   "cosine mean": e["cosine"]["mean"],
                   "pentachoron CV": (e["pentachoron"] or {}).get("cv")} for name, e in vis.items()}
    return pd.DataFrame(rows).T.infer_objects()


__all__ = ["category_frame", "census_frame", "cosine_frame", "digits_frame", "distances_frame",
           "eigen_frame", "embed_vs_output_frame", "encoder_decoder_frame",
           "encoder_decoder_positions_frame", "layers_frame", "near_constants_frame",
           "norm_frame", "pentachoron_frame", "position_bias_frame", "special_tokens_frame", "token_range_frame",
           "tying_frame", "vision_frame"]
