"""The modulator intervals as table cells, frames and claims records."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from ..metrics import intervals
from ..results import headline
from .correlation_stats import SEED_LIFT


LIFT_LABELS = {"project": "project: pairs over all entries", "seed": "seed: 3000-entry subset"}
TRAINING_LABELS = {"project": "project: no decay on the alpha logits", "seed": "seed: AdamW decay on the alpha logits"}


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


def lift_claims(lift: Mapping[str, Mapping[str, Mapping]], *, kinds: Sequence[str] = ("pearson", "spearman")) -> dict:
    """``metrics["claims"]["modulator_lift"]``: per kind, the seed's definition of the lift as
    the headline and the project's under ``"project"``.

    Seed definition: pairs drawn within the seed's 3000-entry subset (``lift[run]["seed"]``),
    on the run trained the seed's way (decay on the alpha logits, ``run = "seed"``) when it
    ran, else on the project's run (the note says which). Project definition: pairs over all
    entries on the project's run (``lift["project"]["project"]``). Values are fractions
    (1.52 is +152 %); the null "no lift" is 0.
    """
    run = "seed" if "seed" in lift else "project"
    out = {}
    for kind in kinds:
        s, p = lift[run]["seed"], lift["project"]["project"]
        note = (f"Seed definition: {s['n_pairs']} scored pairs within the seed's 3000-entry subset, modulator trained "
                + ("with the seed's weight decay on the alpha logits." if run == "seed" else
                   "without weight decay on the alpha logits (the seed-mode training run was off in this profile).")
                + f" Seed reported {SEED_LIFT[kind]:+.0%}. Lift = (mod − orig) / |orig|; the interval resamples pairs.")
        h = headline(s[kind]["value"], interval=s[kind]["interval"], fmt=".3f", nulls={"no lift": 0.0},
                     label=f"{kind.capitalize()} lift (seed definition)", note=note)
        h["project"] = headline(p[kind]["value"], interval=p[kind]["interval"], fmt=".3f", nulls={"no lift": 0.0},
                                label=f"{kind.capitalize()} lift (project definition)",
                                note=f"{p['n_pairs']} scored pairs over all entries, modulator trained without decay "
                                     "on the alpha logits.")
        h["original"], h["modulated"] = s[kind]["original"], s[kind]["modulated"]
        out[kind] = h
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
