"""95 % intervals for the modulator notebooks (08–11) and the nulls they are compared with.

Each function names what was sampled, and resamples exactly that:

- :func:`pair_bootstrap` — a statistic of the random (i, j) pairs a relational comparison
  scored (Pearson / Spearman with WordNet, their difference between two representations,
  the alpha that maximises Pearson): ``scipy.stats.bootstrap(paired=True)``, percentile
  (BCa's jackknife over tens of thousands of pairs costs more than it gives).
- :func:`relational_intervals` — those intervals for every representation of a
  :func:`~geolip_lib.modulators.relational_comparison`, on the same kept pairs.
- :func:`matrix_r_interval` — the eigen-embedding's reconstruction correlation over all
  anchor pairs: the *anchors* are resampled (each brings its pairs; pairs that share an
  anchor are not independent), through :func:`geolip_lib.metrics.intervals.bootstrap_weighted`.
- :func:`cv_interval` — pentachoron CV and its CV-band verdict, bootstrapped over the simplices.
- :func:`modulator_lift` — the relative lift ``(mod − orig) / |orig|`` of the relational
  Pearson / Spearman of a modulated encoder over the unmodulated one (the seed's "+152 % /
  +189 %"), paired bootstrap over the scored pairs; :func:`lift_claims` records it in the
  claims contract in the seed's definition (the seed's 3000-entry subset) and the project's
  (pairs over all entries).

Per-token preservation and per-item losses are plain means of items:
``metrics.intervals.bootstrap`` covers them directly.

Modules: :mod:`.correlation_stats` (pairs: correlations, their intervals, the lift),
:mod:`.matrix_stats` (anchors and simplices), :mod:`.stats_tables` (cells, frames, claims).
"""
from .correlation_stats import (CORRELATIONS, SEED_LIFT, argmax_interval, correlation_interval, dense_ranks,
                                lift_interval, modulator_lift, pair_bootstrap, pearson, relational_intervals,
                                relative_lift, resample_ranks, spearman)
from .matrix_stats import cv_interval, matrix_r, matrix_r_interval, reconstruction_null, weighted_matrix_r
from .stats_tables import (LIFT_LABELS, SEED_CV_BAND, TRAINING_LABELS, coherence_claims, generation_coherence,
                           iv_text, lift_claims, lift_cv_claims, lift_frame, lift_headlines, modulator_claims,
                           relational_frame, text_degeneracy)

__all__ = ["CORRELATIONS", "LIFT_LABELS", "SEED_CV_BAND", "SEED_LIFT", "TRAINING_LABELS", "coherence_claims",
           "generation_coherence", "text_degeneracy",
           "lift_cv_claims", "lift_claims", "lift_headlines", "modulator_claims", "lift_frame", "lift_interval",
           "modulator_lift", "relative_lift", "argmax_interval", "correlation_interval", "cv_interval", "iv_text", "matrix_r",
           "matrix_r_interval", "pair_bootstrap", "pearson", "reconstruction_null", "relational_frame", "relational_intervals",
           "spearman", "weighted_matrix_r", "dense_ranks", "resample_ranks"]
