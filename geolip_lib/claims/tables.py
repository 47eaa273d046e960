"""The claims as display tables and notebook 15's headline counts."""
from __future__ import annotations

from typing import Optional

import pandas as pd

from ..results import headline as _headline
from .rules import HELD, NOT_HELD, NOT_TESTABLE, VERDICTS

__all__ = ["SUMMARY_COLUMNS", "DETAIL_COLUMNS", "summary_frame", "detail_frame", "headline"]

SUMMARY_COLUMNS = ["title", "seed value", "seed models", "verdict", "reason", "stand-ins", "null explains"]
DETAIL_COLUMNS = ["title", "model", "scope", "seed value", "measured", "project definition", "nulls", "verdict",
                  "reason", "null explains"]


def summary_frame(summary: list[dict]):
    """The claim-level table (one row per claim) as a DataFrame with the display columns."""
    return pd.DataFrame(summary, columns=list(summary[0]) if summary else SUMMARY_COLUMNS)[SUMMARY_COLUMNS]


def detail_frame(rows: list[dict], seed_models: Optional[bool] = None):
    """Per (claim, model, scope) rows with the display columns (``seed_models``: only the
    seed's models (True), only the stand-ins (False), or all (None))."""
    rows = [r for r in rows if seed_models is None or r["seed model"] == seed_models]
    return pd.DataFrame(rows, columns=DETAIL_COLUMNS + ["seed model"])[DETAIL_COLUMNS]


def headline(summary: list[dict]) -> dict:
    """Notebook 15's headline: how many claims are held, not held, not testable (exact counts)."""
    keys = {HELD: "claims_held", NOT_HELD: "claims_not_held", NOT_TESTABLE: "claims_not_testable"}
    return {keys[v]: _headline(sum(s["verdict"] == v for s in summary), interval="exact", label=f"claims {v}",
                               fmt="d", note="Counted over the seed's own models (stand-ins excluded).")
            for v in VERDICTS}
