"""The verdicts that are not a plain rule on a value, split out of :mod:`geolip_lib.claims.evaluation`:

- a change-point test that found nothing (:func:`power_verdict`): not held only when its power against
  the paper's kink, computed from the job's own seed curves, is shown (:mod:`geolip_lib.claims.power`);
- a value forced by the weight shapes (:func:`forced_balance`: what it is made of);
- a value measured on dequantized weights where the quantization step could decide the rule
  (:func:`quantization_verdict`);
- a "not held" that the same-shape null fails too (:func:`null_fails_too`), a null beyond the value that
  counts against a claim of convergence (:func:`null_beyond`), and a quantity whose design sets a floor
  beyond the rule (:func:`reach`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional

from ..metrics.intervals import format_value
from ..results import _bounds as bounds
from ..results import separates
from .power import MAX_DOUBLINGS, MAX_SEEDS, kink_power, observed_curves
from .registry import Claim, Form
from .rules import NOT_HELD, NOT_HELD_NULL, UNDECIDED, VERDICTS, Rule, display_null
from .schema import PATH_FIELDS, render_sentence

__all__ = ["power_verdict", "forced_balance", "quantization_verdict", "dig", "show_num", "is_num", "null_fails_too",
           "null_beyond", "reach", "shown_null"]


def dig(tree: Any, path: Iterable[str]) -> Any:
    for k in path:
        if not isinstance(tree, Mapping) or k not in tree:
            return None
        tree = tree[k]
    return tree


def show_num(x: float, scale: float, unit: str) -> str:
    return f"{x * scale:.4g}{' ' + unit if unit else ''}"


def power_verdict(c: Claim, form: Form, h: Mapping, data: Mapping) -> tuple[str, str, Optional[dict]]:
    """A change-point test that found nothing: not held only when its power, computed from the
    job's own observed seed curves (:func:`geolip_lib.claims.power.kink_power`), is shown."""
    p, bp = h.get("p_value"), h.get("best_breakpoint")
    base = "no change point found" + (f" (p = {p:.2g}" if is_num(p) else " (") + \
           (f"; best breakpoint {bp:.3g})" if is_num(bp) else ")")
    spec = form.power
    if spec is None:
        return UNDECIDED, base + "; the test's power is not known, so non-detection decides nothing", None
    fields = {k: str(h.get(k)) for k in PATH_FIELDS if isinstance(h.get(k), str)}
    fit_path = render_sentence(spec.fit_path, **fields)
    metrics = data.get("metrics") or {}
    fit = dig(metrics, fit_path.split("."))
    fit = fit if isinstance(fit, Mapping) else {}
    quantity = h.get("quantity") if isinstance(h.get("quantity"), str) else "pearson"
    curves = observed_curves(dig(metrics, render_sentence(spec.sweep_path, **fields).split(".")), quantity)
    null = fit.get("null") if fit.get("null") in ("line", "quadratic") else \
        (h.get("null") if h.get("null") in ("line", "quadratic") else "line")
    method = fit.get("model") if fit.get("model") in ("segmented", "step") else "segmented"
    pw = kink_power(curves[0], curves[1], at=spec.at, slope_change=spec.slope_change, method=method, null=null,
                    reps=spec.reps, n_boot=spec.n_boot, target=spec.target) if curves is not None else None
    if pw is None or pw["power"] is None:
        why = ("no per-seed curves recorded at metrics." + spec.sweep_path) if curves is None else \
            "one seed: no seed-to-seed spread to draw experiments from"
        return UNDECIDED, (base + f"; its power could not be computed ({why}), so non-detection decides nothing"), pw
    kink = f"a kink of slope change {spec.slope_change:g} at {spec.at:g} ({spec.basis})"
    grid = (f"on this {len(pw['grid'])}-point grid the {null} no-change model absorbs {pw['absorbed']:.0%} of a "
            f"hinge's energy at {spec.at:g} (a line {pw['absorbed_line']:.0%})")
    sim = (f"{pw['reps']} simulated experiments of {pw['n_seeds']} seeds drawn around the observed no-change fit "
           f"with the observed seeds' covariance along the grid; observed sd of the per-seed hinge coefficient "
           f"{pw['hinge_sd']:.3g}; {grid}")
    inj = ", ".join(f"{i['multiple']:g}x: {'found' if i['found'] else 'not found'} (p = {i['p_value']:.2g})"
                    for i in pw["injected"])
    sim += f"; the kink added to the observed curves: {inj}"
    if pw["power"] >= spec.target:
        return NOT_HELD, (f"{base}, although the test finds {kink} {pw['power']:.0%} of the time ({sim}): the "
                          "absence of a change contradicts the claim"), pw
    decide = []
    if pw["smallest_detectable"] is not None:
        decide.append(f"the test finds a kink of slope change {pw['smallest_detectable']:.3g} "
                      f"({pw['smallest_detectable'] / spec.slope_change:.0f}x the seed's) "
                      f"{spec.target:.0%} of the time")
    else:
        decide.append(f"no kink up to {2 ** MAX_DOUBLINGS}x the seed's is found {spec.target:.0%} of the time "
                      "on this grid")
    if pw["seeds_needed"] is not None:
        decide.append(f"about {pw['seeds_needed']} seeds would find the seed's kink {spec.target:.0%} of the time")
    else:
        decide.append(f"{MAX_SEEDS} seeds on this grid would not find the seed's kink {spec.target:.0%} of the time "
                      "either: a finer grid around the seed's value is needed")
    return UNDECIDED, (f"{base}; the test's power against {kink} is {pw['power']:.0%} ({sim}): too low to read "
                       f"non-detection as absence. What would decide it: {'; '.join(decide)}"), pw


def is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _span_int(v: list[int]) -> str:
    return f"{min(v)}" if min(v) == max(v) else f"{min(v)}–{max(v)}"


def forced_balance(h: Mapping) -> Optional[dict]:
    """What a value forced by shape is made of: the balance of the NONZERO eigenvalues
    n_pos / (n_pos + n_neg), with the counts of positive, negative and (round-off) zero
    eigenvalues per layer (``eigen_counts`` of the record), instead of a number such as 0.5001
    (n_pos / inner: the forced third plus the signs of round-off zeros) that reads like "locked at
    0.500". Returns ``{"balance", "n_pos", "n_neg", "n_zero" (per layer), "layers", "text"}``, or
    ``{"balance", "text"}`` from the project's form alone (no counts recorded), or None."""
    c = h.get("eigen_counts") if isinstance(h.get("eigen_counts"), Mapping) else {}
    pos, neg, zero = (list(c.get(k) or []) for k in ("n_pos", "n_neg", "n_zero"))
    if pos and len(pos) == len(neg) == len(zero) and all(p + n > 0 for p, n in zip(pos, neg)):
        bal = [p / (p + n) for p, n in zip(pos, neg)]
        b = sum(bal) / len(bal)
        every = "in every one of" if min(bal) == max(bal) else "averaged over"
        return {"balance": b, "n_pos": pos, "n_neg": neg, "n_zero": zero, "layers": len(pos),
                "text": (f"the balance of the nonzero eigenvalues n_pos / (n_pos + n_neg) is {b:.4g} {every} "
                         f"{len(pos)} layers ({_span_int(pos)} positive, {_span_int(neg)} negative, "
                         f"{_span_int(zero)} zero per layer)")}
    p = h.get("project") if isinstance(h.get("project"), Mapping) else {}
    if is_num(p.get("value")):
        return {"balance": float(p["value"]),
                "text": f"the balance of the nonzero eigenvalues n_pos / (n_pos + n_neg) is {p['value']:.4g} "
                        "(no per-layer counts recorded)"}
    return None


def quantization_verdict(rule: Rule, verdict: str, reason: str, h: Mapping, deq: str, c: Claim) -> tuple[str, str]:
    """The verdict of a value measured on dequantized weights: each stored type moves a weight by at most
    what its rule allows (half a step of a round-to-nearest block, one step of a K-quant sub-block: the
    record's ``text`` and ``assumes``), so a record may carry ``quantization_bound`` ``{"lo", "hi"}``: the
    range the unquantized value can lie in, from the stored scales (e.g. for the fraction |w| < 0.1:
    the value ± the fraction of weights within half a step of 0.1). When the rule says the same at
    both ends of that range, the bound cannot flip the verdict and it is kept; otherwise, or with no
    bound recorded, it is "undecided (quantization)"."""
    b = h.get("quantization_bound") if isinstance(h.get("quantization_bound"), Mapping) else {}
    lo, hi = b.get("lo"), b.get("hi")
    if is_num(lo) and is_num(hi) and lo <= hi:
        ends = {rule.judge(x, exact=True)[0] for x in (lo, hi)}
        inside = rule.inside(lo) == rule.inside(hi) and not (rule.lo is not None and lo < rule.lo < hi) \
            and not (rule.hi is not None and lo < rule.hi < hi)
        rng = f"[{show_num(lo, c.scale, c.unit)}, {show_num(hi, c.scale, c.unit)}]"
        if len(ends) == 1 and inside and (verdict == NOT_HELD) == (ends == {NOT_HELD}):
            how = b["text"] if isinstance(b.get("text"), str) and b["text"] else "each weight moved at most half a step"
            if isinstance(b.get("assumes"), str) and b["assumes"]:
                how += f"; assumes {b['assumes']}"
            return verdict, (f"{reason}; measured on dequantized weights ({deq}), but the unquantized value lies in "
                             f"{rng} ({how}), where the rule says the same: the quantization cannot flip it")
        typical = b.get("typical") if isinstance(b.get("typical"), Mapping) else {}
        sd = (f"; the typical move from independent rounding errors is ±{show_num(typical['sd'], c.scale, c.unit)} "
              "(not a bound)") if is_num(typical.get("sd")) else ""
        return UNDECIDED, (f"undecided (quantization): measured on dequantized weights ({deq}), and the unquantized "
                           f"value can lie anywhere in {rng}, across an edge of the rule{sd}; the rule alone would say "
                           f"'{verdict}': {reason}. What would decide it: the unquantized weights")
    return UNDECIDED, (f"undecided (quantization): measured on dequantized weights ({deq}), and the quantization step "
                       f"could decide this rule ({c.quantization}); no bound of its effect was recorded "
                       f"(quantization_bound); the rule alone would say '{verdict}': {reason}. What would decide it: "
                       "the bound from the stored scales, or the unquantized weights")


def shown_null(c: Claim, n: Mapping, fmt: Optional[str]) -> str:
    nlo, nhi = bounds(n)
    return format_value(n["value"] * c.scale, None if nlo is None else (nlo * c.scale, nhi * c.scale),
                        fmt if c.scale == 1 else ".2f") + (f" {c.unit}" if c.unit else "")


def null_fails_too(c: Claim, rule: Rule, reason: str, iv: tuple, nulls: Mapping[str, dict], bearing: list,
                    fmt: Optional[str]) -> tuple[str, str, str]:
    """A "not held" whose bearing null fails the rule too (its value, or its whole interval) while the value lies
    within the null's spread (not separated from it): the untrained network of the same shape fails the same way,
    so the failure is the shape's, not the training's (cross-layer cosines of small models sit beyond
    |x| < 0.0005 even between independent random layers). A value separated from such a null stays "not held":
    the deviation is compared with the null's spread before it is called a contradiction."""
    for name in bearing:
        n = nulls.get(name)
        if n is None or not isinstance(n.get("value"), (int, float)):
            continue
        nlo, nhi = bounds(n)
        if rule.judge(n["value"], nlo, nhi, exact=nlo is None, per_layer=n.get("per_layer"))[0] != NOT_HELD:
            continue
        if separates(iv, n["value"], n.get("interval")) is not False:
            continue  # the value is apart from what the shape gives: a failure of its own, a plain "not held"
        return NOT_HELD_NULL, (f"{reason}; but the {name} null fails the rule too ({shown_null(c, n, fmt)}), and the "
                               "value lies within its spread: a network of this size or shape does not satisfy "
                               "the rule, so this failure says nothing about training"), ""
    return NOT_HELD, reason, ""


def null_beyond(c: Claim, form: Form, rule: Rule, value: float, iv: tuple, nulls: Mapping[str, dict],
                 fmt: Optional[str]) -> str:
    """For a reading whose claim is a convergence (``null_beyond: against``): the bearing null separated from the
    value and further into the rule's region (random-init spectra more alike than the trained ones) counts
    against the claim, not only as "the null gives it too". Returns the sentence, or '' when none does."""
    if form.null_beyond != "against":
        return ""
    toward = 1.0 if rule.lo is not None else (-1.0 if rule.hi is not None else 0.0)
    for name in [display_null(x) for x in (c.nulls if form.nulls is None else form.nulls)]:
        n = nulls.get(name)
        if n is None or not toward or not isinstance(n.get("value"), (int, float)):
            continue
        if (n["value"] - value) * toward > 0 and separates(iv, n["value"], n.get("interval")) is not False:
            return (f"the {name} gives {shown_null(c, n, fmt)}, further into the rule's region and separated from the "
                    "value: the untrained networks are more alike than the trained ones, which counts against "
                    "convergence")
    return ""


def reach(c: Claim, rule: Rule, verdict: str, reason: str, h: Mapping) -> tuple[str, str]:
    """A record's ``floor`` (or ``ceiling``) ``{"value", "why", "decide"}``: the least (most) the quantity can
    be under this measurement's own design, whatever the model (the first principal component of n contexts
    explains at least 1/n of their variance). Every verdict states it; when the rule's region lies wholly beyond
    it, no model could satisfy the rule here: "undecided", with what would reach it."""
    for key, edge, beyond in (("floor", rule.hi, lambda f, e: f > e), ("ceiling", rule.lo, lambda f, e: f < e)):
        b = h.get(key) if isinstance(h.get(key), Mapping) else {}
        f = b.get("value")
        if not isinstance(f, (int, float)) or isinstance(f, bool) or not math.isfinite(f):
            continue
        shown = show_num(f, c.scale, c.unit)
        why = str(b.get("why") or "the measurement's design")
        if edge is not None and beyond(f, edge) and verdict in VERDICTS:
            return UNDECIDED, (f"undecided: {why} sets a {key} of {shown}, beyond the rule's edge "
                               f"{show_num(edge, c.scale, c.unit)}, so no model could satisfy it here; what would "
                               f"decide it: {b.get('decide') or 'a design whose ' + key + ' lies inside the rule'}"
                               f" (the rule alone would say '{verdict}': {reason})")
        reason += f"; the {key} its design sets: {shown} ({why})"
    return verdict, reason
