# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
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

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # seed of every random draw in this notebook

# %%
from geolip_lib import models, plotting, results

NOTEBOOK = "00_template"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
lm = models.load(MODEL)
metrics: dict = {}

# %% [markdown]
# ## 1. First section (mirrors the seed's first measurement)
#
# One paragraph of narrative: what is measured and what a reader should look for.

# %%
metrics["example"] = {"n_params": sum(p.numel() for p in lm.model.parameters())}
metrics["example"]

# %% [markdown]
# ## Results
#
# One call records every number to `metrics.json`; the headline numbers appear in the
# report's composite table beside their null baselines.

# %%
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL,
               headline={"n_params": results.headline(metrics["example"]["n_params"])})

# %% [markdown]
# ## References
#
# - Seed 001, section N.
