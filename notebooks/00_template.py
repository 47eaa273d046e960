# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # NN · Title of the experiment
#
# **Question.** One or two sentences: what does this notebook measure, and why?
#
# **Seed.** Which seed document and section(s) this mirrors (e.g. seed 001 §1).
#
# Run it by hand in JupyterLab (the defaults below use a tiny model and finish in
# seconds), or headless through `python run_all.py --profile demo --notebooks NN_name`.
#
# Each parameter is `NAME = default  # [range] what it is`: the bracket is a Python condition
# on `x`, the value, written with ≤ ≥ ≠ (`[x ≥ 1]`, `[0 < x < 1]`, `[x is None or x ≥ 1]`,
# `[x in ("mean", "last")]`, `[any]`), checked by `run_all` before any kernel starts
# (notebooks/README.md).

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # [0 ≤ x < 2**32] seed of every random draw in this notebook

# %%
from geolip_lib import metrics as M
from geolip_lib import results, runtime

job = runtime.start("00_template", globals())  # job dir, plot style, inline figures, seeds, job.lm = MODEL
E = job.lm.input_embeddings()
metrics: dict = {}

# %% [markdown]
# ## 1. First section (mirrors the seed's first measurement)
#
# One paragraph of narrative: what is measured and what a reader should look for.
# Cells are library calls (at most ~15 lines, no `def`/`lambda`); figures come from a
# `plots.py` function and are shown + saved by `job.figure`; results are shown with
# `job.table` (formatted), never printed dicts.

# %%
pent = M.pentachoron_cv(E, 500, seed=SEED)
metrics["pentachoron"] = pent.as_dict()
job.table({"embedding": pent.as_dict()}, caption="Pentachoron volumes")

# %% [markdown]
# ## Results
#
# `job.finish` records `metrics.json` (metrics, headline numbers with their 95 %
# intervals and nulls, the declared parameters, figures, provenance) and shows the
# headline table.

# %%
cv_iv = M.intervals.bootstrap(pent.volumes, M.intervals.cv, seed=SEED, what="simplices")
job.finish(metrics, {
    "pentachoron_cv": results.headline(pent.cv, interval=cv_iv, nulls={"gaussian": 0.0}, label="pentachoron CV"),
    "n_rows": results.headline(int(E.shape[0]), interval="exact", label="rows"),
})

# %% [markdown]
# ## References
#
# - Seed 001, section N.
