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

from .evaluation import evaluate, missing_jobs, required_jobs, summarize
from .registry import CLAIM_IDS, CLAIMS, CV_BAND, T5_SEED, Claim, claim
from .rules import HELD, NOT_HELD, NOT_TESTABLE, NULL_NAMES, VERDICTS, Rule
from .tables import DETAIL_COLUMNS, SUMMARY_COLUMNS, detail_frame, headline, summary_frame

__all__ = ["Claim", "Rule", "CLAIMS", "CLAIM_IDS", "HELD", "NOT_HELD", "NOT_TESTABLE", "VERDICTS", "CV_BAND",
           "NULL_NAMES", "T5_SEED", "claim", "evaluate", "summarize", "required_jobs", "missing_jobs",
           "summary_frame", "detail_frame", "SUMMARY_COLUMNS", "DETAIL_COLUMNS", "headline"]
