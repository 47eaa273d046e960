"""Root conftest: seeds every generator before each test; shared helpers."""
from __future__ import annotations

import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars in executed test notebooks (nbval compares stderr)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_everything():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:  # figures a test drew never leak into the next test
        sys.modules["matplotlib.pyplot"].close("all")
