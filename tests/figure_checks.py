"""One check for every figure smoke test (tests/unit/<subpackage>/test_plots*.py)."""
from __future__ import annotations

import matplotlib.pyplot as plt

from geolip_lib.plotting import png_bytes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check_figure(fig, n_axes: int | None = None, close: bool = True) -> bytes:
    """Assert the figure has ``n_axes`` axes (colour bars count) and renders to a real PNG."""
    if n_axes is not None:
        assert len(fig.axes) == n_axes, f"{len(fig.axes)} axes, expected {n_axes}"
    data = png_bytes(fig)
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    if close:
        plt.close(fig)
    return data
