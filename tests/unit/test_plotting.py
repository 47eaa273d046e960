"""geolip_lib.plotting.png_bytes, the one place figures become PNG (files and inline displays):
matplotlib's timing note on a slow loc="best" legend is not printed (it depends on the machine's
load, so an executed notebook's outputs differed between a busy and a quiet run: nbval failed on
02 in CI); every other warning still reaches the notebook."""
from __future__ import annotations

import warnings

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402

from geolip_lib import plotting  # noqa: E402

pytestmark = pytest.mark.unit


class _Warns(Artist):
    def __init__(self, message):
        super().__init__()
        self.message = message

    def draw(self, renderer):
        warnings.warn(self.message, UserWarning)


@pytest.mark.parametrize("message,shown", [
    ('Creating legend with loc="best" can be slow with large amounts of data.', False),
    ("Tight layout not applied.", True),
])
def test_the_slow_legend_note_is_not_printed_and_other_warnings_are(message, shown):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="x")
    ax.legend()
    fig.add_artist(_Warns(message))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        data = plotting.png_bytes(fig)
    plt.close(fig)
    assert data.startswith(b"\x89PNG")
    assert any(message in str(w.message) for w in seen) is shown
