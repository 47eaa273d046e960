"""Geometry over training: notebooks 01 and 02's headlines per checkpoint.

A params file may list checkpoints of one training run — hub revisions (``revisions: [step0,
step1000, ...]``, loaded through the ordinary hub path with ``revision:``) or local
``save_pretrained`` folders (``checkpoints: [...]``). :func:`run` loads them **one at a time**
(load, measure, drop, collect), so the memory of a trajectory is that of one checkpoint; it
records the resident memory while each is held and the process's peak.

Each checkpoint's headline is computed by the same library calls as the notebook's own
headline (:func:`embedding_values` for 01, :func:`battery_values` for 02), so the last point of
a trajectory is the number the notebook reports for that checkpoint (tested).
:func:`figure` draws the trajectory with the random-init null at step 0 and the bands of the
claims that read these headlines (:func:`claim_bands`, from ``params/claims/<name>.yaml``).
"""
from __future__ import annotations

import gc
import json
import os
import re
import resource
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import psutil

from . import metrics as M
from . import models, probes
from .claims import registry as claims_registry
from .families import catalog
from .params import ModelParams, ParamsError, checkpoint_problems, load_model_params
from .paths import ROOT
from .weights import TensorStore, run_battery
from .weights import tables as weight_tables

#: the headline keys of each notebook that a claim of the claims file reads, and that claim's id
CLAIM_OF = {"01_embedding_terrain": {"pentachoron_cv": "pentachoron_cv"},
            "02_weight_topology": {"q_sparsity": "q_sparsity", "cross_layer_adj": "cross_layer_corr"}}
_MIB = 2 ** 20


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of a trajectory: its label (folder name or revision), training step
    (the label's trailing number; its position when it has none) and the params that load it."""

    label: str
    step: int
    params: ModelParams


def _step(label: str, i: int) -> int:
    m = re.search(r"(\d+)$", label)
    return int(m.group(1)) if m else i


def checkpoints(name_or_params: Union[str, dict, ModelParams]) -> list[Checkpoint]:
    """The checkpoints a params file lists, in its order (empty: it lists none).

    ``checkpoints:`` are checked first (:func:`geolip_lib.params.checkpoint_problems`: one
    ``ParamsError`` line per folder that is missing, not a ``save_pretrained`` folder, or of
    another family). Each loads as ``source: local`` of that folder; each revision as the same
    hub id at that ``revision:`` (offline and uncached: the loader's one-line hub error)."""
    p = load_model_params(name_or_params)
    given = isinstance(name_or_params, (str, os.PathLike)) and str(name_or_params).endswith((".yaml", ".yml"))
    problems = checkpoint_problems(p, name_or_params if given else None)
    if problems:
        raise ParamsError.of(problems)
    base = {"checkpoints": [], "revisions": []}
    if p.checkpoints:
        return [Checkpoint(os.path.basename(c.rstrip("/")), _step(os.path.basename(c.rstrip("/")), i),
                           p.model_copy(update={**base, "source": "local", "local_dir": c, "id": None}))
                for i, c in enumerate(p.checkpoints)]
    return [Checkpoint(r, _step(r, i), p.model_copy(update={**base, "revision": r})) for i, r in enumerate(p.revisions)]


def embedding_values(lm, *, n_cos: int = 2000, n_simplices: int = 1000, pca_rows: Optional[int] = None,
                     seed: int = 0, n_boot: int = 1000) -> dict[str, Optional[float]]:
    """Notebook 01's headline values for ``lm``, by the calls its cells make: mean cosine
    (``cosine_stats``), PR and PR / D (``eigenspectrum``: exact on every row; a row sample:
    ``uncertainty.pr_estimate``'s bias-corrected value), pentachoron CV and mean-volume ratio
    (``pentachoron_probe``), the digits' ``|i - j|`` correlation (``digit_manifold``)."""
    E = lm.input_embeddings()
    D = E.shape[1]
    cos = M.cosine_stats(E, n_sample=n_cos, seed=seed)
    if pca_rows:
        pr = probes.uncertainty.pr_estimate(E, pca_rows, seed, n_boot=n_boot)["value"]
    else:
        pr = probes.eigenspectrum(E, max_rows=None, seed=seed)["pr"]
    pent = probes.pentachoron_probe(E, n_simplices, seed=seed, sphere=False)  # same draws: the sphere is the null's
    dig = probes.digit_manifold(E, lm.tokenizer) if lm.is_text else {}
    return {"cosine_mean": cos["mean"], "pr": pr, "pr_over_dim": pr / D, "pentachoron_cv": pent["embedding"]["cv"],
            "volume_ratio": pent["volume_ratio_gaussian"], "digit_corr": dig.get("corr_abs_diff")}


def battery_values(lm, *, device: str = "auto", thresholds: Sequence[float] = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1),
                   seed: int = 0, n_boot: int = 1000) -> dict[str, Optional[float]]:
    """Notebook 02's headline values for ``lm``: the weight battery streamed from its
    safetensors and ``weights.tables.battery_headline`` (every headline exact)."""
    store = TensorStore(lm.weights_dir)
    res = run_battery(store, cat=catalog(store, config=lm.config, family=lm.family), device=device,
                      thresholds=list(thresholds))
    summary = res.summary()
    head = weight_tables.battery_headline(summary, weight_tables.headline_items(res), None, seed=seed, n_boot=n_boot)
    return {k: h.get("value") for k, h in head.items()}


MEASURES: dict[str, Callable] = {"01_embedding_terrain": embedding_values, "02_weight_topology": battery_values}


def _rss_mib() -> float:
    return psutil.Process().memory_info().rss / _MIB


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (``getrusage``: KiB on Linux), MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(name_or_params: Union[str, dict, ModelParams], notebook: str, *, limit: Optional[int] = None,
        **kw) -> dict:
    """Notebook ``notebook``'s headline values at each checkpoint, streamed one model at a time.

    Returns ``{"notebook", "points": [{"label", "step", "values", "rss_mib", "model_mib"}], "memory"}``:
    ``rss_mib`` is the resident memory while that checkpoint is loaded and measured (flat over
    the checkpoints when nothing of an earlier one is kept: ``memory`` compares the first with the
    largest, beside one model's size ``model_mib``, and gives the process's peak); ``limit`` takes
    the first ones only.
    ``kw`` go to the notebook's measure (:data:`MEASURES`)."""
    measure = MEASURES[notebook]
    points = []
    for ck in checkpoints(name_or_params)[:limit]:
        lm = models.load(ck.params)
        values = measure(lm, **kw)
        rss = _rss_mib()
        size = sum(t.numel() * t.element_size() for t in lm.model.state_dict().values()) / _MIB
        del lm
        gc.collect()
        points.append({"label": ck.label, "step": ck.step, "values": values, "rss_mib": rss, "model_mib": size})
    rss = [p["rss_mib"] for p in points]
    memory = {"rss_first_mib": rss[0], "rss_max_mib": max(rss), "model_mib": max(p["model_mib"] for p in points),
              "n_checkpoints": len(points), "peak_rss_mib": peak_rss_mib()} if points else {}
    return {"notebook": notebook, "points": points, "memory": memory}


def peak_memory(name: str, notebook: str, n: int, **kw) -> float:
    """Peak resident memory (MiB) of a fresh process that runs :func:`run` over the first ``n``
    checkpoints of model ``name``: run for ``n = 1`` and for all of them, the two show whether
    memory grows with the number of checkpoints (it should not: one model at a time)."""
    code = ("import json, sys; from geolip_lib import trajectory as t; a = json.loads(sys.argv[1]); "
            "r = t.run(a['name'], a['notebook'], limit=a['n'], **a['kw']); print(json.dumps(r['memory']['peak_rss_mib']))")
    arg = json.dumps({"name": name, "notebook": notebook, "n": int(n), "kw": kw})
    out = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"peak-memory probe of {name} ({n} checkpoints) failed: "
                           f"{(out.stderr.strip().splitlines() or ['no output'])[-1]}")
    return float(out.stdout.strip().splitlines()[-1])


def claim_bands(notebook: str, claims: Any = None) -> dict[str, dict]:
    """``{headline key: {"claim", "title", "lo", "hi"}}``: the band each claim of the claims file
    (default seed 001) puts on a headline of ``notebook`` (its first reading recorded by that
    notebook; ``at_least`` / ``at_most`` leave the other side open: ``None``)."""
    cs = claims_registry.load(claims)
    out = {}
    for key, cid in CLAIM_OF.get(notebook, {}).items():
        if cid not in cs.ids:
            continue
        c = cs.claim(cid)
        form = next((f for f in c.forms if f.notebook == notebook), None)
        if form is None or form.rule.kind not in ("band", "at_least", "at_most", "all_within", "equals"):
            continue
        out[key] = {"claim": cid, "title": f"{c.title} ({c.seed_value})", "lo": form.rule.lo, "hi": form.rule.hi}
    return out


#: readable names of the headline keys, where a notebook's own headline (its ``label``) is not at hand
NAMES = {"cosine_mean": "mean cosine", "pr": "participation ratio", "pr_over_dim": "PR / D",
         "pentachoron_cv": "pentachoron CV", "volume_ratio": "volume ratio", "digit_corr": "digit |i − j| correlation",
         "q_sparsity": "Q sparsity", "cross_layer_adj": "cross-layer correlation"}
#: what the trajectory table's values are
TABLE_NOTE = ("One row per checkpoint: each headline by the notebook's own calls, a point value (the notebook's "
              "intervals are for its final model; the kind says how each was computed). The random-init row is the "
              "notebook's null, value [95 % prediction interval over 5 seeds].")


def _label(key: str, headline: Optional[Mapping]) -> str:
    return ((headline or {}).get(key) or {}).get("label") or NAMES.get(key) or key.replace("_", " ")


def _kind(key: str, headline: Optional[Mapping]) -> str:
    h = (headline or {}).get(key) or {}
    iv = h.get("interval")
    kind = h.get("kind") or (iv.get("kind") if isinstance(iv, Mapping) else None)
    if kind is None and isinstance(iv, Mapping):
        kind = "exact" if iv.get("lo") is not None and iv.get("lo") == iv.get("hi") == h.get("value") else "sampled"
    return str(kind).replace("_", " ") if kind else ""


def figure(traj: Mapping, headline: Optional[Mapping] = None, bands: Optional[Mapping] = None, title: str = ""):
    """The trajectory: one panel per headline key (its readable name), value against training step,
    the random-init null of the notebook's headline (``headline[key]["nulls"]["random_init"]``: its
    value and 95 % prediction interval) at step 0, and each claim's band shaded. One legend for the
    figure, below the panels, so that it covers no data."""
    pts = traj["points"]
    steps = np.array([p["step"] for p in pts], dtype=float)
    # checkpoints whose names carry no step (rxnfp's pretrained -> fine-tuned folders): drawn at their
    # positions, named on the axis, with the random-init null one place before the first (not on it)
    positional = not any(re.search(r"(\d+)$", str(p.get("label", ""))) for p in pts)
    null_x = -1.0 if positional else 0.0
    keys = [k for k in pts[0]["values"] if any(p["values"].get(k) is not None for p in pts)]
    ncol = min(3, len(keys))
    nrow = -(-len(keys) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.0 * nrow + 0.6), squeeze=False)
    legend: dict[str, Any] = {}
    for ax, key in zip(axes.flat, keys):
        y = np.array([np.nan if p["values"].get(key) is None else p["values"][key] for p in pts], dtype=float)
        (line,) = ax.plot(steps, y, "o-", color="C0")
        legend.setdefault("checkpoint", line)
        null = ((headline or {}).get(key) or {}).get("nulls", {}).get("random_init")
        if null and null.get("value") is not None:
            iv = null.get("interval")
            lo, hi = (iv.get("lo"), iv.get("hi")) if isinstance(iv, Mapping) else (None, None)
            err = None if lo is None else [[null["value"] - lo], [hi - null["value"]]]
            legend.setdefault("random-init null" + ("" if positional else " (step 0)"),
                              ax.errorbar([null_x], [null["value"]], yerr=err, fmt="s", color="C3", capsize=4))
        band = (bands or {}).get(key)
        if band:
            lo = band["lo"] if band["lo"] is not None else min(np.nanmin(y), band["hi"])
            hi = band["hi"] if band["hi"] is not None else max(np.nanmax(y), band["lo"])
            legend.setdefault(f"claim: {band['title']}", ax.axhspan(lo, hi, color="C2", alpha=0.18))
        ax.set_title(_label(key, headline), fontsize=10)
        if positional:
            ax.set_xticks([null_x, *range(len(pts))], ["random init", *_short_labels([p["label"] for p in pts])],
                          rotation=20, fontsize=7)
            ax.set_xlabel("checkpoint (params file's order)")
        else:
            ax.set_xlabel("training step")
        if not positional and steps.max() > 0 and steps[steps > 0].min() * 50 < steps.max():
            ax.set_xscale("symlog", linthresh=steps[steps > 0].min())
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    fig.suptitle(title or f"{traj['notebook']}: headlines over training ({len(pts)} checkpoints)")
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=min(3, len(legend)), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.6 / (3.0 * nrow + 0.6) + 0.02, 1, 1))
    return fig


def _short_labels(labels: Sequence[str]) -> list[str]:
    """Checkpoint labels without the prefix they all share (``rxnfp-bert-``), for tick labels."""
    labels = [str(x) for x in labels]
    pre = os.path.commonprefix(labels) if len(labels) > 1 else ""
    pre = pre[: pre.rfind("-") + 1] if "-" in pre else ""
    return [x[len(pre):] or x for x in labels]


def table(traj: Mapping, headline: Optional[Mapping] = None):
    """The trajectory as a frame: one row per checkpoint (its label, training step, each headline
    under its readable name and kind, the resident memory while it was held), then the
    random-init null of each headline (``value [95 % interval]``) where the notebook recorded one."""
    pts = traj["points"]
    keys = list(dict.fromkeys(k for p in pts for k in p["values"]))
    col = {k: _label(k, headline) + (f" ({_kind(k, headline)})" if _kind(k, headline) else "") for k in keys}
    rows = [{"checkpoint": p["label"], "training step": p["step"], **{col[k]: p["values"].get(k) for k in keys},
             "resident memory (MiB)": round(p["rss_mib"], 1) if p.get("rss_mib") is not None else None} for p in pts]
    nulls = {k: ((headline or {}).get(k) or {}).get("nulls", {}).get("random_init") for k in keys}
    if any(n and n.get("value") is not None for n in nulls.values()):
        rows.append({"checkpoint": "random init (null)", "training step": None,
                     **{col[k]: (M.intervals.format_value(n["value"], n.get("interval")) if n and n.get("value")
                                 is not None else None) for k, n in nulls.items()},
                     "resident memory (MiB)": None})
    return pd.DataFrame(rows, columns=["checkpoint", "training step", *col.values(), "resident memory (MiB)"])


def section(job, lm, notebook: str, headline: Optional[Mapping], title: str, **kw) -> Optional[dict]:
    """Notebooks 01 and 02's "Geometry over training" section: with checkpoints in ``lm``'s params
    file, :func:`run` (``kw`` are the notebook's sample sizes), its table and its key figure
    through ``job``; otherwise one line saying why it does not apply. The trajectory, or None."""
    if not checkpoints(lm.params):
        print("Geometry over training: not applicable — the params file lists no checkpoints "
              "(checkpoints: or revisions:).")
        return None
    traj = run(lm.params, notebook, **kw)
    job.table(table(traj, headline), caption="Headlines per checkpoint (resident memory while each is held); "
              + TABLE_NOTE, index=False)
    job.figure(figure(traj, headline, claim_bands(notebook), title=title), "trajectory", key=True)
    return traj


__all__ = ["CLAIM_OF", "NAMES", "TABLE_NOTE", "Checkpoint", "MEASURES", "battery_values", "checkpoints", "claim_bands",
           "embedding_values", "figure", "peak_memory", "peak_rss_mib", "run", "section", "table"]
