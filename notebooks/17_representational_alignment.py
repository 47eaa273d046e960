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
# # 17 · Representational alignment across models
#
# **Question.** Read the same inputs with several models: do their representations agree on which
# inputs are near each other? Is that agreement far above chance, and above what the same
# architectures give untrained? Does it rise with the models' competence?
#
# **Paper.** Not a seed: M. Huh, B. Cheung, T. Wang, P. Isola (2024), "The Platonic Representation
# Hypothesis" (ICML). Its claims are data in `params/claims/huh-2024.yaml`, given verdicts by notebook
# 15 (`CLAIMS: huh-2024`) one pair of models at a time; this notebook records what they read
# (`metrics.claims`). The math follows the paper's public code (`geolip_lib.metrics.alignment` says
# which functions): mutual k-nearest-neighbour alignment with k = 10 on L2-normalised, outlier-clamped
# features, the best layer pair kept, and debiased (unbiased-HSIC) linear CKA beside it.
#
# **Which data.** `N_INPUTS` distinct WordNet 3.0 texts drawn with `default_rng(SEED)`: half synset
# definitions, half example sentences (offline, read as notebooks 04 and 16 read WordNet). The same
# texts, in the same order, go through every model. An input's representation at a layer is the
# mean of its tokens' hidden states (the paper's `pool='avg'`), at every layer `lm.hidden_states`
# returns (0: the embedding output). Models that do not read English are listed below as not run,
# with the reason. **Image–caption pairs.** The paper's main set is WIT, 1024 image–caption pairs,
# with language models (reading the captions) against DINOv2 / CLIP vision towers (reading the
# images; a tower's feature is its class token at every block). `IMAGE_CAPTIONS = "wit_1024"` reads it
# from the hub as the paper's code does; a folder reads a local copy (`Dataset.save_to_disk`, or
# images with a `metadata.jsonl`). No image–caption set installs from PyPI, so the offline profiles
# are text-only (language–language pairs) and the language–vision claim reads "not tested" there.

# %% tags=["parameters"]
MODELS = ["tiny-bert", "tiny-qwen", "tiny-gpt2"]  # [len(x) ≥ 2] params/models/<name>.yaml names, loaded one at a time
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all
SEED = 0  # [0 ≤ x < 2**32] seed of the inputs drawn, the shuffles and the bootstraps
N_INPUTS = 256  # [12 ≤ x ≤ 20000] WordNet texts read by every model (the paper: 1024 captions)
K = 10  # [1 ≤ x < N_INPUTS] neighbours per input (the paper: 10)
MAX_LENGTH = 64  # [2 ≤ x ≤ 4096] token truncation of a text
BATCH_SIZE = 32  # [1 ≤ x ≤ 4096] texts per forward pass
RANDOM_INIT_SEEDS = 1  # [0 ≤ x ≤ 10] random-init twins of each model (the random-init null; 0: none)
N_SHUFFLES = 20  # [0 ≤ x ≤ 10**4] permutations of the pairing (the shuffled-pairing null; 0: none)
N_BOOT = 1000  # [10 ≤ x ≤ 10**6] bootstrap resamples over inputs behind the mutual k-NN and rank-correlation intervals
CKA_BOOT = 200  # [0 ≤ x ≤ 10**5] bootstrap resamples behind each CKA interval (0: none)
IMAGE_CAPTIONS = None  # [x is None or 1 ≤ len(x) ≤ 4096] None: text only; "wit_1024": the paper's WIT set from the hub; or a folder (a Dataset.save_to_disk copy, or images with a metadata.jsonl of file_name and text)
VISION_MODELS = []  # [len(x) ≤ 16 and all(1 ≤ len(m) ≤ 200 for m in x)] params/models/<name>.yaml vision models that read the images, against MODELS reading the captions
N_IMAGES = 1024  # [12 ≤ x ≤ 10**5] image-caption pairs read, the first of the set (the paper: all 1024)

# %%
from geolip_lib import runtime
from geolip_lib.claims import pairs as P
from geolip_lib.probes import alignment as A
from geolip_lib.probes import captions as C
from geolip_lib.probes import plots_alignment as plots

job = runtime.start("17_representational_alignment", globals(), load_model=False)  # job dir, style, seeds
metrics: dict = {"chance": {"k": K, "n": N_INPUTS, "value": K / (N_INPUTS - 1), "definition": "k / (N - 1)"}}
not_run: dict = {}

# %% [markdown]
# ## 1. The inputs

# %%
texts, kinds = A.alignment_texts(N_INPUTS, seed=SEED)
print(f"{len(texts)} texts ({kinds.count('definition')} definitions, {kinds.count('example')} example sentences); "
      f"e.g. {texts[0]!r}")
metrics["inputs"] = {"n": len(texts), "source": "WordNet 3.0 definitions and example sentences",
                     "kinds": {k: kinds.count(k) for k in ("definition", "example")}, "first": texts[:5]}
images, captions = C.load_image_captions(IMAGE_CAPTIONS, N_IMAGES) if IMAGE_CAPTIONS and VISION_MODELS else ([], None)
if captions:
    print(f"{len(captions)} image-caption pairs from {IMAGE_CAPTIONS}; e.g. {captions[0]!r}")
    metrics["inputs"]["captions"] = {"source": IMAGE_CAPTIONS, "n": len(captions), "first": captions[:5]}
else:
    not_run["Language-vision alignment (image-caption pairs)"] = (
        "not run — IMAGE_CAPTIONS and VISION_MODELS not both set (no image-caption set installs from PyPI, so "
        "offline profiles are text-only). " + A.WIT_NOTE)

# %% [markdown]
# ## 2. Each model's pooled representation of every input, and its random-init twins'
#
# One model at a time: its features, then each random-init twin's (the same architecture at random
# initialisation, the same texts and tokens), then its weights are dropped; only the pooled
# features are kept.

# %%
features, skipped = A.collect_features(MODELS, texts, load=job.load, random_init_seeds=RANDOM_INIT_SEEDS,
                                       max_length=MAX_LENGTH, batch_size=BATCH_SIZE, captions=captions)  # job.load: in the provenance
for name, why in skipped.items():
    not_run[f"Pairs with {name}"] = f"not run — {why}"
metrics["models"] = {n: {"layers": f["trained"].shape[1], "width": f["trained"].shape[2], "params": f["params"]}
                     for n, f in features.items()}
metrics["not_run_models"] = skipped

# %% [markdown]
# ## 3. Alignment of every pair, every layer pair
#
# Mutual k-NN of every layer of one model against every layer of the other; the best pair is
# boxed (the paper keeps it), the last layers circled.

# %%
trained, twins = A.measure_pairs(features, k=K, n_boot=N_BOOT, seed=SEED, n_shuffles=N_SHUFFLES, cka_boot=CKA_BOOT)
job.figure(plots.layer_alignment(trained), "layer_alignment", key=True)

# %% [markdown]
# ## 4. Per pair: the value, its interval over inputs, and the nulls
#
# The chance level is exact, `k / (N - 1)` (each input's neighbours are `k` of the `N - 1` others).
# The shuffled pairing permutes one model's inputs against the other's (`N_SHUFFLES` draws). The
# random-init null is the two models' twins, measured the same way (their own best layer pair).
# The mutual k-NN interval resamples the inputs' per-input overlaps (the neighbours found among all
# inputs); the CKA interval resamples the inputs (a repeated input counts twice; CKA rises with
# repeats, so an interval that left the estimate out is widened to hold it, and says so).

# %%
job.table(A.pair_frame(trained, twins), caption=f"Mutual k-NN (k = {K}) and debiased CKA per pair, {len(texts)} inputs",
          index=False)
job.figure(plots.pair_alignment(trained, twins), "pair_alignment", key=True)

# %% [markdown]
# ## 5. Language–vision pairs: captions through the language models, images through the vision towers
#
# Each language model's pooled representation of every caption against each vision tower's class
# token of its image, measured as the text pairs are (best layer pair, last layers, the same nulls;
# a twin pair is a language model's twin on the captions against a tower's twin on the images). Per
# vision tower, the paper's third claim: does the alignment rise with the language model's size?

# %%
vision, vision_skipped = (C.collect_vision(VISION_MODELS, images, load=job.load, random_init_seeds=RANDOM_INIT_SEEDS,
                                           batch_size=BATCH_SIZE) if captions else ({}, {}))
not_run.update({f"Language-vision pairs with {n}": f"not run — {why}" for n, why in vision_skipped.items()})
cross, cross_twins = C.measure_cross({n: f["captions"] for n, f in features.items() if "captions" in f}, vision, k=K,
                                     n_boot=N_BOOT, seed=SEED, n_shuffles=N_SHUFFLES, cka_boot=CKA_BOOT)
if cross:
    job.table(A.pair_frame(cross, cross_twins), caption=f"Language-vision mutual k-NN (k = {K}) and debiased CKA, "
              f"{len(captions)} image-caption pairs", index=False)
    job.figure(plots.pair_alignment(cross, cross_twins), "language_vision_alignment", key=True)

# %% [markdown]
# ## Results
#
# Per pair (named "model A × model B"), the records notebook 15 reads with `params/claims/huh-2024.yaml`:
# mutual k-NN at the best layer pair and at the last layers, debiased CKA at the same layers, and,
# over the set of English models, Spearman's rank correlation between a pair's competence (the
# geometric mean of its two models' parameter counts: the project's proxy, the paper ranks by
# downstream performance) and its alignment. A pair with a model that reads another language is
# recorded as not run, with the reason.

# %%
params = {n: f["params"] for n, f in features.items()}
skipped_pairs = {P.label([a, b]): f"{why} (pair not run)" for b, why in skipped.items() for a in MODELS if a != b}
set_name = P.label(features) if len(features) >= 2 else "no set"
metrics["claims"] = A.alignment_claims(trained, twins, params=params, set_name=set_name, not_run=skipped_pairs,
                                       n_boot=N_BOOT, seed=SEED)
metrics["claims"].update(C.language_vision_claims(cross, cross_twins, vision=sorted(vision), n_boot=N_BOOT, seed=SEED,
                                                  params={**params, **{n: f["params"] for n, f in vision.items()}}))
metrics["pairs"] = {n: {"matrix": m["matrix"].tolist(),
                        "scopes": {s: {"layers": list(r["layers"]), "value": r["value"], "cka": r["cka"]}
                                   for s, r in m["scopes"].items()}} for n, m in {**trained, **cross}.items()}
shown = ("mutual_knn_alignment", "language_vision_alignment", "language_vision_size")  # the pairs, then the towers
headline = {f"{scope} · {n}": h for r in shown for n, rec in metrics["claims"][r].items()
            for scope, h in rec.items() if isinstance(h, dict) and "value" in h}
job.finish(metrics, headline, not_run=not_run)

# %% [markdown]
# ## References
#
# - M. Huh, B. Cheung, T. Wang, P. Isola (2024), "The Platonic Representation Hypothesis", ICML 2024;
#   code: github.com/minyoungg/platonic-rep (`metrics.py`: `mutual_knn`, `cka`, `hsic_unbiased`;
#   `measure_alignment.py`: `prepare_features`, `compute_score`; `extract_features.py`: the average pooling
#   and the WIT 1024 loading).
# - `geolip_lib.metrics.alignment`, `geolip_lib.probes.alignment` and their tests
#   (`tests/unit/metrics/test_alignment.py`: the mutual k-NN against brute-force loops).
# - WordNet 3.0 (Princeton), through NLTK.
