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
# result. Measured here with intervals and null models: which claims hold, which hold only
# because any network of that shape (or a Gaussian, or the unmodulated encoder) gives the same
# value, which do not hold, and which the data cannot decide — and does the answer change
# between what the table says and what the seed's cells actually measured?
#
# **Seed.** Seed 001's closing summary table and best modulator result, transcribed as data in
# `params/claims/seed-001.yaml` (the `CLAIMS` parameter names another file: another paper's
# table gives the same page, without code; the format is in `params/README.md`). This notebook
# runs once per profile, after every other notebook, and reads each job's `metrics.json` under
# `REPORT_ROOT` (`metrics["claims"]`, recorded by notebooks 01, 02, 07, 09 and 10, or any
# headline a claims file points at by its path). The rules and verdicts live in
# `geolip_lib.claims`.
#
# Run it by hand in JupyterLab after running some notebooks by hand (their results are in
# `reports/adhoc`), or headless as the last job of a profile:
# `python run_all.py --profile demo --notebooks 15_seed_claims --resume`.

# %% tags=["parameters"]
REPORT_ROOT = None  # profile output root to read; None -> reports/adhoc (where notebooks run by hand write)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all
CLAIMS = "seed-001"  # claims file: a name under params/claims/ (or a path); another paper's table is another file

# %%
from geolip_lib import claims, results, runtime
from geolip_lib.claims import plots
from geolip_lib.weights.spectral import QK_BALANCE_STATEMENT

job = runtime.start("15_seed_claims", globals(), load_model=False)  # job dir, style, inline figures
root = REPORT_ROOT or results.REPORTS / "adhoc"
claims.check_name(CLAIMS)  # one line for a misspelt CLAIMS (the runner checks it before any kernel, too)
table = claims.load(CLAIMS)
rows = claims.evaluate(root, table)
summary = claims.summarize(rows, table)
tiny = claims.pipeline_checks(root, table)
tiny_note = (f" The pipeline also ran on {len(tiny)} tiny random model(s) ({', '.join(tiny)}): pipeline checks, "
             "given no verdict and not listed beside the claims." if tiny else "")
print(f"Read the claims of {table.file} ({table.title}) under {root}: {len(rows)} (claim, reading, model, scope) "
      f"rows.{tiny_note}")

# %% [markdown]
# ## 1. The verdicts, and how they are reached
#
# Four verdicts, each over a reading's **own models** (the seed's models):
#
# - **held** — the rule is satisfied and the value is separated from every null that bears on
#   the claim;
# - **held, but the null gives it too** — the rule is satisfied, and so is a null (or the value
#   is not separated from it): not a learned property;
# - **not held** — the value, or its whole interval, contradicts the rule;
# - **undecided** — the interval straddles the rule, a null that bears on it was not recorded,
#   or the test lacks the power to decide; the reason says what would decide it.
#
# An **exact** value (computed on the whole object: every Q weight, every layer, every head)
# has no interval and is compared with the seed's number at the precision the seed printed it
# ("93.7 %" is [93.65, 93.75) %; "~0.000" is |x| < 0.0005; "0.500" is [0.4995, 0.5005)); a
# **sampled** or **over-seeds** value is judged by its whole interval. A change-point test that
# finds nothing is *undecided* unless its power against a kink of the seed's size, computed by
# simulation with the same test, is shown. A value **forced by shape** (the weight shapes fix
# it, whatever the weights hold) is kept out of every verdict. *Not tested on this profile*: no
# job of a reading's models ran here.
#
# Each claim is transcribed twice where the two differ: **as the table says** (its models, as
# the summary names them) and **as the seed measured** (the models, representation, pooling and
# sizes of the seed's own cells); the project's own readings (its corrected definitions, its
# own pooling, threshold or change-point test) are labelled as such. Each reading says whose it
# is — the seed's, the project's, or an **extrapolation** (a model the seed never measured that
# way: Qwen3.5 0.8B and 4B were not in the seed's weight battery, §5's pooling applied to T5 is
# the project's, the CV band on T5-base and T5-XXL was never measured). Where defensible
# readings of the seed's words give different verdicts (the cross-layer correlation pooled over
# Q, K, V, O or over the seed's Q, K, QKV, mlp_up), the last column says **undecided
# (reading)**: a choice of reading, not the data, would decide it.
#
# Every null listed beside a value decides by the same rule: if the null satisfies the rule,
# the reading is at most "held, but the null gives it too" (the unmodulated identity preserves
# coherence perfectly; the seed's sense is lift *and* coherence). Values from dequantized
# weights (GGUF) give no verdict where the quantization step could decide the rule. Tiny
# random models are pipeline checks: no verdict, not listed beside the claims.
#
# The phase boundary's power comes from each job's own seed curves: the kink the project
# constructs from two reference points of seed §10 (slope change 0.31 at 0.29154; the seed
# prints no kink size) is added to the observed curves, and experiments are drawn with the
# observed seeds' spread beyond their own smooth trend. The test is against a quadratic (a
# kink beyond smooth curvature: relational correlation and preservation bend smoothly with
# alpha, and over a line any bend is "found"); the price, computed below for each grid, is the
# share of a hinge's energy the no-change model absorbs (the test sees only the rest).

# %%
for sentence in claims.power_sentences(rows, table):  # the grids' hinge energy, the kink, each job's power
    print(f"{sentence}")

# %% [markdown]
# One row per claim, the readings side by side (the last column: the verdict over the readings):

# %%
job.table(claims.readings_frame(summary), caption=f"{table.title}: each reading's verdict, side by side", index=False)
for r in claims.readings(summary):
    print(f"{r['title']}: {r['over the readings']}")

# %% [markdown]
# ## 2. Each reading, with its reason
#
# The stand-ins column gives the verdicts on the profile's other models (MiniLM, tiny random
# models): whether the property holds there, not whether the seed's claim about its models
# holds. The last column says which null gives the value too, where one does.

# %%
job.table(claims.summary_frame(summary), caption=f"{table.title}: one row per claim and reading", index=False)

# %% [markdown]
# ## 3. Every model and scope
#
# The measured value (`value [95 % interval]`, or the exact value with what it is computed on),
# the project's corrected definition where it differs, the nulls, and the verdict with its
# reason. Sparsity is per stack and attention kind (encoder self, decoder self, decoder cross;
# vision and text towers apart), as the seed measured it.

# %%
job.table(claims.detail_frame(rows, seed_models=True), caption="The readings' own models", index=False, max_rows=80)
job.table(claims.detail_frame(rows, seed_models=False), caption="Stand-ins (models the claims are not about)",
          index=False, max_rows=80)

# %% [markdown]
# ## 4. Figure
#
# Each claim's measured values against the rule's region, coloured and shaped by verdict, exact
# values as points marked "exact", the nulls as hollow markers.

# %%
job.figure(plots.claims_forest(rows, claims=table), "seed_claims", key=True)

# %% [markdown]
# ## 5. The QK sign balance, once
#
# The 0.500 claim depends on which matrix is meant. The project's one statement, which
# every notebook and docstring cites:

# %%
print(f"The statement the notebooks cite. {QK_BALANCE_STATEMENT}")

# %% [markdown]
# ## Results
#
# The headline counts the (claim, reading) rows by verdict (counts: exact).

# %%
job.finish({"claims_file": table.file, "claims_summary": summary, "claims_rows": rows, "root": str(root)},
           claims.headline(summary))

# %% [markdown]
# ## References
#
# - Seed 001, closing summary table ("universal constants") and the best modulator result;
#   transcribed in `params/claims/seed-001.yaml`.
# - `geolip_lib.claims`: the claims files, the rules, the verdicts and the power simulation
#   (`claims/power.py`, with `metrics/changepoint.py`'s test); tests in `tests/unit/claims/`
#   (one constructed case per verdict in `test_verdicts.py`).
