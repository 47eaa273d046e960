"""Helpers shared by the battery's analyses (catalog rows, float test, progress bars)."""
from __future__ import annotations

from tqdm.auto import tqdm


def progress_bar(it, total: int, desc: str, enabled: bool):
    """``it`` wrapped in a tqdm bar when ``enabled``."""
    if not enabled:
        return it
    return tqdm(it, total=total, desc=desc, leave=False)


def entry_row(e) -> dict:
    """The identifying columns of a catalog entry's table row."""
    row = {"name": e.key, "role": e.role, "stack": e.stack, "attn": e.attn, "layer": e.layer}
    if getattr(e, "expert", None) is not None:  # mixture of experts: one row per expert, labelled
        row["expert"] = e.expert
    return row


def is_float(e) -> bool:
    """Whether a catalog entry holds floating-point data."""
    return str(e.dtype).startswith(("float", "bfloat"))
