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


def overlapping_texts(fig) -> list[tuple[str, str]]:
    """Pairs of texts of the figure's axes (data texts and tick labels) whose rendered boxes overlap, and texts
    that run past the figure's edge (paired with "edge"): what a reader sees as text printed over text."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    fw, fh = fig.bbox.width, fig.bbox.height
    boxes = []
    for ax in fig.axes:
        for t in [*ax.texts, *ax.get_xticklabels(), *ax.get_yticklabels()]:
            if t.get_visible() and t.get_text().strip():
                boxes.append((t.get_text(), t.get_window_extent(r)))
    out = [(s, "edge") for s, b in boxes if b.x0 < -0.5 or b.y0 < -0.5 or b.x1 > fw + 0.5 or b.y1 > fh + 0.5]
    for i, (s, b) in enumerate(boxes):
        for s2, b2 in boxes[i + 1:]:
            if b.overlaps(b2):
                out.append((s, s2))
    return out
