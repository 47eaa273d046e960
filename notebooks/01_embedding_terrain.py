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
# # 01 · Embedding terrain
#
# **Question.** What does the geometry of a model's embedding table look like — its
# norms, cosine distribution, intrinsic dimensionality (participation ratio), the spread
# of random 4-simplex (pentachoron) volumes — and how far is it from an isotropic Gaussian
# of the same shape and scale, and from the same architecture at random initialisation?
# How do hidden states evolve through the layers, and (encoder–decoder models) how far
# apart are the encoder's and the decoder's states on a translation pair?
#
# **Seed.** Seed 001 §1 (T5-Small embedding + layer geometry) and §13a (Qwen3.5 embedding
# probes), made generic over model families: text models analyse their token embedding;
# vision models (DINOv2, open_clip's vision tower) their position and patch embeddings;
# open_clip analyses its text tower's token embedding plus the vision tables.
#
# **Which matrix and sample** (so that the numbers can be recomputed independently):
# `E = lm.input_embeddings()` — the float32 token-embedding table (MiniLM / BERT:
# `embeddings.word_embeddings.weight`, 30 522 × 384; T5: `shared.weight`; open_clip:
# `token_embedding.weight`; DINOv2: the learned position embeddings). PR uses the centred
# covariance of **all** rows (or a `default_rng(SEED).choice(V, PCA_ROWS, replace=False)`
# sample when `PCA_ROWS` is set). The pentachoron CV draws `N_SIMPLICES` sets of 5
# distinct rows from the whole table (`metrics.sample_distinct_rows(V, N_SIMPLICES, 5,
# SEED)`) and reports population std / mean of the volumes; a table of at most
# `metrics.EXACT_MAX` (200 000) distinct 5-row subsets (≤ 32 rows) is measured on every
# one of them (exact). It is measured twice on a text model's token table: on **every row**
# (the seed's §1 and §13a) and **without the tokenizer's special tokens**
# (`probes.content_rows`: less `tokenizer.all_special_ids` and any rows past the tokenizer's
# vocabulary, as the seed's vocabulary reading of §2), each with its row count. Cosine statistics use the
# upper triangle of the cosine matrix of `default_rng(SEED).choice(V, N_COS_SAMPLE,
# replace=False)` rows.
#
# Run it by hand in JupyterLab (the defaults below use a tiny model and finish in
# seconds), or headless through `python run_all.py --profile demo --notebooks 01_embedding_terrain`.

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # [0 ≤ x < 2**32] seed of every random draw in this notebook
SEED_MODE = False  # True: every draw seeded with 42, as the seed's default_rng(42) (§1), in place of SEED
N_COS_SAMPLE = 2000  # [2 ≤ x ≤ 100_000] rows sampled for the pairwise-cosine distribution (seed: 5000)
N_SIMPLICES = 1000  # [2 ≤ x ≤ 10**6] pentachora drawn for the volume CV (seed: 1000)
N_DIST_SAMPLE = 1000  # [2 ≤ x ≤ 100_000] rows sampled for Euclidean distances (seed: 2000)
PCA_ROWS = None  # [x is None or 2 ≤ x ≤ 10**7] rows for the eigenspectrum (None: every row, as in seed §1; seed §13a used 10000)
RANDOM_INIT_BASELINE = True  # also measure the same architecture at random init (null baseline)
N_IMAGES = 8  # [1 ≤ x ≤ 10_000] synthetic probe images for vision stacks
MAX_LENGTH = 64  # [1 ≤ x ≤ 10**6] token truncation for the probe sentences
N_BOOT = 1000  # [1 ≤ x ≤ 10**6] bootstrap resamples behind every 95 % interval

# %%
SEED = 42 if SEED_MODE else SEED  # seed mode: the seed's seed (the draws' order stays the project's)

# %%
from geolip_lib import metrics as M
from geolip_lib import probes, results, runtime, trajectory
from geolip_lib.probes import frequency, plots

job = runtime.start("01_embedding_terrain", globals())  # job dir, plot style, inline figures, seeds, job.lm = MODEL
lm = job.lm

# %%
E = lm.input_embeddings(view=True)  # the model's own table (read, never written): no second copy
V_, D_ = E.shape
# the random-init null: a whole twin at <= 1e9 parameters, else the tables alone (no second model held)
init_null = probes.uncertainty.RandomInitNull(lm) if RANDOM_INIT_BASELINE else None
E_init = init_null.table0 if init_null is not None else None
metrics: dict = {"model": {"name": lm.name, "family": lm.family, "is_text": lm.is_text, "stacks": list(lm.stacks)},
                 "embedding_shape": [V_, D_]}
headline: dict = {}
not_run: dict = {}  # section title -> why it cannot run on this model (recorded in metrics.json, shown on the index)
print(f"{lm.name} ({lm.family}): {'token' if lm.is_text else 'position'} embedding table E = {V_} x {D_}.")
# the rows without the tokenizer's special tokens (text models): the second reading of the pentachoron CV
content, content_idx = probes.content_rows(E, lm.tokenizer) if lm.is_text else (None, None)
rows_all, rows_content = f"all {V_} rows", probes.uncertainty.rows_text(content, V_) if content else None

# %% [markdown]
# **Null models.** Every headline number is measured three or four times: on `E`; on
# `gaussian` — an isotropic Gaussian of `E`'s shape and total variance
# (`M.gaussian_like(E, seed=SEED + 1)`); on `random_init` — the same table from the same
# architecture at random initialisation (when `RANDOM_INIT_BASELINE`); and, for the
# scale-free pentachoron CV, on `sphere` — points uniform on the unit sphere $S^{D-1}$ of
# the same dimension. Each carries its own 95 % interval, computed on exactly the rows or
# simplices that were measured (`geolip_lib.probes.uncertainty`).
#
# **What kind of number each is.** A number computed on the whole table (the PR of all
# rows, the ten digits' correlation) is *exact*: no interval, "exact (all N …)" beside it.
# A number of sampled rows or simplices (mean cosine, pentachoron CV, volume ratio) has an
# interval over that sampling. **The nulls are distributions**: the Gaussian, the unit
# sphere and the random-init table are each drawn with 5 seeds of their own (`N_NULL_SEEDS`:
# Gaussian seeds `SEED + 1 + 10k`, sphere `SEED + 2 + 10k`, random-init models
# `params.seed + 1 + k`), measured exactly as the model is, and the headline's null is the
# mean over those seeds with the 95 % prediction interval over them — where one more draw
# of the null would land. The tables below show the first seed of each null. The random-init
# model of seed 0 is built whole (section 8 runs it) at up to 1e9 parameters; for the other
# seeds, and above 1e9 parameters for every seed, only the input-embedding table is drawn, with
# the model's own initialisation (`probes.uncertainty.random_init_table`): the table is all this
# null measures (above 1e9 parameters section 8 runs the twin one block at a time; `metrics.json`'s
# `random_init_null` says which).

# %%
init_table = init_null.table if init_null is not None else None  # k -> random-init table of init seed k
if init_null is not None:  # what the null cost: seed 0 the whole twin or its table, the others the table alone
    metrics["random_init_null"] = init_null.drivers(M.intervals.N_NULL_SEEDS)
null_dist = probes.uncertainty.null_distributions(
    E, init_table, n_seeds=M.intervals.N_NULL_SEEDS, n_cos=N_COS_SAMPLE, n_simplices=N_SIMPLICES, pca_rows=PCA_ROWS,
    seed=SEED, tokenizer=lm.tokenizer if lm.is_text else None, n_boot=N_BOOT, rows=content_idx)
# the first Gaussian null, shown in the tables below: drawn after the nulls (one table fewer held while they run)
E_gauss = M.gaussian_like(E, seed=SEED + 1)
mats = {k: T for k, T in {"embedding": E, "gaussian": E_gauss, "random_init": E_init}.items() if T is not None}

# %% [markdown]
# ## 1. Architecture introspection
#
# Parameter census by component (first two name parts, tied tensors counted once), and
# which parameters alias the input embedding (weight tying).

# %%
census = probes.parameter_census(lm.model)
tying = probes.weight_tying(lm.model)
metrics.update(census=census, tying=tying)
job.table(probes.tables.census_frame(census), caption=f"Parameters by component (largest 12; total {census['total']:,})",
          formats={"params": "{:,}", "share": "{:.1%}"})
job.table(probes.tables.tying_frame(tying), caption="Weight tying", index=False)

# %% [markdown]
# ## 2. Global embedding statistics
#
# Row norms (mean, spread, percentiles, zero rows) and per-dimension means and stds.

# %%
ns, norms = probes.norm_stats(E, return_data=True)
metrics["norms"] = ns
job.table(probes.tables.norm_frame(ns), caption="Row norms of E and per-dimension statistics",
          formats={"zero rows": "{:,}"})

# %% [markdown]
# ## 3. Cosine-similarity distribution
#
# Pairwise cosines on a seeded row sample, their percentiles, and the share of pairs
# within ±0.01 of the seed's named constants (0, 0.19471, 0.29514, 0.5). The Gaussian
# baseline centres on 0 with std ≈ 1/√D. The interval of the mean is a bootstrap over
# the sampled rows (every pair of distinct draws enters a resample).

# %%
cos = {k: M.cosine_stats(T, n_sample=N_COS_SAMPLE, seed=SEED, return_values=True) for k, T in mats.items()}
cos_vals = {k: c.pop("values") for k, c in cos.items()}
cos_iv = {k: probes.mean_cosine_interval(T, N_COS_SAMPLE, SEED, n_boot=N_BOOT) for k, T in mats.items()}
metrics.update({"cosine" + ("" if k == "embedding" else f"_{k}"): c for k, c in cos.items()})
job.table(probes.tables.cosine_frame(cos, cos_iv), caption="Pairwise cosine on the seeded row sample",
          formats={"pairs": "{:,}"})
near = probes.tables.near_constants_frame(cos)
job.table(near, caption="Share of pairs within ±0.01 of each named constant", formats={c: "{:.2%}" for c in near})
all_rows = cos["embedding"]["n_sample"] >= V_  # a table no larger than the sample: every pair, exact
headline["cosine_mean"] = results.headline(
    cos["embedding"]["mean"], interval="exact" if all_rows else cos_iv["embedding"], over=f"{V_} rows, every pair",
    label="mean cosine", fmt=".4f", nulls=null_dist["cosine_mean"])

# %% [markdown]
# ## 4. Eigenspectrum and intrinsic dimensionality
#
# Participation ratio `(Σλ)² / Σλ²` of the centred covariance, entropy effective
# dimension, and the number of components for 80/90/95/99 % of the variance. The PR of
# the whole table (`PCA_ROWS = None`) is **exact**: every row is used, there is nothing to
# resample, and the headline shows it without an interval ("exact (all V rows)"). On a row
# sample (`PCA_ROWS` set) the PR is biased low (by the order of PR² / rows): the headline
# is then the bootstrap bias-corrected estimate with its basic group-bootstrap interval,
# and the plug-in is recorded beside it (`plug_in`); the table then shows each table's
# plug-in PR with its group-bootstrap interval (the Gaussian's covers its true PR = D). The
# table shows the first seed of each null; the headline's nulls are over 5 seeds.

# %%
eig, ev = {}, {}
for k, T in mats.items():
    eig[k], ev[k] = probes.eigenspectrum(T, max_rows=PCA_ROWS, seed=SEED, return_data=True)
# a row sample (PCA_ROWS): each table's group-bootstrap interval; every row: the PR is exact, no interval
pr_iv = {k: probes.pr_interval(T, PCA_ROWS, SEED, n_boot=N_BOOT) for k, T in mats.items()} if PCA_ROWS else {}
metrics.update({"eigenspectrum" + ("" if k == "embedding" else f"_{k}"): e for k, e in eig.items()})
job.table(probes.tables.eigen_frame(eig, pr_iv), caption=f"Eigenspectrum of the centred covariance (D = {D_})",
          formats={"PR / D": "{:.3f}", "top share": "{:.1%}", "rows": "{:,}"})

# %% [markdown]
# The headline PR and PR / D: the table's own PR when every row is used (exact), else the
# bias-corrected estimate with its interval and the plug-in beside it.

# %%
pr_est = probes.uncertainty.pr_estimate(E, PCA_ROWS, SEED, n_boot=N_BOOT)  # exact on every row, else bias-corrected
if pr_est["interval"] == "exact":
    pr_est["value"] = eig["embedding"]["pr"]  # the table's own number (same rows), not a second route to it
pr_plug = pr_est["plug_in"]
headline["pr"] = results.headline(pr_est["value"], interval=pr_est["interval"], over=pr_est["over"], plug_in=pr_plug,
                                  label="PR", fmt=".1f", nulls=null_dist["pr"], note=probes.uncertainty.PR_NOTE)
headline["pr_over_dim"] = results.headline(
    pr_est["value"] / D_, interval="exact" if pr_est["interval"] == "exact" else probes.scale_interval(
        pr_est["interval"], 1 / D_, "divided by D"), over=pr_est["over"],
    plug_in=None if pr_plug is None else pr_plug / D_, label="PR / D", fmt=".3f", nulls=null_dist["pr_over_dim"])

# %% [markdown]
# The cumulative explained variance — the share of the variance in the first *k*
# principal components, `cumsum(λ) / Σλ` — drawn for the first 200 components with the
# 95 % and 99 % lines, as in seed §13a's panel (recorded: the first 200 values per table).

# %%
metrics["cumulative_variance"] = {k: probes.cumulative_variance(e, top=200) for k, e in ev.items()}
job.figure(plots.cumulative_variance(ev, title=f"{lm.name}: cumulative explained variance (D = {D_})"),
           "cumulative_variance")

# %% [markdown]
# ## 5. Pentachoron geometry (Cayley–Menger)
#
# Volumes of random 4-simplices drawn from the whole table (every 5-row subset of a table
# of at most 32 rows: exact); the coefficient of variation (std / mean) beside the Gaussian,
# the unit sphere of the same dimension and the random-init table (all measured on the same
# index sets), and the mean-volume ratio against the Gaussian. A text model's table is
# measured a second time without its special tokens (the rows of `content_rows`).
#
# CV intervals: the table is the whole population of its 5-row subsets, so the CV's
# sampling distribution is drawn from the table itself — 400 fresh draws of `N_SIMPLICES`
# subsets (`probes.uncertainty.pentachoron_cv_interval`), the basic interval about the CV of
# all of them. A bootstrap over the one sample (BCa, as this notebook once did) cannot see the rare
# subsets of large-norm rows it missed: on simulated heavy-tailed tables it covered the
# table's CV 73–87 % of the time, the redrawn interval 94–96 %
# (`tests/unit/metrics/test_interval_coverage.py`). Volume ratio: BCa over the simplices,
# each simplex's two volumes resampled together.

# %%
pent, vols = probes.pentachoron_probe(E, N_SIMPLICES, seed=SEED, random_init=E_init, return_data=True,
                                      intervals=True)
metrics["pentachoron"] = pent
cv_iv = {k: M.intervals.Interval(**pent[k]["interval"]) for k in vols}
# the same CV without the special tokens: the whole table's draws less the subsets that touch one, topped up
# with fresh subsets of the kept rows, and its own interval drawn from those rows
pc = probes.content_pentachoron(E, content_idx, content, N_SIMPLICES, seed=SEED) if content else None
if pc is not None:
    metrics["pentachoron_content"] = pc["record"]
    cvc, cvc_iv = pc["result"], pc["interval"]
frame_rows = {**pent, **({"embedding, no special tokens": pc["record"]} if pc else {})}
frame_iv = {**cv_iv, **({"embedding, no special tokens": cvc_iv} if pc else {})}
job.table(probes.tables.pentachoron_frame(frame_rows, frame_iv),
          caption=f"Pentachoron volumes ({N_SIMPLICES} draws per table, or every 5-row subset where exact)",
          formats={"mean volume": "{:.4g}", "std volume": "{:.4g}"})
job.figure(plots.pentachoron_volumes(vols, {k: pent[k]["cv"] for k in vols}, cv_iv,
                                     title=f"{lm.name}: pentachoron volume / mean (D = {D_})"), "pentachoron_volumes")

# %% [markdown]
# Is the CV a property of the table or of its dimension? Points uniform on $S^{D-1}$ and
# the isotropic Gaussian have a CV that only `D` sets; where the table's CV sits inside
# (or within 10 % of) those nulls, the headline carries a note saying so.

# %%
cv_nulls = null_dist["pentachoron_cv"]  # each null over its 5 seeds
cv_note = probes.dimension_note(f"{lm.name}: pentachoron CV", pent["embedding"]["cv"], cv_iv["embedding"],
                                {k: (n["value"], n["interval"]) for k, n in cv_nulls.items() if k != "random_init"}, D_)
headline["pentachoron_cv"] = results.headline(pent["embedding"]["cv"], interval=cv_iv["embedding"], nulls=cv_nulls,
                                              label="pentachoron CV", fmt=".4f",
                                              note=" ".join(filter(None, [f"On {rows_all}.", cv_note])))
if "random_init" in pent:
    headline["pentachoron_cv_init"] = results.headline(pent["embedding"]["cv"], interval=cv_iv["embedding"],
                                                       nulls={"random_init": cv_nulls["random_init"]},
                                                       label="pentachoron CV vs init", fmt=".4f")

# %% [markdown]
# The same without the special tokens (text models), beside the same nulls measured on the
# same rows of each null table.

# %%
if pc is not None:
    cvc_nulls = null_dist.get("pentachoron_cv_content", {})
    cvc_note = probes.dimension_note(f"{lm.name}: pentachoron CV without special tokens", cvc.cv, cvc_iv,
                                     {k: (n["value"], n["interval"]) for k, n in cvc_nulls.items() if k != "random_init"},
                                     D_)
    headline["pentachoron_cv_content"] = results.headline(
        cvc.cv, interval=cvc_iv, nulls=cvc_nulls, label="pentachoron CV (no special tokens)", fmt=".4f",
        note=" ".join(filter(None, [f"On {rows_content}.", cvc_note])))
    print(f"Pentachoron CV on {rows_all}: {M.intervals.format_value(pent['embedding']['cv'], cv_iv['embedding'])}; "
          f"on {rows_content}: {M.intervals.format_value(cvc.cv, cvc_iv)}.")

# %% [markdown]
# The mean-volume ratio against the Gaussian of matched total variance (1 by
# construction for the Gaussian itself); its null is the same ratio for the random-init
# table against its own Gaussian — the ratio an untrained table has.

# %%
ratio_iv = probes.volume_ratio_interval(vols["embedding"], vols["gaussian"], SEED, n_boot=N_BOOT)
ratio_nulls: dict = {"gaussian": {"value": 1.0, "interval": "exact"}}  # 1 by construction
ratio_nulls.update(null_dist.get("volume_ratio", {}))  # the random-init table against its own Gaussian, 5 seeds
headline["volume_ratio"] = results.headline(pent["volume_ratio_gaussian"], interval=ratio_iv, nulls=ratio_nulls,
                                            label="volume ratio", fmt=".3f",
                                            note="Mean pentachoron volume over that of a Gaussian of matched total "
                                                 "variance (1 for the Gaussian by construction).")
print(f"Mean-volume ratio vs gaussian: {M.intervals.format_value(pent['volume_ratio_gaussian'], ratio_iv)}.")

# %% [markdown]
# The terrain map: row norms, the cosine distribution beside its nulls, the covariance
# eigenspectra and the log pentachoron volumes.

# %%
job.figure(plots.terrain_map(norms, cos_vals, ev, vols, title=f"{lm.name}: embedding terrain ({V_} x {D_})",
                             volume_ratio=pent["volume_ratio_gaussian"]), "terrain_map", key=True)

# %% [markdown]
# ## 6. Digit manifold
#
# Cosine between the embeddings of the digits 0–9 and its correlation with `|i − j|`
# (a number line shows as a negative correlation, adjacent digits closer). It is computed
# on all ten digits (45 pairs): **exact** for this table. The table below also shows a
# bootstrap over the ten digits (a resample keeps every pair of distinct draws) — how much
# the number rests on single digits. Nulls: the Gaussian and the random-init table over
# their 5 seeds.

# %%
dig = probes.digit_manifold(E, lm.tokenizer)
metrics["digits"] = dig
digs, dig_iv = {"embedding": dig}, {}
if dig["applicable"]:
    digs.update({k: probes.digit_manifold(T, lm.tokenizer) for k, T in mats.items() if k != "embedding"})
    metrics.update({f"digits_{k}": d for k, d in digs.items() if k != "embedding"})
    dig_iv = {k: probes.digit_corr_interval(d["cosine"], SEED, n_boot=N_BOOT) for k, d in digs.items()}
    job.table(probes.tables.digits_frame(digs, dig_iv), caption="Digit cosine structure")
    job.figure(plots.digits_heatmap(dig["cosine"], dig["corr_abs_diff"], dig_iv["embedding"]), "digits")
else:
    not_run["Digit manifold"] = f"not applicable — {dig['reason']}."
    print(f"Digit manifold: {not_run['Digit manifold']}")

# %%
headline["digit_corr"] = results.headline(
    dig.get("corr_abs_diff"), interval="exact" if dig.get("corr_abs_diff") is not None else None,
    over="10 digits, 45 pairs", label="digit |i-j| corr", fmt=".3f",
    nulls={k: v for k, v in null_dist.get("digit_corr", {}).items() if k in ("random_init", "gaussian")})

# %% [markdown]
# ## 7. Semantic categories
#
# Mean intra-category cosine of single-token words (eight categories from the seed), its
# lift over the global mean cosine, and the cosine matrix of the category centroids.

# %%
cat = probes.category_probe(E, lm.tokenizer, global_mean_cos=cos["embedding"]["mean"])
metrics["categories"] = cat
if cat["applicable"]:
    job.table(probes.tables.category_frame(cat), caption="Intra-category cosine and its lift over the global mean")
    job.figure(plots.categories_heatmap(cat["centroid_cosine"], cat["centroid_names"]), "categories")
else:
    not_run["Semantic categories"] = f"not applicable — {cat['reason']}."
    print(f"Semantic categories: {not_run['Semantic categories']}")

# %% [markdown]
# ## 7b. Token-id-range categories (seed §13a)
#
# Seed §13a took four categories by **token id**: ids 48–57 ("ASCII digits"), 65–90
# ("ASCII upper"), 97–122 ("ASCII lower") — the ASCII codes — and the last 100 ids of
# the table ("special tokens (tail)"), and compared their mean intra-category cosine with
# the global mean. The ASCII codes are those characters only where id *k* is the byte
# *k*; in a byte-level BPE of the GPT-2 kind (Qwen, CLIP) ids 48–57 are `Q`…`Z`, in
# WordPiece `[unused47]`…. Both definitions are measured: **seed** (the id ranges) and
# **project** (the ids of the tokens that *are* those characters, case kept: an uncased
# tokenizer has no upper-case letters). `named chars` counts the ids whose token is the
# character the category names; the tail is the same ids in both. Interval: bootstrap
# over the category's tokens; null: the same ids in the random-init table.

# %%
tr = {k: probes.token_range_probe(T, lm.tokenizer, cos[k]["mean"]) for k, T in mats.items() if k != "gaussian"}
metrics["token_ranges"] = tr["embedding"]
if tr["embedding"]["applicable"]:
    tr["embedding"]["intervals"] = probes.uncertainty.token_range_intervals(E, tr["embedding"], SEED, n_boot=N_BOOT)
    metrics["token_ranges_random_init"] = tr.get("random_init")
    job.table(probes.tables.token_range_frame(tr["embedding"], tr["embedding"]["intervals"], tr.get("random_init")),
              caption=f"Token-id-range categories (seed §13a), both definitions; global mean cosine "
                      f"{M.intervals.format_value(cos['embedding']['mean'], cos_iv['embedding'])}",
              formats={"std": "{:.4f}", "lift": "{:+.4f}", "random init": "{:.4f}"})
else:
    not_run["Token-id-range categories"] = f"not applicable — {tr['embedding']['reason']}."
    print(f"Token-id-range categories: {not_run['Token-id-range categories']}")

# %% [markdown]
# ## 7b. Word frequency and the narrow cone (Gao et al. 2019)
#
# Gao et al. (2019) trace a tied embedding's narrow cone to its **rare words**: a word seldom
# seen as a target is pushed, update after update, along one shared direction. For every token
# that is a whole English word — its frequency is `wordfreq`'s Zipf value (log10 per 10^9 words
# of English text: a proxy, the model's own training data is not at hand) — Spearman's rho
# between frequency and (a) the token's cosine to the table's mean direction, (b) its norm.
# Rare words closer to the mean direction give rho < 0 in (a). Intervals: bootstrap over the
# word tokens. Null: the random-init table on the same tokens (rows drawn independently of the
# words give rho near 0). A vocabulary with fewer than 1000 English word tokens (amino acids,
# reaction SMILES) is not read. Recorded for `params/claims/gao-2019.yaml` (record `rare_words`).

# %%
if lm.is_text:
    freq = frequency.frequency_geometry(E, lm.tokenizer, random_init=E_init, n_boot=N_BOOT, seed=SEED)
else:
    freq = {"applicable": False, "reason": "a vision model has no vocabulary of words"}
metrics["word_frequency"] = frequency.summary(freq)
# Gao (2019)'s third claim, two readings (params/claims/gao-2019.yaml)
rare_claims = {k: frequency.frequency_claim(freq, k, results.headline) for k in ("cos_to_mean", "norm")}
if freq["applicable"]:
    job.figure(frequency.figure(freq, f"{lm.name}: word frequency against the cone ({freq['n_words']} word tokens)"),
               "word_frequency")
else:
    not_run["Word frequency"] = f"not applicable — {freq['reason']}."
    print(f"Word frequency: {not_run['Word frequency']}")

# %%
# the null tables are read: let them go before the hidden states read the model (a 1.5B model: 1.9 GB)
mats = E_gauss = E_init = T = None  # T: the eigenspectrum loop's last table
if init_null is not None:
    init_null.release()

# %% [markdown]
# ## 8. Layer-by-layer hidden-state geometry
#
# Mean token norm and mean pairwise cosine between positions of each sequence, per layer
# (embedding output = layer 0), for the seed's ten sentences — every stack the model has
# (T5: encoder and decoder; open_clip: text and vision). Vision stacks read deterministic
# synthetic images (gratings and noise).

# %%
layers = {}
for stack in lm.probe_stacks:  # Whisper's audio encoder reads no text: left out here (its weights are in 02/06)
    if stack == "vision":
        hs = lm.hidden_states(probes.synthetic_images(N_IMAGES, lm.image_size, seed=SEED), stack=stack)
    else:
        hs = lm.hidden_states(probes.SENTENCES, stack=stack, max_length=MAX_LENGTH)
    layers[stack] = probes.layer_geometry(hs.layers, hs.mask)
hs = None
lm.release_file_pages()  # the forwards read the whole model: its memory-mapped pages leave the resident set again
metrics["layers"] = layers
job.figure(plots.layers(layers), "layers")
job.table(probes.tables.layers_frame(layers), caption="Hidden-state geometry by layer", index=False)

# %% [markdown]
# ## 8b. Encoder vs decoder hidden states (seed §1)
#
# Encoder–decoder models only (the T5 family). As in seed §1: the encoder reads
# "translate English to German: The house is big.", the decoder reads the German target
# "Das Haus ist groß." (its token ids as input, with the encoder's output), and position
# *t* of one is compared with position *t* of the other by cosine, at layer 0 (the
# embedding output), the middle layer (`n // 2`) and the last (after the final norm).
# The seed compared the first 5 positions; here every position both sequences have, with
# the seed's first-5 mean beside it. The two positions hold different tokens (the seed's
# comment "both start from same embeddings" holds only for the table, not the tokens),
# so at layer 0 the cosine is between two different tokens' embeddings, near the table's
# mean cosine. Interval: bootstrap over positions; null: the random-init model.

# %%
ed = probes.encoder_decoder_cosine(lm)
ed0 = probes.encoder_decoder_cosine(init_null.model()) if init_null is not None and ed["applicable"] else None
for r in (ed, ed0):
    if r is not None and r["applicable"]:
        r["intervals"] = probes.uncertainty.encoder_decoder_intervals(r, SEED, n_boot=N_BOOT)
metrics.update(encoder_decoder=ed, encoder_decoder_random_init=ed0)

# %%
if ed["applicable"]:
    job.table(probes.tables.encoder_decoder_frame(ed, ed["intervals"], ed0, (ed0 or {}).get("intervals")),
              caption="Encoder vs decoder: mean cosine over positions at layers 0, middle, last",
              formats={"seed: first 5": "{:.4f}"})
    job.table(probes.tables.encoder_decoder_positions_frame(ed), caption="Encoder vs decoder: cosine per position",
              formats={f"layer {li}": "{:.4f}" for li in ed["layers"]})
    job.figure(plots.encoder_decoder(ed, ed["intervals"], ed0, (ed0 or {}).get("intervals"),
                                     title=f"{lm.name}: encoder vs decoder hidden states (seed §1 pair)"), "encoder_decoder")
else:
    not_run["Encoder vs decoder hidden states"] = f"not applicable — {ed['reason']}."
    print(f"Encoder vs decoder hidden states: {not_run['Encoder vs decoder hidden states']}")

# %% [markdown]
# ## 9. Special tokens
#
# Norms (and their z-score within the vocabulary) and pairwise cosines of the
# tokenizer's special tokens (T5: pad/eos/unk and sentinels; BERT: [CLS]/[SEP]/...).

# %%
sp = probes.special_tokens(E, lm.tokenizer)
metrics["special_tokens"] = sp
if sp["applicable"]:
    job.table(probes.tables.special_tokens_frame(sp), caption="Special tokens: norm and its z-score in the vocabulary")
    job.table(sp["pairwise"], caption="Cosine between special tokens")
else:
    not_run["Special tokens"] = f"not applicable — {sp['reason']}."
    print(f"Special tokens: {not_run['Special tokens']}")

# %% [markdown]
# ## 10. Relative position bias
#
# T5's learned relative-position bias per head (buckets × heads), one table per stack.

# %%
rpb, rpb_weights = probes.relative_position_bias(lm.model, return_data=True)
metrics["position_bias"] = rpb
if rpb["applicable"]:
    job.table(probes.tables.position_bias_frame(rpb), caption="Relative-position-bias tables")
    job.figure(plots.position_bias(rpb_weights), "position_bias")
else:
    not_run["Relative position bias"] = f"not applicable — {rpb['reason']}."
    print(f"Relative position bias: {not_run['Relative position bias']}")

# %% [markdown]
# ## 11. Euclidean distance structure
#
# Pairwise Euclidean distances on a seeded row sample: mean, spread, CV, and mean / √D.

# %%
dist = probes.euclidean_distances(E, n_sample=N_DIST_SAMPLE, seed=SEED)
metrics["distances"] = dist
job.table(probes.tables.distances_frame(dist), caption=f"Pairwise distances of {dist['n_sample']:,} sampled rows",
          formats={"n pairs": "{:,}"})

# %% [markdown]
# ## 12. Input vs output embedding
#
# Where the unembedding (LM head) is a separate matrix: per-token cosine between the two
# tables and the relative Frobenius distance (seed §13a).

# %%
O = lm.output_embeddings()
if O is not None and tuple(O.shape) == tuple(E.shape):
    metrics["embed_vs_output"] = probes.embed_vs_output(E, O)
    job.table(probes.tables.embed_vs_output_frame(metrics["embed_vs_output"]), caption="Input vs output embedding")
else:
    metrics["embed_vs_output"] = {"applicable": False, "reason": "output embedding tied or absent"}
    not_run["Input vs output embedding"] = "not applicable — the output embedding is tied or absent."
    print(f"Input vs output embedding: {not_run['Input vs output embedding']}")
O = None  # an untied head's copy (152k x 1536: 0.9 GB) is read

# %% [markdown]
# ## 13. Vision-tower embedding tables
#
# For ViTs (DINOv2, open_clip's vision tower): the learned position embeddings and the
# patch-projection filters, with the same PR / cosine / pentachoron measurements.

# %%
vis = {}
for name, T in probes.vision_embedding_tables(lm).items():
    vis[name] = {"shape": list(T.shape), "pr": M.participation_ratio(T),
                 "pr_gaussian": M.gaussian_baseline(M.participation_ratio, T, seed=SEED + 1),
                 "cosine": M.cosine_stats(T, n_sample=N_COS_SAMPLE, seed=SEED),
                 "pentachoron": M.pentachoron_cv(T, N_SIMPLICES, seed=SEED).as_dict() if T.shape[0] >= 5 else None}
metrics["vision_tables"] = vis
if vis:
    job.table(probes.tables.vision_frame(vis), caption="Vision-tower embedding tables")
else:
    not_run["Vision-tower tables"] = "not applicable — text-only model."
    print(f"Vision-tower tables: {not_run['Vision-tower tables']}")

# %% [markdown]
# ## Results
#
# Headline numbers for the composite table — exact (no interval) or with their 95 %
# interval over the sampling — beside their null models, each over its 5 seeds: the
# isotropic Gaussian of matched shape and total variance, the same architecture at random
# init, and (for the pentachoron CV) the unit sphere of the same dimension. The figure puts
# each number and its nulls on one axis.

# %% [markdown]
# **Seed claim.** Seed 001's summary puts the pentachoron CV of the token embedding in a
# band 0.20–0.23 (T5, Qwen). It is recorded for the findings notebook (15) in the seed's
# definition, beside the Gaussian, unit-sphere and random-init nulls — text models only
# (open_clip: its text tower); a vision model has no token embedding. Two readings, each with
# the rows it used (`rows`): `embedding` on every row of the table (the seed's §1 and §13a
# drew from all of them), `embedding_content` without the tokenizer's special tokens (the
# seed's vocabulary reading, §2); where they disagree the claim is "undecided (reading)".

# %%
if lm.is_text:
    cv_claims = {"embedding": results.headline(
        pent["embedding"]["cv"], interval=cv_iv["embedding"], label="pentachoron CV (token embedding)", fmt=".4f",
        nulls={probes.uncertainty.CLAIM_NULLS[k]: n for k, n in cv_nulls.items()},
        note=" ".join(filter(None, [cv_note, probes.uncertainty.cv_definition_note(pent["embedding"], rows_all)])))}
    cv_claims["embedding"]["rows"] = {"n": V_, "of": V_, "text": rows_all}
    if pc is not None:  # the second reading: without the special tokens
        cv_claims["embedding_content"] = results.headline(
            cvc.cv, interval=cvc_iv, label="pentachoron CV (token embedding, no special tokens)", fmt=".4f",
            nulls={probes.uncertainty.CLAIM_NULLS[k]: n for k, n in cvc_nulls.items()},
            note=" ".join(filter(None, [cvc_note, probes.uncertainty.cv_definition_note(metrics["pentachoron_content"],
                                                                                        rows_content)])))
        cv_claims["embedding_content"]["rows"] = {"n": content["n_content"], "of": V_, "text": rows_content,
                                                  "special": content["special"]}
    metrics["claims"] = {"pentachoron_cv": cv_claims, "rare_words": rare_claims}  # rare words: section 7b

# %% [markdown]
# ## Geometry over training
#
# Only when the params file lists checkpoints of one training run (`checkpoints:` folders or
# hub `revisions:`; `geolip_lib.trajectory`): the headline numbers above at every checkpoint,
# by the same calls (`trajectory.embedding_values`), from initialisation to the end of
# training. The checkpoints are loaded one at a time (load, measure, drop), so memory stays
# that of one model: the resident memory while each is held is recorded beside one model's
# size. Drawn in: the random-init null of each headline (mean and 95 % prediction interval
# over its 5 seeds) at step 0, and the band of the seed's claim (pentachoron CV 0.20–0.23,
# `params/claims/seed-001.yaml`).

# %%
traj = trajectory.section(job, lm, "01_embedding_terrain", headline, f"{lm.name}: embedding headlines over training",
                          n_cos=N_COS_SAMPLE, n_simplices=N_SIMPLICES, pca_rows=PCA_ROWS, seed=SEED, n_boot=N_BOOT)
if traj is not None:
    metrics["trajectory"] = traj

# %%
job.figure(plots.headline_nulls(headline, title=f"{lm.name}: headline numbers and null models (95 % intervals)"),
           "headline_nulls", key=True)
job.finish(metrics, headline, not_run=not_run)

# %% [markdown]
# ## References
#
# - Seed 001 §1 (T5-Small embedding + layer geometry, encoder vs decoder on the
#   English→German pair) and §13a (Qwen3.5 embedding probes: token-id-range categories,
#   cumulative variance).
# - Seed bugs fixed here: pentachora are drawn from the *whole* table (some seed code drew
#   from the first 512 rows); multi-piece digit encodings no longer pick SentencePiece's
#   bare `▁` piece; single-token sequences no longer enter the layer cosine as 0; the
#   Gaussian baseline is isotropic with matched total variance (the seed used the scalar
#   std of all entries in §1 and per-dimension stds — not isotropic — in §13a); §13a's
#   id-range categories are the named characters only in a byte-ordered vocabulary, so
#   the characters' own tokens are measured beside them.
# - P. Gao et al., "A theory of multineuronal dimensionality" (participation ratio);
#   O. Roy & M. Vetterli, "The effective rank" (2007); L. M. Blumenthal, *Theory and
#   Applications of Distance Geometry* (Cayley–Menger determinants).
