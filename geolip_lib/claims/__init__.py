"""Seed 001's "universal constants", tested: a registry of claims, verdict rules, evaluation.

Seed 001 ends with a summary table of "universal constants" and its best modulator result.
Each claim is measured by one notebook, which records it in its ``metrics.json`` under
``metrics["claims"][<claim id>][<scope>]``: a :func:`geolip_lib.results.headline` dict of
the quantity **in the seed's definition** (value, 95 % interval, nulls), optionally with
``"project"`` (the project's corrected definition, shown beside it) and ``"per_layer"``.

:func:`evaluate` reads every job of a report root and gives, per claim and model/scope,
the seed's value, the measured value with its interval, the nulls that bear on the claim
and a verdict:

* **held** — the interval satisfies the claim's rule (:class:`Rule`);
* **not held** — the interval contradicts it;
* **not testable on this profile** — the job or model is missing, the quantity does not
  apply to the model (no cross-attention, no relative position bias), or the interval
  straddles the rule's threshold so that this sample size cannot decide.

A claim's overall verdict is taken over the seed's own models only; the other models
(all-MiniLM-L6-v2, the tiny random models of the demo) are *stand-ins*: their verdicts
say whether the property holds for them, not whether the seed's claim about its models
holds. :func:`required_jobs` lists the jobs a profile needs to test every claim.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from ..metrics.intervals import format_value

HELD, NOT_HELD, NOT_TESTABLE = "held", "not held", "not testable on this profile"
VERDICTS = (HELD, NOT_HELD, NOT_TESTABLE)

#: null names as recorded by the notebooks (both spellings are in use) -> display name
NULL_NAMES = {"gaussian": "gaussian", "random_init": "random init", "random init": "random init",
              "sphere": "unit sphere", "unit sphere": "unit sphere", "unit_sphere": "unit sphere"}


# ------------------------------------------------------------------------------ rules
@dataclass(frozen=True)
class Rule:
    """What "the claim holds" means for one measured value.

    kind:
      ``band``      the interval lies inside [lo, hi] (held), outside it (not held);
      ``at_least``  the interval lies at or above ``lo`` (held), below it (not held);
      ``contains``  the interval contains ``target`` (held), excludes it (not held);
      ``all_within`` every per-layer value lies inside [lo, hi] (exact counts; no interval);
      ``equals``    the exact value equals ``target``.
    A ``band`` / ``at_least`` interval that straddles an edge cannot decide at this
    sample size: not testable, with the reason.
    """

    kind: str
    lo: Optional[float] = None
    hi: Optional[float] = None
    target: Optional[float] = None
    text: str = ""

    def __post_init__(self):
        if self.kind not in ("band", "at_least", "contains", "all_within", "equals"):
            raise ValueError(f"Rule.kind: unknown kind {self.kind!r}")

    def judge(self, value: Any, lo: Optional[float], hi: Optional[float],
              per_layer: Optional[list] = None, scale: float = 1.0) -> tuple[str, str]:
        """(verdict, reason) for a value with interval [lo, hi] (None: no interval); ``scale``
        only changes how the reason prints numbers (100: percentages)."""
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return NOT_TESTABLE, "no value recorded"
        if self.kind == "all_within":
            vals = [float(v) for v in (per_layer or []) if v is not None]
            if not vals:
                return NOT_TESTABLE, "no per-layer values recorded"
            out = [i for i, v in enumerate(vals) if not self.lo <= v <= self.hi]
            if not out:
                return HELD, f"all {len(vals)} layers within [{self.lo:g}, {self.hi:g}]"
            return NOT_HELD, (f"{len(out)} of {len(vals)} layers outside [{self.lo:g}, {self.hi:g}] "
                              f"(range {min(vals):.4f}–{max(vals):.4f})")
        if self.kind == "equals":
            if float(value) == float(self.target):
                return HELD, f"equals {self.target:g}"
            return NOT_HELD, f"{value:g} ≠ {self.target:g}"
        if lo is None or hi is None:
            return NOT_TESTABLE, "no interval (too few items to resample)"
        iv = f"[{lo * scale:.4g}, {hi * scale:.4g}]" + (" %" if scale == 100 else "")
        t = f"{self.target * scale:g}{' %' if scale == 100 else ''}" if self.target is not None else ""
        if self.kind == "contains":
            if lo <= self.target <= hi:
                return HELD, f"the interval {iv} contains {t}"
            return NOT_HELD, f"the interval {iv} excludes {t}"
        a = self.lo
        b = self.hi if self.kind == "band" else math.inf
        if a <= lo and hi <= b:
            return HELD, f"the interval {iv} lies within {self._span()}"
        if hi < a or lo > b:
            return NOT_HELD, f"the interval {iv} lies outside {self._span()}"
        return NOT_TESTABLE, f"the interval {iv} straddles an edge of {self._span()}: a larger sample decides"

    def satisfied_by(self, value: Any) -> bool:
        """Whether a point value (a null's) satisfies the rule."""
        if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        if self.kind in ("band", "all_within"):
            return self.lo <= value <= self.hi
        if self.kind == "at_least":
            return value >= self.lo
        if self.kind == "contains":
            return False  # a location / lift: a null does not "explain" it
        return float(value) == float(self.target)

    def _span(self) -> str:
        return f"[{self.lo:g}, {self.hi:g}]" if self.kind == "band" else f"≥ {self.lo:g}"


# ------------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class Claim:
    """One row of seed 001's summary table.

    ``scopes``: the recorded scopes that test this claim (None: all recorded scopes);
    ``seed_reference``: per-model values the seed reported (shown, and used as the rule's
    target by :func:`rule_for` where ``per_model_rule`` is set); ``null_sentence``: said
    when a null satisfies the rule too ({null}, {value} are filled in).
    """

    id: str
    title: str
    seed_value: str
    seed_models_text: str
    seed_models: tuple
    notebook: str
    rule: Rule
    null_sentence: str
    scopes: Optional[tuple] = None
    seed_reference: Mapping[str, float] = field(default_factory=dict)
    per_model_tol: Optional[float] = None
    definition: str = ""
    scale: float = 1.0  # display: 100 for percentages
    unit: str = ""
    model_scopes: Mapping[str, tuple] = field(default_factory=dict)  # per seed model: the scopes its value is of
    standin_from: Optional[str] = None  # a related record shown for stand-ins that lack this one

    def scopes_for(self, model: str) -> Optional[tuple]:
        """The scopes that test the claim on ``model`` (None: every recorded scope)."""
        return self.model_scopes.get(model, self.scopes)

    def rule_for(self, model: str) -> Rule:
        """The rule for one model: the seed's own value ± ``per_model_tol`` where it reported one."""
        ref = self.seed_reference.get(model)
        if ref is None or self.per_model_tol is None:
            return self.rule
        return Rule("band", ref - self.per_model_tol, ref + self.per_model_tol,
                    text=f"within ±{self.per_model_tol:g} of the seed's {ref:g} for {model}")


CV_BAND = (0.20, 0.23)
T5_SEED = ("t5-small", "t5-base", "t5-v1_1-xxl")
CLAIMS: tuple[Claim, ...] = (
    Claim("pentachoron_cv", "pentachoron CV", "0.20–0.23", "T5, Qwen (all scales)",
          T5_SEED + ("qwen3.5-0.8b", "qwen3.5-4b"), "01_embedding_terrain",
          Rule("band", *CV_BAND, text="the CV's interval lies in the seed's band 0.20–0.23"),
          "The {null} at the same dimension gives {value} too: the CV is set by the dimension, not by training.",
          scopes=("embedding",),
          definition="std/mean of Cayley–Menger volumes of random 5-point subsets of the token embedding"),
    Claim("q_sparsity", "Q sparsity (|w| < 0.1)", "93.7 % → 99.4 % → 100 %", "T5-small → base → v1.1-XXL",
          T5_SEED, "02_weight_topology",
          Rule("at_least", 0.937, text="at least the seed's smallest value, 93.7 %"),
          "The {null} copy is as sparse ({value}): at |w| < 0.1 this is the initialiser's weight scale, "
          "not a learned property.",
          seed_reference={"t5-small": 0.937, "t5-base": 0.994, "t5-v1_1-xxl": 1.0}, per_model_tol=0.005,
          model_scopes={"t5-small": ("encoder+decoder/self",), "t5-base": ("encoder+decoder/self",),
                        "t5-v1_1-xxl": ("encoder/self", "decoder/self", "decoder/cross")},
          definition="fraction of Q weights with |w| < 0.1: T5-small/base pooled over encoder and decoder "
                     "self-attention (seed §4), T5-XXL per stack and attention kind (seed §6)", scale=100, unit="%"),
    Claim("qk_cross_balance", "cross-attention QK balance", "locked at 0.500 (all 24 layers)", "T5-v1.1-XXL",
          ("t5-v1_1-xxl",), "02_weight_topology",
          Rule("all_within", 0.4995, 0.5005, text="every cross-attention layer prints as 0.500"),
          "The {null} copy gives {value} too: the 0.5 follows from the shapes and the sign symmetry of "
          "random weights, not from training (see the QK-balance statement).", standin_from="qk_self_balance",
          definition="positive-eigenvalue fraction of sym(W_q W_kᵀ) (the seed's inner × inner form) per layer"),
    Claim("cross_layer_corr", "attention cross-layer correlation", "~0.000", "all 8 models",
          T5_SEED + ("bert-large-uncased", "clip-vit-b-16", "dinov2-large", "clip-vit-bigg-14",
                     "qwen3.5-0.8b", "qwen3.5-4b"), "02_weight_topology",
          Rule("band", -0.01, 0.01, text="|mean adjacent-layer cosine| ≤ 0.01"),
          "The {null} copy gives {value} too: independent layers have ~0 correlation; ~0 is what unrelated "
          "layers give, not a learned constant.",
          definition="mean cosine of the flattened attention weights of adjacent layers, same role"),
    Claim("position_crystallization", "decoder position crystallization", "0 mixed heads",
          "T5-Small, T5-XXL", ("t5-small", "t5-v1_1-xxl"), "02_weight_topology",
          Rule("equals", target=0, text="no mixed (local and global) position-bias head in the decoder"),
          "The {null} copy also has {value} mixed heads: the head types need no training.",
          scopes=("decoder",),
          definition="decoder relative-position-bias heads classified local / global / mixed (seed's raw-bucket rule)"),
    Claim("phase_boundary", "phase boundary", "0.29154", "multiple systems", ("t5-small",), "10_alpha_sweep",
          Rule("contains", target=0.29154, text="a transition is found and its interval contains 0.29154"),
          "", scopes=("alpha",),
          definition="change point of the relational correlation over a fine static-alpha sweep, over seeds"),
    Claim("modulator_lift", "best modulator lift", "Pearson +152 %, Spearman +189 %", "T5-small",
          ("t5-small",), "09_modulator_training",
          Rule("contains", target=float("nan"), text="the lift's interval contains the seed's value"),
          "", seed_reference={"pearson": 1.52, "spearman": 1.89},
          definition="(modulated − unmodulated) / |unmodulated| relational correlation", scale=100, unit="%"),
)
CLAIM_IDS = tuple(c.id for c in CLAIMS)


def claim(claim_id: str) -> Claim:
    for c in CLAIMS:
        if c.id == claim_id:
            return c
    raise KeyError(f"unknown claim {claim_id!r} (known: {', '.join(CLAIM_IDS)})")


# ------------------------------------------------------------------------------ reading
def _read_jobs(root: Path, notebook: str) -> dict[str, dict]:
    """model name -> metrics.json payload of every finished job of ``notebook`` under ``root``."""
    out: dict[str, dict] = {}
    nb_dir = Path(root) / notebook
    if not nb_dir.is_dir():
        return out
    for job in sorted(nb_dir.iterdir()):
        f = job / "metrics.json"
        if job.name.startswith(".") or job.name.endswith(".failed") or not f.is_file():
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the report lists unreadable jobs as failed
        out[data.get("model") or job.name] = data
    return out


def _bounds(h: Mapping) -> tuple[Optional[float], Optional[float]]:
    iv = h.get("interval") or {}
    lo, hi = iv.get("lo"), iv.get("hi")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None, None
    return float(lo), float(hi)


def _nulls(h: Mapping) -> dict[str, dict]:
    out = {}
    for k, n in (h.get("nulls") or {}).items():
        if isinstance(n, Mapping) and n.get("value") is not None:
            out[NULL_NAMES.get(k, k)] = dict(n)
    return out


def _show(h: Optional[Mapping], scale: float = 1.0, unit: str = "") -> str:
    if not h or h.get("value") is None:
        return "–"
    v = h["value"]
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return str(v)
    lo, hi = _bounds(h)
    iv = None if lo is None else (lo * scale, hi * scale)
    s = format_value(v * scale, iv, h.get("fmt") if scale == 1 else ".1f")
    return s + (f" {unit}" if unit else "")


def _row(c: Claim, model: str, job: str, scope: str, h: Mapping, seed_model: bool) -> dict:
    rule = c.rule_for(model if c.id != "modulator_lift" else scope)
    if c.id == "modulator_lift":
        ref = c.seed_reference.get(scope)
        rule = Rule("contains", target=ref, text=f"the interval contains the seed's {ref:+.0%}") if ref is not None \
            else rule
    lo, hi = _bounds(h)
    value = h.get("value")
    if c.id == "phase_boundary" and h.get("found") is False:
        verdict, reason = NOT_HELD, "no transition found" + (f" ({h['note']})" if h.get("note") else "")
    else:
        verdict, reason = rule.judge(value, lo, hi, h.get("per_layer"), scale=c.scale)
    nulls = _nulls(h)
    explained = [f"{k} {format_value(n['value'], n.get('interval'), h.get('fmt'))}" for k, n in nulls.items()
                 if rule.satisfied_by(n["value"]) and verdict == HELD]
    sentence = ""
    if explained and c.null_sentence:
        k, n = next((k, n) for k, n in nulls.items() if rule.satisfied_by(n["value"]))
        sentence = c.null_sentence.format(null=k, value=format_value(n["value"], n.get("interval"), h.get("fmt")))
    ref = c.seed_reference.get(model if c.id != "modulator_lift" else scope)
    return {
        "claim": c.id, "title": c.title, "model": model, "job": job, "scope": scope,
        "seed model": seed_model,
        "seed value": (f"{ref * c.scale:g}{' ' + c.unit if c.unit else ''}" if ref is not None else c.seed_value),
        "measured": _show(h, c.scale, c.unit), "value": value, "lo": lo, "hi": hi,
        "project definition": _show(h.get("project"), c.scale, c.unit) if h.get("project") else "",
        "nulls": "; ".join(f"{k}: {_show(n, c.scale, c.unit)}" for k, n in nulls.items()),
        "null values": {k: n.get("value") for k, n in nulls.items()},
        "verdict": verdict, "reason": reason, "rule": rule.text, "null explains": sentence,
    }


def evaluate(root: str | Path, seed_models_only: bool = False) -> list[dict]:
    """One row per (claim, model, scope) recorded under the report root ``root``, plus one
    "missing" row per seed model of the claim that has no job there.

    Each row: claim, title, model, job, scope, seed model (bool), seed value, measured
    (``value [lo, hi]``), value, lo, hi, project definition, nulls, null values, verdict,
    reason, rule, null explains (one sentence when a null satisfies the rule too).
    """
    root = Path(root)
    rows: list[dict] = []
    for c in CLAIMS:
        jobs = _read_jobs(root, c.notebook)
        for model, data in jobs.items():
            recorded = (data.get("metrics") or {}).get("claims") or {}
            rec = recorded.get(c.id)
            seed_model = model in c.seed_models
            if seed_models_only and not seed_model:
                continue
            job = f"{c.notebook}/{model}"
            if not rec and not seed_model and c.standin_from and recorded.get(c.standin_from):
                kind = c.standin_from.split("_")[1]  # "self"
                rec = {f"{s} ({kind}-attention)": h for s, h in recorded[c.standin_from].items()}
            if not rec:
                rows.append(_missing(c, model, job, seed_model, f"{job} recorded no '{c.id}' (the quantity does not "
                                     "apply to this model, or the job predates the claims record)"))
                continue
            want = c.scopes_for(model)
            scopes = [s for s in rec if want is None or s in want]
            if not scopes:
                rows.append(_missing(c, model, job, seed_model,
                                     f"no {' / '.join(want or ())} scope in {job} (recorded: {', '.join(rec)})"))
            for scope in scopes:
                rows.append(_row(c, model, job, scope, rec[scope], seed_model))
        for m in c.seed_models:
            if m not in jobs:
                rows.append(_missing(c, m, f"{c.notebook}/{m}", True, f"no finished {c.notebook} job for {m} "
                                     "in this profile"))
    return rows


def _missing(c: Claim, model: str, job: str, seed_model: bool, reason: str) -> dict:
    return {"claim": c.id, "title": c.title, "model": model, "job": job, "scope": "", "seed model": seed_model,
            "seed value": c.seed_value, "measured": "–", "value": None, "lo": None, "hi": None,
            "project definition": "", "nulls": "", "null values": {}, "verdict": NOT_TESTABLE, "reason": reason,
            "rule": c.rule.text, "null explains": ""}


def summarize(rows: Iterable[dict]) -> list[dict]:
    """One row per claim: the verdict over the seed's own models, and the stand-ins' tally.

    held: every tested scope of every seed model held; not held: any did not; not testable:
    no seed model could be tested (the reason names the missing jobs).
    """
    rows = list(rows)
    out = []
    for c in CLAIMS:
        mine = [r for r in rows if r["claim"] == c.id]
        seed = [r for r in mine if r["seed model"]]
        tested = [r for r in seed if r["verdict"] != NOT_TESTABLE]
        if not tested:
            verdict = NOT_TESTABLE
            by_nb: dict[str, list[str]] = {}
            for r in seed:
                nb, _, m = r["job"].partition("/")
                by_nb.setdefault(nb, []).append(m)
            reason = ("needs " + "; ".join(f"{nb} on {', '.join(sorted(set(ms)))}" for nb, ms in by_nb.items())
                      ) if by_nb else "no seed model recorded"
        elif any(r["verdict"] == NOT_HELD for r in tested):
            verdict = NOT_HELD
            bad = [r for r in tested if r["verdict"] == NOT_HELD]
            reason = "; ".join(f"{r['model']} {r['scope']}: {r['reason']}" for r in bad[:3])
        else:
            untested = [r for r in seed if r["verdict"] == NOT_TESTABLE]
            verdict = NOT_TESTABLE if untested else HELD  # "held" needs every seed model tested
            reason = f"held on {len(tested)} tested scope(s) of {len({r['model'] for r in tested})} seed model(s)"
            if untested:
                reason = (f"held where tested ({', '.join(sorted({r['model'] for r in tested}))}); "
                          f"not testable: " + "; ".join(f"{r['model']}: {r['reason']}" for r in untested[:3]))
        stand = [r for r in mine if not r["seed model"] and r["verdict"] != NOT_TESTABLE]
        tally = ", ".join(f"{r['model']}{' ' + r['scope'] if r['scope'] not in ('', 'embedding') else ''}: "
                          f"{r['verdict']}" for r in stand)
        ex = sorted((r for r in mine if r["null explains"]), key=lambda r: not r["seed model"])
        explains = f"{ex[0]['model']} {ex[0]['scope']}: {ex[0]['null explains']}".replace("  ", " ") if ex else ""
        out.append({"claim": c.id, "title": c.title, "seed value": c.seed_value, "seed models": c.seed_models_text,
                    "verdict": verdict, "reason": reason, "stand-ins": tally or "–", "null explains": explains,
                    "definition": c.definition, "rule": c.rule.text})
    return out


def required_jobs() -> dict[str, list[str]]:
    """notebook -> the seed models a profile must run it on to test every claim."""
    need: dict[str, list[str]] = {}
    for c in CLAIMS:
        lst = need.setdefault(c.notebook, [])
        lst += [m for m in c.seed_models if m not in lst]
    return need


def missing_jobs(profile_jobs: Iterable[tuple[str, Optional[str]]]) -> list[str]:
    """``notebook/model`` pairs :func:`required_jobs` lists that ``profile_jobs`` (pairs of
    notebook and model) lacks."""
    have = {(nb, m) for nb, m in profile_jobs}
    return [f"{nb}/{m}" for nb, ms in required_jobs().items() for m in ms if (nb, m) not in have]


__all__ = ["Claim", "Rule", "CLAIMS", "CLAIM_IDS", "HELD", "NOT_HELD", "NOT_TESTABLE", "VERDICTS", "CV_BAND",
           "claim", "evaluate", "summarize", "required_jobs", "missing_jobs"]


# ------------------------------------------------------------------------------ tables
SUMMARY_COLUMNS = ["title", "seed value", "seed models", "verdict", "reason", "stand-ins", "null explains"]
DETAIL_COLUMNS = ["title", "model", "scope", "seed value", "measured", "project definition", "nulls", "verdict",
                  "reason", "null explains"]


def summary_frame(summary: list[dict]):
    """The claim-level table (one row per claim) as a DataFrame with the display columns."""
    import pandas as pd

    return pd.DataFrame(summary, columns=list(summary[0]) if summary else SUMMARY_COLUMNS)[SUMMARY_COLUMNS]


def detail_frame(rows: list[dict], seed_models: Optional[bool] = None):
    """Per (claim, model, scope) rows with the display columns (``seed_models``: only the
    seed's models (True), only the stand-ins (False), or all (None))."""
    import pandas as pd

    rows = [r for r in rows if seed_models is None or r["seed model"] == seed_models]
    return pd.DataFrame(rows, columns=DETAIL_COLUMNS + ["seed model"])[DETAIL_COLUMNS]


__all__ += ["summary_frame", "detail_frame", "SUMMARY_COLUMNS", "DETAIL_COLUMNS"]


def headline(summary: list[dict]) -> dict:
    """Notebook 15's headline: how many claims are held, not held, not testable (exact counts)."""
    from ..results import headline as _headline

    keys = {HELD: "claims_held", NOT_HELD: "claims_not_held", NOT_TESTABLE: "claims_not_testable"}
    return {keys[v]: _headline(sum(s["verdict"] == v for s in summary), interval="exact", label=f"claims {v}",
                               fmt="d", note="Counted over the seed's own models (stand-ins excluded).")
            for v in VERDICTS}


__all__ += ["headline"]
