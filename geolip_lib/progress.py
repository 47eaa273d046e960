"""One progress bar for the library: tqdm.auto (ipywidgets in JupyterLab, text in a terminal).

``progress=False`` hides it, and so does ``TQDM_DISABLE=1`` (which ``run_all`` sets for headless
kernels). tqdm honours that variable only for its *default* ``disable``; every call here passes
``disable`` explicitly, so the variable is read here. A bar in a headless kernel would leave a
widget output in the executed notebook whose presence depends on caches (nbval sees it differ).
"""
from __future__ import annotations

import os
from typing import Any, Iterable

from tqdm.auto import tqdm


def disabled(progress: bool = True) -> bool:
    """Whether a bar is hidden: ``progress`` false, or ``TQDM_DISABLE`` set to a true value."""
    return (not progress) or os.environ.get("TQDM_DISABLE", "").strip().lower() in ("1", "true", "yes", "on")


def bar(iterable: Iterable | None = None, *, progress: bool = True, **kwargs: Any):
    """``tqdm.auto.tqdm(iterable, disable=disabled(progress), **kwargs)``."""
    return tqdm(iterable, disable=disabled(progress), **kwargs)
