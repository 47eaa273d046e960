"""The claims as display tables and notebook 15's headline counts."""
from __future__ import annotations

from typing import Optional

import pandas as pd

from ..results import headline as _headline
from .evaluation import readings
from .rules import STATUSES

__all__ = ["SUMMARY_COLUMNS", "DETAIL_COLUMNS", "READINGS_COLUMNS", "summary_frame", "detail_frame", "readings_frame",
           "headline", "HEADLINE_KEYS"]

#: one row per (claim, reading): the report's lead table
SUMMARY_COLUMNS = ["title", "reading", "seed value", "seed models", "measured as", "verdict", "reason", "stand-ins",
                   "null explains"]
#: one row per (claim, reading, model, scope)
DETAIL_COLUMNS = ["title", "reading", "model", "scope", "seed value", "measured", "project definition", "nulls",
                  "verdict", "reason", "null explains"]
#: one row per claim: each reading's verdict side by side
READINGS_COLUMNS = ["title", "seed value", "as the table says", "as the seed measured", "the project's own reading"]
#: notebook 15's headline keys per status
HEADLINE_KEYS = {"held": "claims_held", "held, but the null gives it too": "claims_held_null_too",
                 "not held": "claims_not_held", "undecided": "claims_undecided",
                 "not tested on this profile": "claims_not_tested", "forced by shape": "claims_forced_by_shape"}


def summary_frame(summary: list[dict]):
    """The (claim, reading) table as a DataFrame with the display columns."""
    return pd.DataFrame(summary, columns=list(summary[0]) if summary else SUMMARY_COLUMNS)[SUMMARY_COLUMNS]


def detail_frame(rows: list[dict], seed_models: Optional[bool] = None):
    """Per (claim, reading, model, scope) rows with the display columns (``seed_models``: only
    the readings' own models (True), only the stand-ins (False), or all (None))."""
    rows = [r for r in rows if seed_models is None or r["seed model"] == seed_models]
    return pd.DataFrame(rows, columns=DETAIL_COLUMNS + ["seed model"])[DETAIL_COLUMNS]


def readings_frame(summary: list[dict]):
    """One row per claim: "as the table says" beside "as the seed measured" (verdicts)."""
    return pd.DataFrame(readings(summary), columns=READINGS_COLUMNS)[READINGS_COLUMNS]


def headline(summary: list[dict]) -> dict:
    """Notebook 15's headline: how many (claim, reading) rows have each verdict (exact counts)."""
    return {HEADLINE_KEYS[v]: _headline(sum(s["verdict"] == v for s in summary), interval="exact",
                                        label=f"claim readings {v}", fmt="d",
                                        note="Counted over (claim, reading) rows, on each reading's own models "
                                             "(stand-ins excluded).")
            for v in STATUSES}
