"""The registry of seed 001's claims: what each says, which notebook measures it, its rule."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from .rules import Rule

__all__ = ["Claim", "CLAIMS", "CLAIM_IDS", "CV_BAND", "T5_SEED", "claim"]


@dataclass(frozen=True)
class Claim:
    """One row of seed 001's summary table.

    ``scopes``: the recorded scopes that test this claim (None: all recorded scopes);
    ``seed_reference``: per-model values the seed reported (shown, and used as the rule's
    target by :func:`rule_for` where ``per_model_rule`` is set); ``null_sentence``: said
    when a null satisfies the rule too ({null}, {value} are filled in).
    """

    id: str
    title: str
    seed_value: str
    seed_models_text: str
    seed_models: tuple
    notebook: str
    rule: Rule
    null_sentence: str
    scopes: Optional[tuple] = None
    seed_reference: Mapping[str, float] = field(default_factory=dict)
    per_model_tol: Optional[float] = None
    definition: str = ""
    scale: float = 1.0  # display: 100 for percentages
    unit: str = ""
    model_scopes: Mapping[str, tuple] = field(default_factory=dict)  # per seed model: the scopes its value is of
    standin_from: Optional[str] = None  # a related record shown for stand-ins that lack this one

    def scopes_for(self, model: str) -> Optional[tuple]:
        """The scopes that test the claim on ``model`` (None: every recorded scope)."""
        return self.model_scopes.get(model, self.scopes)

    def rule_for(self, model: str) -> Rule:
        """The rule for one model: the seed's own value ± ``per_model_tol`` where it reported one."""
        ref = self.seed_reference.get(model)
        if ref is None or self.per_model_tol is None:
            return self.rule
        return Rule("band", ref - self.per_model_tol, ref + self.per_model_tol,
                    text=f"within ±{self.per_model_tol:g} of the seed's {ref:g} for {model}")


CV_BAND = (0.20, 0.23)
T5_SEED = ("t5-small", "t5-base", "t5-v1_1-xxl")
CLAIMS: tuple[Claim, ...] = (
    Claim("pentachoron_cv", "pentachoron CV", "0.20–0.23", "T5, Qwen (all scales)",
          T5_SEED + ("qwen3.5-0.8b", "qwen3.5-4b"), "01_embedding_terrain",
          Rule("band", *CV_BAND, text="the CV's interval lies in the seed's band 0.20–0.23"),
          "The {null} at the same dimension gives {value} too: the CV is set by the dimension, not by training.",
          scopes=("embedding",),
          definition="std/mean of Cayley–Menger volumes of random 5-point subsets of the token embedding"),
    Claim("q_sparsity", "Q sparsity (|w| < 0.1)", "93.7 % → 99.4 % → 100 %", "T5-small → base → v1.1-XXL",
          T5_SEED, "02_weight_topology",
          Rule("at_least", 0.937, text="at least the seed's smallest value, 93.7 %"),
          "The {null} copy is as sparse ({value}): at |w| < 0.1 this is the initialiser's weight scale, "
          "not a learned property.",
          seed_reference={"t5-small": 0.937, "t5-base": 0.994, "t5-v1_1-xxl": 1.0}, per_model_tol=0.005,
          model_scopes={"t5-small": ("encoder+decoder/self",), "t5-base": ("encoder+decoder/self",),
                        "t5-v1_1-xxl": ("encoder/self", "decoder/self", "decoder/cross")},
          definition="fraction of Q weights with |w| < 0.1: T5-small/base pooled over encoder and decoder "
                     "self-attention (seed §4), T5-XXL per stack and attention kind (seed §6)", scale=100, unit="%"),
    Claim("qk_cross_balance", "cross-attention QK balance", "locked at 0.500 (all 24 layers)", "T5-v1.1-XXL",
          ("t5-v1_1-xxl",), "02_weight_topology",
          Rule("all_within", 0.4995, 0.5005, text="every cross-attention layer prints as 0.500"),
          "The {null} copy gives {value} too: the 0.5 follows from the shapes and the sign symmetry of "
          "random weights, not from training (see the QK-balance statement).", standin_from="qk_self_balance",
          definition="positive-eigenvalue fraction of sym(W_q W_kᵀ) (the seed's inner × inner form) per layer"),
    Claim("cross_layer_corr", "attention cross-layer correlation", "~0.000", "all 8 models",
          T5_SEED + ("bert-large-uncased", "clip-vit-b-16", "dinov2-large", "clip-vit-bigg-14",
                     "qwen3.5-0.8b", "qwen3.5-4b"), "02_weight_topology",
          Rule("band", -0.01, 0.01, text="|mean adjacent-layer cosine| ≤ 0.01"),
          "The {null} copy gives {value} too: independent layers have ~0 correlation; ~0 is what unrelated "
          "layers give, not a learned constant.",
          definition="mean cosine of the flattened attention weights of adjacent layers, same role"),
    Claim("position_crystallization", "decoder position crystallization", "0 mixed heads",
          "T5-Small, T5-XXL", ("t5-small", "t5-v1_1-xxl"), "02_weight_topology",
          Rule("equals", target=0, text="no mixed (local and global) position-bias head in the decoder"),
          "The {null} copy also has {value} mixed heads: the head types need no training.",
          scopes=("decoder",),
          definition="decoder relative-position-bias heads classified local / global / mixed (seed's raw-bucket rule)"),
    Claim("phase_boundary", "phase boundary", "0.29154", "multiple systems", ("t5-small",), "10_alpha_sweep",
          Rule("contains", target=0.29154, text="a transition is found and its interval contains 0.29154"),
          "", scopes=("alpha",),
          definition="change point of the relational correlation over a fine static-alpha sweep, over seeds"),
    Claim("modulator_lift", "best modulator lift", "Pearson +152 %, Spearman +189 %", "T5-small",
          ("t5-small",), "09_modulator_training",
          Rule("contains", target=float("nan"), text="the lift's interval contains the seed's value"),
          "", seed_reference={"pearson": 1.52, "spearman": 1.89},
          definition="(modulated − unmodulated) / |unmodulated| relational correlation", scale=100, unit="%"),
)
CLAIM_IDS = tuple(c.id for c in CLAIMS)


def claim(claim_id: str) -> Claim:
    for c in CLAIMS:
        if c.id == claim_id:
            return c
    raise KeyError(f"unknown claim {claim_id!r} (known: {', '.join(CLAIM_IDS)})")


