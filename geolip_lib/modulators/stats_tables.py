"""The modulator intervals as table cells, frames and claims records."""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..metrics import intervals
from ..results import headline
from .correlation_stats import SEED_LIFT
from .matrix_stats import cv_interval
from .pipeline_relational import per_token_cosines


LIFT_LABELS = {"project": "project: pairs over all entries", "seed": "seed: 3000-entry subset"}
TRAINING_LABELS = {"project": "project: shifted labels, no decay on the alpha logits",
                   "seed": "seed §9 as written: unshifted (leaky) target, decay on the alpha logits"}
#: seed 001's "universal band" of the pentachoron CV (the summary: "CV stayed in universal band")
SEED_CV_BAND = (0.20, 0.23)


def lift_frame(lift: Mapping[str, Mapping[str, Mapping]], seed_values: Mapping[str, float] = SEED_LIFT):
    """One row per (training run, pair definition) of ``lift[run][definition]`` =
    :func:`modulator_lift` output: the lift and its interval per kind, the two correlations,
    and the seed's reported lift beside them (columns ``<kind>_lift``, ``<kind>_lo``, ``<kind>_hi``
    for plots, ``<Kind> lift [95 %]`` formatted)."""
    rows = []
    for run, by_def in lift.items():
        for defn, res in by_def.items():
            row = {"training": TRAINING_LABELS.get(run, run), "pairs": LIFT_LABELS.get(defn, defn),
                   "n_pairs": res["n_pairs"]}
            for kind in (k for k in ("pearson", "spearman") if k in res):
                r = res[kind]
                row.update({f"{kind}_lift": r["value"], f"{kind}_lo": r["interval"].lo, f"{kind}_hi": r["interval"].hi,
                            f"{kind.capitalize()} lift [95 %]": iv_text(r["value"], r["interval"]),
                            f"{kind} orig → mod": f"{r['original']:.4f} → {r['modulated']:.4f}",
                            f"seed's {kind} lift": seed_values.get(kind)})
            rows.append(row)
    return pd.DataFrame(rows)


def _lift_headline(res: Mapping, kind: str, run: str, defn: str) -> dict:
    r = res[kind]
    h = headline(r["value"], interval=r["interval"], fmt=".3f", nulls={"no lift": 0.0},
                 label=f"{kind.capitalize()} lift ({TRAINING_LABELS.get(run, run)}; {LIFT_LABELS.get(defn, defn)})",
                 note=f"{res['n_pairs']} scored pairs; training: {TRAINING_LABELS.get(run, run)}; pairs: "
                      f"{LIFT_LABELS.get(defn, defn)}. Lift = (mod − orig) / |orig|; the interval resamples pairs.")
    h.update(original=r["original"], modulated=r["modulated"], training=run, pairs=defn)
    return h


def lift_claims(lift: Mapping[str, Mapping[str, Mapping]], *, kinds: Sequence[str] = ("pearson", "spearman"),
                seed_mode_reason: str | None = None) -> dict:
    """``metrics["claims"]["modulator_lift"]``: per kind (``"pearson"``, ``"spearman"``) one
    headline, the lift **as the seed measured it**, with the project's beside it.

    - the headline itself: the seed-mode run (seed §9 as written: unshifted target, decay on
      the alpha logits; ``lift["seed"]``) on pairs within the seed's 3000-entry subset
      (``["seed"]``), with ``as_seed_measured: True``. When the seed-mode run could not be
      made (``seed_mode_reason``: off in the profile, or a family §9 did not train), the
      project's run on the seed's pairs, with ``as_seed_measured: False`` and the reason in
      the note;
    - ``"project"``: the corrected run on pairs over all entries (``lift["project"]["project"]``);
    - ``"variants"``: every (training, pairs) combination computed, keyed
      ``"<training>_training|<pairs>_pairs"`` (training, pairs in {"seed", "project"}).

    Each headline carries ``original`` / ``modulated`` (the two correlations), ``training``
    and ``pairs``. Values are fractions (1.52 is +152 %); the null "no lift" is 0.
    """
    run = "seed" if "seed" in lift else "project"
    out = {}
    for kind in kinds:
        h = _lift_headline(lift[run]["seed"], kind, run, "seed")
        h["as_seed_measured"] = run == "seed"
        h["label"] = f"{kind.capitalize()} lift (as the seed measured)" if run == "seed" else \
            f"{kind.capitalize()} lift (seed's pairs, project training)"
        h["note"] = ((f"As the seed measured: seed §9's training as written (unshifted target, which leaks the answer; "
                      f"decay on the alpha logits), {lift[run]['seed']['n_pairs']} scored pairs within the seed's "
                      "3000-entry subset." if run == "seed" else
                      f"Not the seed's training ({seed_mode_reason or 'the seed-mode run was not made'}): the project's "
                      f"run on {lift[run]['seed']['n_pairs']} scored pairs within the seed's 3000-entry subset.")
                     + f" Seed reported {SEED_LIFT[kind]:+.0%}. Lift = (mod − orig) / |orig|; the interval resamples "
                     "pairs.")
        h["project"] = _lift_headline(lift["project"]["project"], kind, "project", "project")
        h["project"]["label"] = f"{kind.capitalize()} lift (project definition)"
        h["variants"] = {f"{r}_training|{d}_pairs": _lift_headline(res, kind, r, d)
                         for r, by_def in lift.items() for d, res in by_def.items()}
        out[kind] = h
    return out


def lift_cv_claims(reps: Mapping[str, Any], n_simplices: int, *, seed: int = 0,
                   band: tuple = SEED_CV_BAND) -> dict:
    """``metrics["claims"]["modulator_lift_cv"]``: the pentachoron CV of the encoder
    representations (mean-pooled definitions, seed §9's "CV stayed in the universal band")
    per run, ``reps = {"original": X, "project": X, "seed": X}`` (any subset).

    Each headline: the CV with its bootstrap over the simplices
    (:func:`~geolip_lib.modulators.stats.cv_interval`), the unmodulated encoder's CV as its
    null (a modulator that changed nothing keeps it), ``band`` (the seed's 0.20–0.23),
    ``in_band`` and ``in_band_interval`` (the band verdict over CV resamples).
    """
    target, tol = (band[0] + band[1]) / 2, (band[1] - band[0]) / 2
    cvs = {k: cv_interval(X, n_simplices, seed=seed, cv_target=target, cv_tolerance=tol) for k, X in reps.items()}
    out = {}
    for k, c in cvs.items():
        nulls = ({"unmodulated": {"value": cvs["original"]["cv"], "interval": cvs["original"]["interval"]}}
                 if k != "original" and "original" in cvs else {})
        h = headline(c["cv"], interval=c["interval"], fmt=".3f", nulls=nulls,
                     label=f"pentachoron CV of encoder representations ({k})",
                     note=f"std/mean of {n_simplices} random pentachoron volumes of the mean-pooled definition "
                          f"representations ({c['n_valid']} non-degenerate); seed's band {band[0]:.2f}–{band[1]:.2f}.")
        h.update(band=list(band), in_band=c["in_band"], in_band_interval=c["in_band_interval"], run=k)
        out[k] = h
    return out


#: a text with at least this many word bigrams, fewer than MIN_DISTINCT_BIGRAMS of them distinct, is a loop
MIN_BIGRAMS = 3
MIN_DISTINCT_BIGRAMS = 0.7


def text_degeneracy(text: Any) -> Optional[str]:
    """Why a generated text is degenerate, or None when it is not ("coherence" read from
    the text as well as from a pooled cosine).

    Words are the ``\\w+`` runs of the lower-cased text. Degenerate: **empty** (no word: "", "...",
    blank lines), or a **repetition loop**: at least :data:`MIN_BIGRAMS` word bigrams of which
    fewer than :data:`MIN_DISTINCT_BIGRAMS` (70 %) are distinct (distinct-2, Li et al. 2016). A
    phrase of p ≥ 2 words said twice has p / (2p − 1) distinct bigrams, below 70 % ("The cat is a
    cat. The cat is a cat.": 5 of 9, 56 %); an English sentence that repeats no word pair has
    100 %. Nothing is said about sense or grammar: only these two failures are caught."""
    words = re.findall(r"\w+", str(text or "").lower())
    if not words:
        return "empty (no word)"
    bigrams = list(zip(words, words[1:]))
    distinct = len(set(bigrams))
    if len(bigrams) >= MIN_BIGRAMS and distinct < MIN_DISTINCT_BIGRAMS * len(bigrams):
        return (f"a repetition loop ({distinct} distinct of {len(bigrams)} word bigrams, "
                f"{distinct / len(bigrams):.0%} < {MIN_DISTINCT_BIGRAMS:.0%})")
    return None


def generation_coherence(rows: Sequence[Mapping], run: str = "") -> Optional[dict]:
    """``<run>_generation_coherent``: coherence read from the greedy generations' text.

    Of the prompts whose unmodulated generation is not degenerate (:func:`text_degeneracy`),
    the fraction whose modulated generation is unchanged or not degenerate either, exact over
    those prompts (null "unmodulated (identity)": 1, the modulator that changes nothing). A
    prompt whose unmodulated generation is itself degenerate has no coherence to preserve and
    is left out (``n_testable``). ``per_prompt`` lists each prompt's texts' degeneracy. None when
    the rows carry no texts (``original`` / ``modulated``)."""
    if not rows or not all("original" in r and "modulated" in r for r in rows):
        return None
    per = []
    for r in rows:
        od, md = text_degeneracy(r["original"]), text_degeneracy(r["modulated"])
        per.append({"prompt": r.get("prompt"), "identical": bool(r.get("identical")), "original_degenerate": od,
                    "modulated_degenerate": md, "testable": od is None,
                    "coherent": bool(r.get("identical")) or md is None})
    test = [p for p in per if p["testable"]]
    value = float(np.mean([p["coherent"] for p in test])) if test else None
    broken = [p for p in test if not p["coherent"]]
    note = ("Coherence read from the text: of the prompts whose unmodulated greedy generation is coherent, "
            "the fraction whose modulated generation is unchanged or coherent too. A text is not coherent when it "
            f"has no word, or is a repetition loop (at least {MIN_BIGRAMS} word bigrams, fewer than "
            f"{MIN_DISTINCT_BIGRAMS:.0%} of them distinct); sense and grammar are not judged. "
            f"{len(per) - len(test)} of {len(per)} prompts left out (their unmodulated generation is degenerate)."
            + (" Broken: " + "; ".join(f"{p['prompt']!r}: {p['modulated_degenerate']}" for p in broken[:4]) + "."
               if broken else "")
            + ("" if test else " No prompt can test it: every unmodulated generation is degenerate."))
    h = headline(value, interval="exact" if test else None, over=f"{len(test)} prompts", fmt=".2f",
                 nulls={"unmodulated (identity)": 1.0},
                 label=f"prompts whose modulated generation stays coherent ({run})" if run else
                 "prompts whose modulated generation stays coherent", note=note)
    h.update(per_prompt=per, n_prompts=len(per), n_testable=len(test), n_broken=len(broken))
    return h


def coherence_claims(preservation: Mapping[str, Any], generation: Mapping[str, Sequence[Mapping]], *,
                     seed: int = 0, why_no_generation: str | None = None) -> dict:
    """``metrics["claims"]["modulator_lift_coherence"]``: what "coherence preserved" can be
    measured by, per run (``"project"``, ``"seed"``).

    - ``"<run>_preservation"``: mean per-token cos(original, modulated) of the encoder
      representations, bootstrap over the entries (null: 1, the unmodulated encoder);
    - ``"<run>_generation_identical"``: the fraction of the prompts whose greedy generation
      is unchanged by the trained modulator, exact over the prompts (the seed printed them
      side by side and called coherence preserved by reading them), with
      ``token_diffs`` / ``n_tokens`` summed over the prompts. Absent for models that do not
      generate (``generation_applies: False`` and the reason under ``"generation"``);
    - ``"<run>_generation_coherent"``: the text read too (:func:`generation_coherence`): of the
      prompts whose unmodulated generation is coherent, the fraction whose modulated one is
      unchanged or coherent (not empty, no repetition loop: :func:`text_degeneracy`), exact over
      those prompts (null: 1, the identity). A pooled cosine of 0.99 with empty or looping
      generations is no preserved coherence.
    """
    out: dict = {}
    for run, cos in preservation.items():
        cos = np.asarray(cos, dtype=np.float64)
        out[f"{run}_preservation"] = headline(float(cos.mean()), interval=intervals.bootstrap(cos, seed=seed,
                                              what="entries"), fmt=".4f", nulls={"unmodulated (identity)": 1.0},
                                              label=f"per-token cos(original, trained) ({run})")
    for run, rows in generation.items():
        if not rows:
            continue
        ident = [bool(r["identical"]) for r in rows]
        h = headline(float(np.mean(ident)), interval="exact", over=f"{len(rows)} prompts", fmt=".2f",
                     label=f"prompts with unchanged greedy generation ({run})",
                     note="Greedy decoding (the seed passed temperature 0.0), before vs after training.")
        h.update(token_diffs=int(sum(r["token_diffs"] for r in rows)), n_tokens=int(sum(r["n_tokens"] for r in rows)))
        out[f"{run}_generation_identical"] = h
        coh = generation_coherence(rows, run)
        if coh is not None:
            out[f"{run}_generation_coherent"] = coh
    out["generation"] = {"applies": bool(any(generation.values())), "reason": why_no_generation}
    return out


def relational_frame(relational: Mapping[str, Any], ivs: Mapping[str, Any], names: Sequence[str] | None = None):
    """One row per representation: Pearson with its interval (``pearson``, ``lo``, ``hi`` and
    the formatted ``Pearson [95 %]``), Spearman, gradient, and ΔPearson against the
    reference with its interval.

    Parameters
    ----------
    relational : dict
        :func:`~geolip_lib.modulators.relational_comparison` output.
    ivs : dict
        :func:`relational_intervals` output on the same pairs.
    names : sequence of str, optional
        Rows (default: every name in ``ivs``).
    """
    rows = {}
    for name in names or list(ivs):
        r, iv = relational[name], ivs[name]
        d_iv = iv.get("delta_pearson")
        rows[name] = {"pearson": r["pearson"], "lo": iv["pearson"].lo, "hi": iv["pearson"].hi,
                      "Pearson [95 %]": iv_text(r["pearson"], iv["pearson"]), "spearman": r["spearman"],
                      "gradient": r["gradient"],
                      "ΔPearson [95 %]": "–" if d_iv is None else iv_text(r.get("delta_pearson"), d_iv)}
    return pd.DataFrame(rows).T.astype({"pearson": float, "lo": float, "hi": float, "spearman": float,
                                        "gradient": float})


def iv_text(value: Any, interval: Any) -> str:
    """``value [lo, hi]`` at the precision the interval supports (for table cells)."""
    return intervals.format_value(value, interval)


def modulator_claims(lift: Mapping[str, Mapping[str, Mapping]], original, runs: Mapping[str, Any],
                     generations: Mapping[str, Sequence[Mapping]], n_simplices: int, *, seed: int = 0,
                     seed_mode_reason: str | None = None, why_no_generation: str | None = None) -> dict:
    """Notebook 09's ``metrics["claims"]``: the lift (:func:`lift_claims`) and the rest of
    the seed's claim, ``modulator_lift_cv`` (:func:`lift_cv_claims` of ``original`` and each
    run's representations) and ``modulator_lift_coherence`` (:func:`coherence_claims` of the
    per-token cosines and ``generations``)."""
    cos = {run: per_token_cosines(original, R) for run, R in runs.items()}
    return {"modulator_lift": lift_claims(lift, seed_mode_reason=seed_mode_reason),
            "modulator_lift_cv": lift_cv_claims({"original": original, **runs}, n_simplices, seed=seed),
            "modulator_lift_coherence": coherence_claims(cos, generations, seed=seed,
                                                         why_no_generation=why_no_generation)}


def lift_headlines(claims: Mapping[str, Any]) -> dict:
    """Notebook 09's headline entries from its claims: ``<kind>_lift`` (as the seed measured,
    without the variants), ``<kind>_lift_project`` and ``encoder_cv_trained``."""
    out = {}
    for k, h in claims["modulator_lift"].items():
        out[f"{k}_lift"] = {f: v for f, v in h.items() if f != "variants"}
        out[f"{k}_lift_project"] = h["project"]
    out["encoder_cv_trained"] = claims["modulator_lift_cv"]["project"]
    return out
