"""From the rows of :func:`geolip_lib.claims.evaluation.evaluate` to one verdict per reading
(:func:`summarize`) and one row per claim with its readings side by side (:func:`readings`), split
out of :mod:`geolip_lib.claims.evaluation` (the rows of each value stay there).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Union

from .registry import ClaimSet, load
from .rules import FORCED, HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, NOT_TESTED, UNDECIDED, VERDICTS

__all__ = ["summarize", "readings", "READING_DISAGREES"]

#: the verdict over a claim's readings when they disagree (a reading of the seed's words decides it)
READING_DISAGREES = "undecided (reading)"


def _tested_reason(tested: list[dict], untested: list[dict]) -> str:
    models = sorted({r["model"] for r in tested})
    out = f"{len(tested)} tested scope(s) of {len(models)} model(s) ({', '.join(models)})"
    if untested:
        out += "; not tested: " + "; ".join(f"{r['model']}: {r['reason']}" for r in untested[:3])
    return out


def summarize(rows: Iterable[dict], claims: Union[str, Path, ClaimSet, None] = None) -> list[dict]:
    """One row per (claim, reading): the verdict over the reading's own models, and the stand-ins.

    not held: any tested scope is not held. undecided: any is undecided, or some of the
    reading's models were not tested while the rest held (the reason names the jobs that
    would decide). held, but the null gives it too: every tested scope held, at least one
    only because a null gives it too. held: every model tested, every scope held. not tested
    on this profile: none of its models was tested. forced by shape: every tested value is.
    """
    rows = list(rows)
    cs = load(claims)
    out = []
    for c in cs.claims:
        for fi, form in enumerate(c.forms):
            mine = [r for r in rows if r["claim"] == c.id and r["form"] == fi]
            seed = [r for r in mine if r["seed model"]]
            tested = [r for r in seed if r["verdict"] in VERDICTS]
            forced = [r for r in seed if r["verdict"] == FORCED]
            untested = [r for r in seed if r["verdict"] == NOT_TESTED]
            if not tested:
                if forced:
                    verdict, reason = FORCED, "; ".join(f"{r['model']} {r['scope']}: {r['reason']}" for r in forced[:3])
                else:
                    verdict = NOT_TESTED
                    by_nb: dict[str, list[str]] = {}
                    for r in seed:
                        nb, _, m = r["job"].partition("/")
                        by_nb.setdefault(nb, []).append(m)
                    recorded_not = [r["reason"] for r in seed if not r["reason"].startswith("no finished")]
                    reason = ("needs " + "; ".join(f"{nb} on {', '.join(sorted(set(ms)))}" for nb, ms in by_nb.items())
                              + (f" ({recorded_not[0]})" if recorded_not else "")) if by_nb else "no model recorded"
            elif any(r["verdict"] == NOT_HELD for r in tested):
                verdict = NOT_HELD
                reason = "; ".join(f"{r['model']} {r['scope']}: {r['reason']}"
                                   for r in [r for r in tested if r["verdict"] == NOT_HELD][:3])
            elif any(r["verdict"] == UNDECIDED for r in tested) or untested:
                verdict = UNDECIDED
                und = [r for r in tested if r["verdict"] == UNDECIDED]
                reason = "; ".join(f"{r['model']} {r['scope']}: {r['reason']}" for r in und[:3])
                if untested:
                    ok = ", ".join(f"{r['model']}{' ' + r['scope'] if r['scope'] else ''}: {r['verdict']}"
                                   for r in tested if r["verdict"] != UNDECIDED)
                    reason = "; ".join(filter(None, [reason, ok, "what would decide it: " + "; ".join(
                        f"{r['model']}: {r['reason']}" for r in untested[:3])]))
            elif any(r["verdict"] == NOT_HELD_NULL for r in tested):  # size or shape sets it: counted apart
                verdict = NOT_HELD_NULL
                reason = "; ".join(f"{r['model']} {r['scope']}: {r['reason']}"
                                   for r in [r for r in tested if r["verdict"] == NOT_HELD_NULL][:3])
            elif any(r["verdict"] == HELD_NULL for r in tested):
                verdict = HELD_NULL
                reason = (_tested_reason(tested, []) + "; "
                          + next(r["reason"] for r in tested if r["verdict"] == HELD_NULL))
            else:
                verdict, reason = HELD, "held on " + _tested_reason(tested, [])
            if forced and verdict != FORCED:
                reason += "; kept out (forced by shape): " + ", ".join(f"{r['model']} {r['scope']}" for r in forced)
            extra = [m for m in form.models if m in form.extrapolated]
            if extra:
                reason += ("; extrapolations (the seed never measured them so): "
                           + "; ".join(f"{m}: {form.extrapolated[m]}" for m in extra))
            stand = [r for r in mine if not r["seed model"] and r["verdict"] != NOT_TESTED]
            tally = ", ".join(f"{r['model']}{' ' + r['scope'] if r['scope'] not in ('', 'embedding') else ''}: "
                              f"{r['verdict']}" for r in stand)
            ex = sorted((r for r in mine if r["null explains"]), key=lambda r: not r["seed model"])
            explains = f"{ex[0]['model']} {ex[0]['scope']}: {ex[0]['null explains']}".replace("  ", " ") if ex else ""
            out.append({"claim": c.id, "title": c.title, "form": fi, "reading": form.name, "by": form.by,
                        "extrapolated": sorted(form.extrapolated), "measured as": form.measured_as, "seed value": c.seed_value,
                        "seed models": c.seed_models_text, "verdict": verdict, "reason": reason,
                        "stand-ins": tally or "–", "null explains": explains, "definition": c.definition,
                        "stand-in verdicts": {m: sorted({r["verdict"] for r in stand if r["model"] == m})
                                              for m in dict.fromkeys(r["model"] for r in stand)},
                        "rule": form.rule.text, "note": form.note})
    return out


def readings(summary: list[dict]) -> list[dict]:
    """One row per claim with each reading's verdict side by side: "as the table says" beside
    "as the seed measured" (and the project's own reading where the file adds one), each labelled
    by whose reading it is; ``over the readings``: the verdict they share, or
    ``"undecided (reading): ..."`` when defensible readings of the seed's words disagree (a
    reading of the words then decides the verdict, and the page says so)."""
    out: dict[str, dict] = {}
    tested: dict[str, list[tuple[str, str]]] = {}
    stand: dict[str, dict[str, dict[str, str]]] = {}  # claim -> stand-in -> reading -> its verdicts
    for s in summary:
        for m, vs in (s.get("stand-in verdicts") or {}).items():
            stand.setdefault(s["claim"], {}).setdefault(m, {})[s["reading"]] = " / ".join(vs)
        r = out.setdefault(s["claim"], {"claim": s["claim"], "title": s["title"], "seed value": s["seed value"],
                                        "as the table says": [], "as the seed measured": [],
                                        "the project's own reading": [], "over the readings": ""})
        name = s["reading"]
        cols = (["as the table says", "as the seed measured"] if name.startswith("as the table says = ") else
                ["as the table says"] if name.startswith("as the table says") else
                ["as the seed measured"] if name.startswith("as the seed measured") else
                ["the project's own reading"])
        label = name.partition(" (")[2].rstrip(")")
        by = s.get("by") or "seed"
        whose = "" if (by == "project") == (cols == ["the project's own reading"]) else f"[{by}'s] "
        for col in cols:
            r[col].append(f"{s['verdict']}" + (f" ({whose}{label})" if label or whose else ""))
        if s["verdict"] in VERDICTS:
            tested.setdefault(s["claim"], []).append((name, s["verdict"]))
    for cid, r in out.items():
        got = tested.get(cid, [])
        verdicts = list(dict.fromkeys(v for _, v in got))
        if not got:
            r["over the readings"] = "–"
        elif len(verdicts) == 1:
            r["over the readings"] = verdicts[0]
        else:
            r["over the readings"] = (f"{READING_DISAGREES}: " + "; ".join(f"{n}: {v}" for n, v in got))
        split = {m: by for m, by in stand.get(cid, {}).items() if len(by) > 1 and len(set(by.values())) > 1}
        if split:  # a stand-in whose verdict turns on the reading (MiniLM's cross-layer poolings)
            r["over the readings"] += "; stand-ins: " + "; ".join(
                f"{m}: {READING_DISAGREES} (" + "; ".join(f"{n}: {v}" for n, v in by.items()) + ")"
                for m, by in split.items())
    return [{k: ("; ".join(v) or "–") if isinstance(v, list) else v for k, v in r.items()} for r in out.values()]
