"""Geometric residual modulators (seed 001 §7–§12): LERP and multi-expert field modulators,
injected into a frozen model through forward hooks, their trainer and the pipeline.

    from geolip_lib.modulators import GeometricResidualModulator, attach
    mod = GeometricResidualModulator(d_model, vocab_size, n_geometric_dims=64, n_layers=6)
    with attach(model, mod, stack="encoder"):
        out = model(**batch)          # modulated; the model is untouched after the block
"""
from .field import (  # noqa: F401
    CMValidator,
    FieldModulatorConfig,
    FieldModulatorOutput,
    GeometricFieldModulator,
    KSimplexChannelExpert,
    pentachoron_cv_check,
    regular_simplex,
    regular_simplex_volume,
)
from .hooks import LOCATORS, ModulationHandle, attach, detect_family, freeze, locate_blocks, modulated, state_hash  # noqa: F401,E501
from .pipeline import (  # noqa: F401
    anchor_similarity,
    build_procrustes_modulator,
    definition_lemma_loss,
    stack_size,
    wordnet_pair_similarity,
    OBJECTIVES,
    batches,
    causal_completion_loss,
    compare_generations,
    embedding_regression_loss,
    encode_mean_pooled,
    encoder_module,
    golden_and_sensitivity,
    greedy_generate,
    impact_statistics,
    init_modulator_from_pipeline,
    modulator_impact,
    SEED_N_REL,
    SEED_QUICK_TEST_SENTENCES,
    seed_relational_pairs,
    seed_objective_available,
    seed_section9_loss,
    seed_training_schedule,
    knn_project,
    pair_cosines,
    per_item_losses,
    per_token_cosines,
    per_token_preservation,
    procrustes_projection,
    relational_comparison,
    relational_pairs,
    sample_pairs,
    seq2seq_loss,
    split_indices,
    token_differences,
)
from . import phase, stats  # noqa: F401  (phase: the 0.29154 boundary measured; stats: headline intervals)
from .residual import GeometricResidualModulator, alpha_to_logit, eigen_embedding  # noqa: F401
from .trainer import FieldModulatorTrainer, ModulatorTrainer, load_modulator_weights, run_epochs, train_with_cv_band  # noqa: F401,E501
from .training_modes import seed_mode_training, train_modulator, trained_copy  # noqa: F401  (a modulator trained the seed's way or the project's)

#: The seed's constant (seed 001 §10, "phase boundary 0.29154, multiple systems"): a labelled
#: seed REFERENCE, drawn beside the measured boundary and tested as one static alpha; nothing
#: is derived from it. Notebook 10 measures where (whether) a transition lies.
GOLDEN_ALPHA = 0.29154
