"""Pure metric functions (see ``geolip_lib/README.md``, section "metrics").

Conventions: inputs are array-likes or torch tensors validated through
:mod:`geolip_lib.validation` (``ValueError`` naming the argument); computations run in
float64; tensors in give tensors out, anything else gives NumPy arrays / floats.
"""
from . import changepoint, covariance_bootstrap, intervals
from .baselines import gaussian_baseline, gaussian_like, matched_scale, random_init_baseline, ratio, sphere_like
from .cosine import (
    NAMED_CONSTANTS,
    constant_proximity,
    cosine_matrix,
    cosine_stats,
    distribution_stats,
    mean_offdiag_cosine,
    normalize_rows,
    pairwise_cosines,
    row_cosine,
)
from .sampling import anchor_test_split, random_pairs, sample_rows, train_val_split
from .simplex import (
    EXACT_MAX,
    SimplexCVResult,
    all_subsets,
    cayley_menger_volume,
    cayley_menger_volume_sq,
    cayley_menger_volume_sq_reference,
    pentachoron_cv,
    regular_simplex_volume,
    sample_distinct_rows,
    simplex_volume_cv,
)
from .spectral import (
    condition_number,
    covariance_eigenvalues,
    dims_for_variance,
    dims_for_variance_from_eigenvalues,
    effective_dimension,
    effective_dimension_from_eigenvalues,
    energy_rank,
    participation_ratio,
    participation_ratio_from_eigenvalues,
    singular_values,
    stable_rank,
)

__all__ = [
    "NAMED_CONSTANTS", "SimplexCVResult", "changepoint", "intervals",
    "cayley_menger_volume", "cayley_menger_volume_sq", "cayley_menger_volume_sq_reference",
    "condition_number", "constant_proximity", "cosine_matrix", "cosine_stats",
    "covariance_eigenvalues", "dims_for_variance", "dims_for_variance_from_eigenvalues",
    "distribution_stats", "effective_dimension", "effective_dimension_from_eigenvalues",
    "energy_rank", "gaussian_baseline", "gaussian_like", "matched_scale", "normalize_rows",
    "pairwise_cosines", "participation_ratio", "participation_ratio_from_eigenvalues",
    "pentachoron_cv", "random_init_baseline", "ratio", "regular_simplex_volume",
    "sample_distinct_rows", "sample_rows", "simplex_volume_cv", "singular_values",
    "sphere_like", "stable_rank", "EXACT_MAX", "all_subsets",
    "anchor_test_split", "mean_offdiag_cosine", "random_pairs", "row_cosine", "train_val_split",
]
