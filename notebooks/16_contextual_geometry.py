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
# # 16 · How contextual are the word representations?
#
# **Question.** Read one word in several sentences: how alike are its representations, layer
# by layer, and how alike are any two words' representations (anisotropy)? Does a word's
# self-similarity fall in the upper layers, and how much of the variance of its
# representations could one static vector explain? And how much of each is what any network
# of this shape (random init), or an isotropic Gaussian of the same shape, gives too?
#
# **Paper.** Not a seed: K. Ethayarajh (2019), "How Contextual are Contextualized Word
# Representations? Comparing the Geometry of BERT, ELMo, and GPT-2 Embeddings" (EMNLP). Its
# findings are transcribed as data in `params/claims/ethayarajh-2019.yaml` and given verdicts
# by notebook 15 (`CLAIMS: ethayarajh-2019`); this notebook records what they read
# (`metrics.claims`). The measurements live in `geolip_lib.probes.contextual`.
#
# **Which data** (so that the numbers can be recomputed independently): `N_WORDS` words drawn
# with `default_rng(SEED)` among the single-word WordNet 3.0 lemmas whose form occurs (whole
# word, any case) in at least `MIN_CONTEXTS` distinct example sentences of the word's own
# synsets; each word read in up to `MAX_CONTEXTS` of them (a word read in `n` contexts has an MEV
# of at least `1/n`, whatever the model: `MIN_CONTEXTS` ≥ 21 puts that floor below the paper's 5 %,
# and WordNet gives that many sentences to 71 words). An occurrence's representation is
# the mean hidden state of the tokens that overlap the word's characters (fast-tokenizer
# offsets), at every layer `lm.hidden_states` returns (0: the embedding output, then one per
# block). Anisotropy pairs: `N_PAIRS` pairs of occurrences of two different words, the same
# pairs in every layer.
#
# Run it by hand in JupyterLab (the defaults use a tiny model and finish in seconds), or
# headless through `python run_all.py --profile tiny --notebooks 16_contextual_geometry`.

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name (a text model with a fast tokenizer)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # [0 ≤ x < 2**32] seed of every random draw in this notebook
N_WORDS = 40  # [3 ≤ x ≤ 1300] words, each read in several contexts (≥ 1300 words have 5 WordNet examples)
MIN_CONTEXTS = 5  # [2 ≤ x ≤ 64] a word needs at least this many example sentences (the paper: 5; 71 words have 21)
MAX_CONTEXTS = 8  # [MIN_CONTEXTS ≤ x ≤ 100] contexts read per word (a random subset of its sentences)
N_PAIRS = 2000  # [10 ≤ x ≤ 10**6] pairs of occurrences of different words for the anisotropy
MAX_LENGTH = 64  # [2 ≤ x ≤ 4096] token truncation of a sentence
BATCH_SIZE = 32  # [1 ≤ x ≤ 4096] sentences per forward pass
RANDOM_INIT_SEEDS = 3  # [0 ≤ x ≤ 20] random-init copies of the model (the random-init null; 0: none)
GAUSSIAN_SEEDS = 5  # [2 ≤ x ≤ 100] draws of the isotropic-Gaussian null
N_BOOT = 1000  # [10 ≤ x ≤ 10**6] bootstrap resamples (over words) behind every 95 % interval

# %%
from geolip_lib import runtime
from geolip_lib.probes import contextual as C
from geolip_lib.probes import plots

job = runtime.start("16_contextual_geometry", globals())  # job dir, plot style, inline figures, seeds, job.lm = MODEL
lm = job.lm
metrics: dict = {"model": {"name": lm.name, "family": lm.family}}
not_run: dict = {}

# %% [markdown]
# ## 1. Words in several contexts
#
# WordNet's example sentences, offline (`C.wordnet_contexts`; the table of sentences per word
# is built once per machine and cached beside the WordNet lexicon).

# %%
contexts = C.wordnet_contexts(N_WORDS, MAX_CONTEXTS, min_contexts=MIN_CONTEXTS, seed=SEED)
counts = contexts.counts()
print(f"{len(contexts.words)} words, {len(contexts)} occurrences ({counts.min()}–{counts.max()} contexts per word); "
      f"e.g. {contexts.words[0]!r}: {contexts.sentences[0]!r}")
metrics["contexts"] = {"words": contexts.words, "n_occurrences": len(contexts), "contexts_per_word": counts.tolist(),
                       "source": "WordNet 3.0 example sentences of each word's own synsets"}

# %% [markdown]
# ## 2. Per-layer representations, and the nulls' representations
#
# The model's hidden states at every layer; the random-init null is the same architecture at
# random initialisation (`RANDOM_INIT_SEEDS` copies, same sentences and tokens); the Gaussian
# null replaces every layer by an isotropic Gaussian of the same shape (`GAUSSIAN_SEEDS`
# draws). Every measurement is invariant to rotation and scale, so the Gaussian's scale does
# not matter.

# %%
layers, kept = C.occurrence_states(lm, contexts, max_length=MAX_LENGTH, batch_size=BATCH_SIZE)
word_of = contexts.word_of[kept]
print(f"{len(layers)} layers (embedding output + {len(layers) - 1} blocks) of width {layers[0].shape[1]}; "
      f"{int(kept.sum())} of {len(contexts)} occurrences kept")
geo = C.analyse(layers, word_of, n_pairs=N_PAIRS, seed=SEED, n_boot=N_BOOT)
null_values, null_stats = C.null_measurements(lm, contexts, layers, word_of, gaussian_seeds=GAUSSIAN_SEEDS,
                                              random_init_seeds=RANDOM_INIT_SEEDS, seed=SEED, n_pairs=N_PAIRS,
                                              n_boot=N_BOOT, max_length=MAX_LENGTH, batch_size=BATCH_SIZE)
stats = {lm.name: geo.layer_stats(), **null_stats}
if not RANDOM_INIT_SEEDS:
    not_run["Random-init null"] = "not run — RANDOM_INIT_SEEDS = 0: the claims lack their random-init null."

# %% [markdown]
# ## 3. The measurements by layer
#
# Anisotropy, self-similarity (raw and adjusted: minus the layer's anisotropy), and the
# maximum explainable variance (raw: `σ₁² / Σ σᵢ²` of the uncentred matrix of a word's
# representations, at least `1/n` for `n` contexts; adjusted, as the paper reads its 5 %: minus
# the MEV of `n` random occurrences of other words, which cancels that floor). Each is a mean
# over words `value [95 % interval]` (bootstrap over words).

# %%
job.table(C.layer_frame(stats[lm.name]), caption=f"{lm.name}: the measurements by layer (0: embedding output)",
          index=False)
job.figure(plots.contextual_layers(stats, title=f"{lm.name}: how contextual, by layer (95 % intervals over words)"),
           "contextual_layers", key=True)
metrics["layers"] = stats

# %% [markdown]
# ## Results
#
# The three findings' statistics over the block outputs (layer 0 is a static embedding plus
# position, shown above but not read): the least anisotropic block's anisotropy, the drop in
# adjusted self-similarity from the lower to the upper half of the blocks, and the largest
# per-block MEV (raw and adjusted), beside the two nulls over their seeds. The MEV records also
# carry the floor the contexts set (`floor`: what no model can go below here, and how many
# contexts per word would put it below the paper's 5 %). Notebook 15 reads them as
# `metrics.claims` (`params/claims/ethayarajh-2019.yaml`).

# %%
metrics["claims"] = C.contextual_claims(geo, nulls=null_values)
headline = {k: v["block outputs"] for k, v in metrics["claims"].items()}
for key in ("mev", "adjusted_mev"):
    h = headline[key]
    print(f"{key}: {h['value']:.1%}, floor {h['floor']['value']:.1%} — {h['floor']['why']}")
job.finish(metrics, headline, not_run=not_run)

# %% [markdown]
# ## References
#
# - K. Ethayarajh (2019), "How Contextual are Contextualized Word Representations? Comparing
#   the Geometry of BERT, ELMo, and GPT-2 Embeddings", EMNLP-IJCNLP 2019, §3–4 (anisotropy,
#   self-similarity, maximum explainable variance).
# - `geolip_lib.probes.contextual`, `contextual_mev` (the MEV, its anisotropy baseline and its
#   `1/n` floor) and their tests (`tests/unit/probes/test_contextual.py`, `test_contextual_mev.py`).
# - WordNet 3.0 (Princeton) example sentences, through NLTK.
