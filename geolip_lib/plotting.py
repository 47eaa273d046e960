"""One seaborn style for every figure, and saving figures as PNG into the job directory."""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg") if "ipykernel" not in os.environ.get("MPLBACKEND", "") else os.environ["MPLBACKEND"])  # noqa: E501
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from .results import atomic_write_bytes  # noqa: E402


def setup() -> None:
    """Apply the project's plotting style (call once at the top of a notebook)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="deep")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 110, "figure.autolayout": False,
                         "svg.hashsalt": "geolip", "path.simplify": True})


def savefig(fig: "matplotlib.figure.Figure", out_dir: str | os.PathLike, name: str) -> Path:
    """Save ``fig`` as ``<out_dir>/<name>.png`` (atomically) and return the path.

    The figure stays open so that the notebook still displays it inline.
    """
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", metadata={"Software": None})
    path = Path(out_dir) / (name if name.endswith(".png") else f"{name}.png")
    return atomic_write_bytes(path, buf.getvalue())
