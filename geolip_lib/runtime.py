"""The notebook runtime: one call opens a notebook, one call closes it.

Every experiment notebook reads::

    # %% tags=["parameters"]
    MODEL = "tiny-bert"  # ...
    OUT_DIR = None       # ...
    SEED = 0             # ...

    # %%
    from geolip_lib import runtime
    job = runtime.start("01_embedding_terrain", globals())   # job dir, style, seeds, model
    lm = job.lm
    ...
    job.figure(plots.terrain_map(...), "terrain_map", key=True)  # saved as PNG *and* shown
    job.table(df, caption="Row norms")                           # a formatted table
    ...
    job.finish(metrics, headline)                                 # metrics.json + headline table

:func:`start` snapshots the notebook's declared parameters (the UPPER_CASE names the
parameters cell and papermill's injected cell defined), so :meth:`Job.finish` records them
without the notebook listing them again. Figures are shown as ``image/png`` outputs
whatever matplotlib backend is active (JupyterLab, papermill, nbval, a plain Python
process), because :meth:`Job.figure` displays the saved PNG bytes itself and closes the
figure; executed notebooks therefore carry their figures into every HTML and PDF.
"""
from __future__ import annotations

import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython import get_ipython
from IPython.display import Image, Markdown, display

from . import models, plotting, provenance, results
from .metrics.intervals import format_value
from .plotting import png_bytes

#: injected by run_all (paths differ between runs): not recorded as parameters
RUN_PATHS = ("OUT_DIR", "REPORT_ROOT")
#: float display in tables: 4 significant digits unless a column says otherwise
TABLE_FLOAT = "{:.4g}"


def _in_kernel() -> bool:
    ip = get_ipython()
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def _display(obj: Any, metadata: dict | None = None) -> None:
    display(obj, metadata=metadata) if metadata else display(obj)


def declared_parameters(namespace: Mapping[str, Any]) -> dict:
    """The notebook's parameters: UPPER_CASE names of plain values defined so far."""
    out = {}
    for k, v in namespace.items():
        if not (k.isupper() and k[0].isalpha()) or k in RUN_PATHS:
            continue
        if v is None or isinstance(v, (bool, int, float, str, list, tuple, dict)):
            out[k] = v
    return out


@dataclass
class Job:
    """One executing notebook: where it writes, what it loaded, what it showed."""

    notebook: str
    params: dict
    out: Path
    model_name: str | None = None
    lm: Any = None
    models: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    _n_tables: int = 0

    # ------------------------------------------------------------------ models
    def load(self, name: str, **overrides: Any) -> Any:
        """``models.load(name)``, remembered for the provenance block."""
        lm = models.load(name, **overrides)
        self.models.append(lm)
        return lm

    # ------------------------------------------------------------------ figures
    def figure(self, fig: Any, name: str, *, key: bool = False, title: str | None = None) -> None:
        """Save ``fig`` as ``<job dir>/<name>.png``, show it as an image output, close it.

        ``key=True`` marks one of the notebook's one to three key figures: the report
        shows those as thumbnails on the index page.
        """
        data = png_bytes(fig)
        fname = name if name.endswith(".png") else f"{name}.png"
        results.atomic_write_bytes(self.out / fname, data)
        if title is None:
            title = fig.get_suptitle() or (fig.axes[0].get_title() if fig.axes else "") or name
        plt.close(fig)
        self.figures = [f for f in self.figures if f["file"] != fname]
        self.figures.append({"file": fname, "title": title or name, "key": bool(key)})
        _display(Image(data=data, format="png"))  # returns None: a path would print as the cell's result

    # ------------------------------------------------------------------ tables
    def table(self, data: Any, *, caption: str | None = None, formats: Mapping[str, str] | None = None,
              index: bool = True, max_rows: int = 40) -> None:
        """Show ``data`` (DataFrame, Series, dict of rows/columns, list of dicts) as a table.

        Floats get 4 significant digits unless ``formats`` gives a column its own format
        (``{"share": "{:.1%}"}``); long tables show their first ``max_rows`` rows.
        """
        df = as_frame(data)
        keep = results.nonempty_columns(df.to_dict("records"), list(df.columns))
        df = df[keep] if keep and len(df) else df  # a column empty in every row is dropped (the report's rule too)
        shown = df.head(max_rows)
        self._n_tables += 1
        sty = shown.style.set_uuid(f"{self.notebook[:2]}t{self._n_tables}")
        fmt = {c: TABLE_FLOAT for c in shown.columns if shown[c].dtype.kind == "f"}
        fmt.update({k: v for k, v in (formats or {}).items() if k in shown.columns})
        # escape: cell text such as T5's "</s>" or "<extra_id_0>" would otherwise vanish as HTML tags
        sty = sty.format(na_rep="–", escape="html").format(fmt, na_rep="–", escape="html")
        if not index:
            sty = sty.hide(axis="index")
        if caption or len(df) > max_rows:
            more = f" (first {max_rows} of {len(df)} rows)" if len(df) > max_rows else ""
            sty = sty.set_caption(f"{caption or ''}{more}")
        _display(sty)

    # ------------------------------------------------------------------ the end
    def finish(self, metrics: dict, headline: Mapping[str, dict] | None = None, *, show: bool = True,
               not_run: Mapping[str, str] | None = None) -> None:
        """Record ``metrics.json`` (metrics, headline, parameters, figures, provenance) and
        show the headline table: ``value [95 % interval]`` beside each null.

        Every headline number must carry an interval (``results.headline(..., interval=)``;
        ``"exact"`` for a count or a closed form). ``not_run``: ``{section title: one-line
        reason}`` for each section that could not run on this model, recorded as the
        top-level ``"not_run"`` of ``metrics.json`` (the index shows each reason where the
        section's figures would be); checked before anything is written.
        """
        not_run = results.check_not_run(not_run)
        headline = dict(headline or {})
        missing = [k for k, h in headline.items() if h.get("value") is not None and h.get("interval") is None]
        if missing:
            raise ValueError(f"headline {', '.join(missing)}: no interval; pass interval= (a bootstrap, the spread "
                             f"over seeds, or 'exact' for a number that involves no sampling)")
        prov = provenance.collect(self.models)
        main = self.lm if self.lm is not None else (self.models[0] if self.models else None)
        prov.update({"parameters": self.params, "wall_time_s": round(time.perf_counter() - self.started, 2),
                     "dtype": str(main.dtype).replace("torch.", "") if main is not None else None,
                     "model_device": str(main.device) if main is not None else None})
        results.record(self.out, metrics, headline=headline, notebook=self.notebook, model=self.model_name,
                              parameters=self.params, figures=self.figures, provenance=prov, not_run=not_run)
        if show and headline:
            self.table(headline_frame(headline), caption="Headline numbers: value [95 % interval] and the null "
                       "models (* = the interval excludes that null)", index=False)
            notes = [f"- **{h.get('label') or k}**: {h['note']}" for k, h in headline.items() if h.get("note")]
            if notes:
                _display(Markdown("\n".join(notes)), metadata={"geolip": "headline-notes"})


def as_frame(data: Any):
    """A DataFrame from a DataFrame, Series, dict (of rows or of columns) or list of dicts."""
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, pd.Series):
        return data.to_frame()
    if isinstance(data, Mapping):
        vals = list(data.values())
        if vals and all(isinstance(v, Mapping) for v in vals):
            return pd.DataFrame(data).T
        if vals and all(np.isscalar(v) or v is None for v in vals):
            return pd.Series(data, name="value").to_frame()
        return pd.DataFrame(data)
    return pd.DataFrame(data)


def headline_frame(headline: Mapping[str, dict]):
    """Rows of the headline table: metric, value [lo, hi], each null, interval method."""
    rows = []
    for key, h in headline.items():
        nulls = []
        for kind, n in (h.get("nulls") or {}).items():
            mark = " *" if n.get("separated") else ""
            nulls.append(f"{kind}: {format_value(n.get('value'), n.get('interval'), h.get('fmt'))}{mark}")
        iv = h.get("interval") or {}
        rows.append({"metric": h.get("label") or key,
                     "value [95 % interval]": format_value(h.get("value"), iv, h.get("fmt")),
                     "null models": "; ".join(nulls) or "–", "interval": iv.get("method", "–")})
    return pd.DataFrame(rows)


class _KernelHintFilter:
    """Drops transformers' "`fn` is falling back to its reference PyTorch implementation"
    hints (optional CUDA kernels such as causal_conv1d for Qwen3.5's linear attention): the
    reference path is exact, and on a CPU there is nothing to install, so in an executed
    notebook the hint is only a red stderr block."""

    def filter(self, record) -> bool:  # noqa: A003 - logging's protocol
        return "falling back to its reference PyTorch implementation" not in record.getMessage()


KERNEL_HINTS = _KernelHintFilter()


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (every generator a notebook may touch)."""
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def start(notebook: str, namespace: Mapping[str, Any], *, load_model: bool = True) -> Job:
    """Open a notebook: job directory, plotting style, inline figures, seeds, model.

    Parameters
    ----------
    notebook : str
        The notebook's name (``"01_embedding_terrain"``).
    namespace : dict
        ``globals()`` of the notebook, read for its declared parameters (``MODEL``,
        ``OUT_DIR``, ``SEED`` and the rest).
    load_model : bool
        Load ``MODEL`` (when declared and not None) into ``job.lm``.
    """
    params = declared_parameters(namespace)
    model = params.get("MODEL")
    model_key = None if model is None else str(model)
    out = results.job_dir(namespace.get("OUT_DIR"), notebook, model_key)
    if _in_kernel():  # figures a person draws by hand show inline too (the library's own are shown as PNG)
        get_ipython().run_line_magic("matplotlib", "inline")
    plotting.setup()
    hub_kernels = logging.getLogger("transformers.integrations.hub_kernels")
    if KERNEL_HINTS not in hub_kernels.filters:
        hub_kernels.addFilter(KERNEL_HINTS)
    seed = params.get("SEED", 0)
    seed_everything(int(seed) if isinstance(seed, (int, float)) and math.isfinite(seed) else 0)
    job = Job(notebook=notebook, params=params, out=out, model_name=model_key)
    if load_model and model_key is not None:
        job.lm = job.load(model_key)
    return job


__all__ = ["Job", "as_frame", "declared_parameters", "headline_frame", "seed_everything", "start"]
