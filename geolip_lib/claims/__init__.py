"""Claims as data, tested: a paper's table (``params/claims/<name>.yaml``), rules, verdicts.

Seed 001 ends with a summary table of "universal constants" and its best modulator result;
``params/claims/seed-001.yaml`` holds it, claim by claim, with each claim's readings: what
the table says and what the seed's cells measured (models, representation, pooling, sizes)
where they differ. Another paper's table is another file in the same format
(params/README.md, "Claims"): :func:`evaluate` and notebook 15 give it the same verdict page.

Notebooks record each quantity in their ``metrics.json`` under
``metrics["claims"][<record>][<scope>]`` (a :func:`geolip_lib.results.headline` dict: value,
interval with its kind — exact / sampled / over seeds —, nulls, optionally ``project``,
``per_layer``, ``forced_by_shape``), or a claims file points at any headline dict by its path.

Verdicts (:mod:`geolip_lib.claims.rules`): **held**, **held, but the null gives it too**,
**not held**, **undecided** (with what would decide it); and two statuses that are not
verdicts: **not tested on this profile**, **forced by shape**. A reading's verdict is taken
over its own models only; other models (the demo's MiniLM and tiny models) are stand-ins.
"""
from __future__ import annotations

from .evaluation import (READING_DISAGREES, dequantized, describe, evaluate, missing_jobs, model_descriptions,
                         pipeline_checks, readings, required_jobs, summarize, trained)
from .power import kink_power
from .registry import CLAIM_IDS, CLAIMS, SEED_001, Claim, ClaimSet, Form, check_name, claim, claim_files, load
from .rules import (FORCED, HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, NOT_TESTED, NULL_NAMES, STATUSES, UNDECIDED, VERDICT_CLASS,
                    VERDICTS, Printed, Rule)
from .tables import (DETAIL_COLUMNS, READINGS_COLUMNS, SUMMARY_COLUMNS, detail_frame, headline, power_sentences,
                     readings_frame,
                     summary_frame)

#: the earlier name of "not tested on this profile"
NOT_TESTABLE = NOT_TESTED

__all__ = ["Claim", "ClaimSet", "Form", "Rule", "Printed", "CLAIMS", "CLAIM_IDS", "SEED_001", "HELD", "HELD_NULL",
           "NOT_HELD", "NOT_HELD_NULL", "UNDECIDED", "NOT_TESTED", "NOT_TESTABLE", "FORCED", "VERDICTS", "STATUSES", "VERDICT_CLASS",
           "NULL_NAMES", "claim", "claim_files", "check_name", "load", "evaluate", "trained", "dequantized",
           "pipeline_checks", "describe", "model_descriptions", "READING_DISAGREES", "summarize", "readings", "required_jobs",
           "missing_jobs", "kink_power", "summary_frame", "detail_frame", "readings_frame", "SUMMARY_COLUMNS",
           "DETAIL_COLUMNS", "READINGS_COLUMNS", "headline", "power_sentences"]
