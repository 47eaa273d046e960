"""Reading a report root's metrics.json files and giving each claim its verdicts."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable, Mapping, Optional

from ..metrics.intervals import format_value
from .registry import CLAIMS, Claim, claim
from .rules import HELD, NOT_HELD, NOT_TESTABLE, NULL_NAMES, Rule

__all__ = ["evaluate", "summarize", "required_jobs", "missing_jobs"]


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
