"""One seaborn style for every figure, and PNG bytes/files of a figure.

No backend is forced here: in a Jupyter kernel the runtime selects the inline backend,
and headless processes get matplotlib's own default (Agg). Figures made by the library
(``<package>/plots.py``) are shown by :meth:`geolip_lib.runtime.Job.figure`.
"""
from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib import font_manager

from .results import atomic_write_bytes

DPI = 110

#: the font matplotlib falls back to for glyphs DejaVu Sans lacks (CJK tokens): Debian's
#: fonts-droid-fallback, which scripts/setup.sh installs; the report's CSS names it too
FALLBACK_FONT = "Droid Sans Fallback"


def fallback_fonts() -> list[str]:
    """``[FALLBACK_FONT]`` where matplotlib can use it, else ``[]`` (naming a missing family would
    warn on every figure). A font installed after matplotlib built its font cache is added."""
    fm = font_manager.fontManager
    if not any(f.name == FALLBACK_FONT for f in fm.ttflist):
        for path in font_manager.findSystemFonts(fontext="ttf"):
            if Path(path).stem.startswith("DroidSansFallback"):
                fm.addfont(path)
    return [FALLBACK_FONT] if any(f.name == FALLBACK_FONT for f in fm.ttflist) else []


def setup() -> None:
    """Apply the project's plotting style (the runtime calls it once per notebook)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="deep")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": DPI, "figure.autolayout": False,
                         "svg.hashsalt": "geolip", "path.simplify": True})
    # matplotlib falls back glyph by glyph across the families of font.family: DejaVu Sans, then CJK
    plt.rcParams["font.family"] = ["sans-serif", *fallback_fonts()]


def png_bytes(fig: "matplotlib.figure.Figure") -> bytes:
    """The figure as PNG bytes (tight bounding box, no timestamp metadata)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # matplotlib times its search for a loc="best" legend and warns when it took over a second: on a
        # busy box the same figure then prints a warning that a quiet run does not (nbval saw the outputs
        # differ); the figure is the same either way
        warnings.filterwarnings("ignore", message='Creating legend with loc="best" can be slow', category=UserWarning)
        fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def savefig(fig: "matplotlib.figure.Figure", out_dir: str | os.PathLike, name: str) -> Path:
    """Save ``fig`` as ``<out_dir>/<name>.png`` (atomically) and return the path; the figure stays open."""
    path = Path(out_dir) / (name if name.endswith(".png") else f"{name}.png")
    return atomic_write_bytes(path, png_bytes(fig))
