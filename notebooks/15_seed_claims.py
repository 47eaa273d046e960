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
# # 15 · Do the seed's claims hold?
#
# **Question.** Seed 001 ends with a table of "universal constants" and its best modulator
# result. Measured here with intervals and null models, which of them hold, which do not,
# and which this profile cannot test — and where a value holds, does a null model (a
# Gaussian, the unit sphere, the same architecture at random init) give it too?
#
# **Seed.** Seed 001's closing summary table and best modulator result. This notebook runs
# once per profile, after every other notebook, and reads each job's `metrics.json` under
# `REPORT_ROOT` (`metrics["claims"]`, recorded by notebooks 01, 02, 09 and 10 in the
# seed's definition of each quantity, with the project's corrected definition beside it).
# The rules and the registry live in `geolip_lib.claims`.
#
# Run it by hand in JupyterLab after running some notebooks by hand (their results are in
# `reports/adhoc`), or headless as the last job of a profile:
# `python run_all.py --profile demo --notebooks 15_seed_claims --resume`.

# %% tags=["parameters"]
REPORT_ROOT = None  # profile output root to read; None -> reports/adhoc (where notebooks run by hand write)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all

# %%
from geolip_lib import claims, results, runtime
from geolip_lib.claims import plots
from geolip_lib.weights.spectral import QK_BALANCE_STATEMENT

job = runtime.start("15_seed_claims", globals(), load_model=False)  # job dir, style, inline figures
root = REPORT_ROOT or results.REPORTS / "adhoc"
rows = claims.evaluate(root)
summary = claims.summarize(rows)
print(f"Read the claims recorded under {root}: {len(rows)} (claim, model, scope) rows.")

# %% [markdown]
# ## 1. The seed's table, with verdicts
#
# One row per claim. The verdict is taken over the **seed's own models** only: *held*
# when the interval of every tested scope satisfies the rule, *not held* when one
# contradicts it, *not testable on this profile* when a seed model's job is missing or an
# interval straddles the threshold (the reason says which). The stand-ins column gives the
# verdicts on the other models of the profile (MiniLM, tiny random models): whether the
# property holds there, not whether the seed's claim about its models holds.

# %%
job.table(claims.summary_frame(summary), caption="Seed 001's summary table, tested", index=False)

# %% [markdown]
# ## 2. Every model and scope
#
# The measured value `value [95 % interval]` in the seed's definition, the project's
# corrected definition where it differs, the nulls, and the verdict with its reason.
# Sparsity is per stack and attention kind (encoder self, decoder self, decoder cross;
# vision and text towers apart), as the seed measured it.

# %%
job.table(claims.detail_frame(rows, seed_models=True), caption="The seed's models", index=False, max_rows=60)
job.table(claims.detail_frame(rows, seed_models=False), caption="Stand-ins (models the seed did not measure)",
          index=False, max_rows=60)

# %% [markdown]
# ## 3. Figure
#
# Each claim's measured values against the seed's value or band, coloured by verdict, with
# the nulls as hollow markers.

# %%
job.figure(plots.claims_forest(rows), "seed_claims", key=True)

# %% [markdown]
# ## 4. The QK sign balance, once
#
# The 0.500 claim depends on which matrix is meant. The project's one statement, which
# every notebook and docstring cites:

# %%
print(f"The statement the notebooks cite. {QK_BALANCE_STATEMENT}")

# %% [markdown]
# ## Results
#
# The headline counts the claims by verdict (counts: exact).

# %%
job.finish({"claims_summary": summary, "claims_rows": rows, "root": str(root)}, claims.headline(summary))

# %% [markdown]
# ## References
#
# - Seed 001, closing summary table ("universal constants") and the best modulator result.
# - `geolip_lib.claims`: the registry, the rules and the verdicts; known-answer tests in
#   `tests/unit/claims/test_claims.py`.
