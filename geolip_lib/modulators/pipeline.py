"""The Procrustes-initialised modulator pipeline and its measurements (seed 001 §8–§11).

WordNet similarity over anchors -> eigen-embedding -> softmax-kNN projection of the other
matched tokens -> PCA of encoder representations -> orthogonal Procrustes -> projection
initialisation; then relational comparisons, per-token preservation, greedy generation
side by side, and the definition -> lemma training objective.

This module re-exports the pipeline's names from their homes, one per topic:

* :mod:`.pipeline_geometry` — kNN projection, Procrustes projection, anchor similarity, init;
* :mod:`.pipeline_encoding` — the encoder module (from the family spec) and mean pooling;
* :mod:`.pipeline_sampling` — the pipeline's own pairs / subset / split / batches;
* :mod:`.pipeline_relational` — pair cosines against WordNet similarity, preservation;
* :mod:`.pipeline_generation` — seed §7's impact statistics, greedy generation;
* :mod:`.objectives` — the definition -> lemma objectives (which one: the family spec);
* :mod:`.pipeline_builder` — :func:`build_procrustes_modulator` in one call.
"""
from __future__ import annotations

from .objectives import (LOSSES, OBJECTIVES, SEED_LOSSES, causal_completion_loss, definition_lemma_loss,
                         embedding_regression_loss, per_item_losses, seed_objective_available, seed_section9_loss,
                         seq2seq_loss)
from .pipeline_builder import build_procrustes_modulator, stack_size
from .pipeline_encoding import encode_mean_pooled, encoder_module
from .pipeline_generation import (SEED_QUICK_TEST_SENTENCES, compare_generations, golden_and_sensitivity,
                                  greedy_generate, impact_statistics, modulator_impact, token_differences)
from .pipeline_geometry import anchor_similarity, init_modulator_from_pipeline, knn_project, procrustes_projection
from .pipeline_relational import (SEED_BANDS, pair_cosines, per_token_cosines, per_token_preservation,
                                  relational_comparison, relational_pairs, wordnet_pair_similarity)
from .pipeline_sampling import (SEED_N_REL, batches, sample_pairs, seed_relational_pairs, seed_training_schedule,
                                split_indices)

__all__ = ["LOSSES", "OBJECTIVES", "SEED_LOSSES", "seed_objective_available", "seed_section9_loss",
           "seed_training_schedule", "SEED_BANDS", "SEED_N_REL", "SEED_QUICK_TEST_SENTENCES", "anchor_similarity",
           "batches", "build_procrustes_modulator", "causal_completion_loss", "compare_generations",
           "definition_lemma_loss", "embedding_regression_loss", "encode_mean_pooled", "encoder_module",
           "golden_and_sensitivity", "greedy_generate", "impact_statistics", "init_modulator_from_pipeline", "knn_project", "modulator_impact",
           "pair_cosines", "per_item_losses", "per_token_cosines", "per_token_preservation", "procrustes_projection",
           "relational_comparison", "relational_pairs", "sample_pairs", "seed_relational_pairs", "seq2seq_loss",
           "split_indices", "stack_size", "token_differences", "wordnet_pair_similarity"]
