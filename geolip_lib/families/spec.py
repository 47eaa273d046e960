"""What the project knows about one model family: :class:`FamilySpec` (frozen) and :class:`Sizes`.

One spec per family (``geolip_lib/families/<family>.py``), collected by the registry in
``geolip_lib/families/__init__.py``. Everything that used to branch on a family name reads
a field of the spec instead: the loader (auto class, stacks, hidden-state forwards,
embedding accessors, image preprocessing), the tiny builder (defaults, tokenizer), the
weight catalog (the family's name rules, ``adapt``, in the family's own file), the modulator
hooks (block locator), the pooled encoder and the training objective (by key: the objective
functions live in ``modulators/objectives.py``, a higher layer).

Layer 2 (families): imports only the bottom layer and ``checkpoints/``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from ..lazy import lazy

torch = lazy("torch")
transformers = lazy("transformers")

DEFAULT_PROMPT = "{definition}"


@dataclass(frozen=True)
class Sizes:
    """Normalised sizes of one model (one stack: the first stack of the family)."""

    d_model: int
    n_layers: int
    n_heads: int
    head_dim: int
    n_kv_heads: int


def config_dict(config: Any) -> dict:
    """A HF config object, a dict (open_clip: ``{"model_cfg": ...}`` or the bare ``model_cfg``) -> plain dict."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        cfg = dict(config)
        return dict(cfg["model_cfg"]) if isinstance(cfg.get("model_cfg"), Mapping) else cfg
    if hasattr(config, "to_dict"):
        return config.to_dict()
    raise ValueError(f"config: expected a dict or a HF config, got {type(config).__name__}")


def hf_output_embeddings(model) -> Optional[torch.Tensor]:
    """Output (unembedding) matrix ``(V, D)`` float32 CPU of a HF model, ``None`` when tied or absent."""
    out = model.get_output_embeddings()
    if out is None or getattr(out, "weight", None) is None:
        return None
    inp = model.get_input_embeddings().weight
    if out.weight.data_ptr() == inp.data_ptr():  # tied (T5 configs always claim tying; trust storage)
        return None
    return out.weight.detach().to("cpu", torch.float32, copy=True)


def hf_input_embeddings(model) -> torch.Tensor:
    return model.get_input_embeddings().weight


def no_output_embeddings(model) -> None:
    return None


def hidden_to_cpu(hs) -> list:
    return [h.detach().to("cpu", torch.float32) for h in hs]


def hf_vision_hidden(model, x) -> list:
    """Per-layer hidden states of a HF vision model (``pixel_values``)."""
    return hidden_to_cpu(model(pixel_values=x, output_hidden_states=True).hidden_states)


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


@dataclass(frozen=True)
class FamilySpec:
    """One model family (see the module docstring).

    Fields
    ------
    name : str
        The ``family:`` value of ``params/models/*.yaml``.
    stacks : tuple of str
        Stacks ``LoadedModel.hidden_states`` offers, default first.
    is_text, is_generative : bool
        Has a tokenizer and token embeddings; can generate text (seq2seq or causal).
    hf : bool
        A transformers model (auto class, ``save_pretrained``, ``AutoConfig``); False: open_clip.
    auto_class : str or None
        Name of the transformers auto class (``None`` when ``hf`` is False).
    model_types : tuple of str
        ``config.model_type`` values this family covers (registry: :func:`family_of_model_type`).
    matches : callable(config dict) -> bool, optional
        Extra test of a config of one of ``model_types`` (T5 v1.1: a gated feed-forward).
    detect : callable(config dict) -> bool, optional
        Structural test tried before ``model_type`` (open_clip: ``vision_cfg``/``text_cfg`` keys).
    sizes : callable(config dict) -> Sizes
    adapt : callable(tensors, config) -> list[Entry]
        The family's weight-name rules (its ``adapt`` function, in ``families/<family>.py``): every
        tensor name of a checkpoint -> a catalog entry (:mod:`geolip_lib.checkpoints`).
    attn_scale : float or callable(config, head_dim) -> float, optional
        The q·k scale when it is not ``1/sqrt(head_dim)`` (T5: 1.0; DeBERTa: its scale factor).
    qk_norm_offset : callable(config) -> float, optional
        The q/k norm's gain offset (Gemma, Qwen3.5: ``1 + weight``); None: 0.
    input_embeddings : callable(model) -> Tensor
        The table ``LoadedModel.input_embeddings`` copies (not yet copied / cast).
    output_embeddings : callable(model) -> Tensor or None
    text_hidden : callable(model, stack, ids, mask, dec) -> list of tensors, optional
    vision_hidden : callable(model, x) -> list of tensors, optional
    teacher_forced_decoder : bool
        ``hidden_states(stack="decoder")`` feeds shifted decoder texts (T5).
    context_length : callable(model) -> int, optional
        Texts are padded to exactly this many positions (open_clip's text tower).
    image_size : callable(model, config) -> int, optional
    image_stats : callable(model) -> (mean, std)
    vision_tables : callable(model) -> dict of 2-D tensors, optional
        Embedding tables of the vision tower (probes).
    locate_blocks : callable(model, stack) -> (stack_module, blocks), optional
        For the modulator hooks (``None``: hooks are not defined for the family).
    hook_stack : dict
        Stack aliases for the hooks (decoder LMs: ``encoder`` means ``decoder``).
    encoder : callable(model) -> nn.Module, optional
        The module whose ``last_hidden_state`` is the pooled representation.
    encoder_kwargs : dict
        Extra keyword arguments of that forward (decoder LMs: ``use_cache=False``).
    objective : str or None
        Key of the definition -> lemma objective in ``modulators.objectives.OBJECTIVES``.
    prompt : str
        Template of the definition prompt (``{definition}`` is replaced).
    tiny_defaults : dict
        Config of a tiny model before the params file's ``config:``.
    tiny_tokenizer : str or None
        Tokenizer kind of a tiny model (``models/tokenizers``).
    vocab_from_tokenizer : bool
        A tiny model's ``vocab_size`` follows its tokenizer (open_clip: in its ``text_cfg``).
    sources : dict
        Family-specific ``source:`` values -> an example ``id:`` (open_clip's own model zoo).
    tiny_model_types : dict
        ``model_type`` -> the tiny config of that ``model_type`` (used instead of :attr:`tiny_defaults`
        when a tiny params file names that ``model_type``); every entry of :attr:`model_types` has
        one, or is ``tiny_defaults``' own: the family tests build each.
    canonical_tensor : callable(name, tensor, config dict) -> tensor, optional
        Rewrites a stored tensor into the layout the adapter reads (GPT-2's ``Conv1D`` weights
        transposed to ``(out, in)``; fused QKV interleaved per head regrouped as [W_q; W_k; W_v]).
        When set, the loader writes the model's weights in that layout to ``.cache/safetensors/``
        (``LoadedModel.weights_dir``) and the random-init twin is rewritten the same way.
    qk_statement : str
        What the bilinear form ``x_i W_Q^T W_K x_j`` leaves out of this family's attention scores
        (position terms, normalisations), shown with the QK analyses; empty when it holds them all.
    shared_layers : str
        Non-empty when layers are shared across depth (ALBERT): what cross-layer correlation means there.
    left_out : dict
        ``model_type`` (or ``"*"``, every other) -> the terms of the attention scores the bilinear form
        leaves out, short (``"RoPE"``, ``"ALiBi"``, ``"q/k rms"``...): the README's support table, and
        the attention-reconstruction test checks each against what it had to add back.
    """

    name: str
    stacks: tuple
    is_text: bool
    is_generative: bool
    sizes: Callable[[dict], Sizes]
    adapt: Callable
    hf: bool = True
    #: stacks that read audio features, not the probes' texts or images (Whisper's encoder): the hidden-state
    #: probes skip them (their attention and weights are measured like every stack's)
    audio_stacks: tuple = ()
    attn_scale: Any = None
    qk_norm_offset: Optional[Callable[[dict], float]] = None
    auto_class: Optional[str] = None
    model_types: tuple = ()
    matches: Optional[Callable[[dict], bool]] = None
    detect: Optional[Callable[[dict], bool]] = None
    input_embeddings: Callable = hf_input_embeddings
    output_embeddings: Callable = hf_output_embeddings
    text_hidden: Optional[Callable] = None
    vision_hidden: Optional[Callable] = None
    teacher_forced_decoder: bool = False
    context_length: Optional[Callable] = None
    image_size: Optional[Callable] = None
    image_stats: Callable = lambda model: IMAGENET
    vision_tables: Optional[Callable] = None
    locate_blocks: Optional[Callable] = None
    hook_stack: dict = field(default_factory=dict)
    encoder: Optional[Callable] = None
    encoder_kwargs: dict = field(default_factory=dict)
    objective: Optional[str] = None
    prompt: str = DEFAULT_PROMPT
    tiny_defaults: dict = field(default_factory=dict)
    tiny_tokenizer: Optional[str] = None
    vocab_from_tokenizer: bool = True
    sources: dict = field(default_factory=dict)
    tiny_model_types: dict = field(default_factory=dict)
    canonical_tensor: Optional[Callable] = None
    qk_statement: str = ""
    shared_layers: str = ""
    left_out: dict = field(default_factory=dict)

    def left_out_of(self, model_type: str) -> tuple:
        """What the bilinear form leaves out for ``model_type`` (:attr:`left_out`), as a tuple of short names."""
        v = self.left_out.get(model_type, self.left_out.get("*", ""))
        return tuple(x.strip() for x in v.split(",") if x.strip())

    def tiny_configs(self) -> dict:
        """``model_type`` -> the tiny config of that type (:attr:`tiny_model_types` or :attr:`tiny_defaults`)."""
        out = {}
        base_mt = self.tiny_defaults.get("model_type")
        for mt in self.model_types:
            if mt in self.tiny_model_types:
                out[mt] = {**self.tiny_model_types[mt], "model_type": mt}
            elif mt == base_mt or (base_mt is None and len(self.model_types) == 1):
                out[mt] = dict(self.tiny_defaults)
        return out

    def tiny_base(self, model_type: Optional[str]) -> dict:
        """The tiny config a params file's ``config:`` is merged over: that ``model_type``'s, else :attr:`tiny_defaults`."""
        return dict(self.tiny_model_types.get(model_type) or self.tiny_defaults, **(
            {"model_type": model_type} if model_type in self.tiny_model_types else {}))

    def model_class(self):
        """The transformers auto class that builds / loads a model of this family."""
        if not self.hf:
            raise ValueError(f"family: {self.name} is not a transformers model (no auto class)")
        return getattr(transformers, self.auto_class)

    def sizes_of(self, config: Any) -> Sizes:
        """:attr:`sizes` of a HF config object or dict (open_clip: ``{"model_cfg": ...}`` too)."""
        return self.sizes(config_dict(config))

    def encode(self, model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``last_hidden_state`` ``(B, S, D)`` of :attr:`encoder` (hooks attached to its blocks apply)."""
        if self.encoder is None:
            raise ValueError(f"family: {self.name} has no text encoder forward")
        return self.encoder(model)(input_ids=ids, attention_mask=mask, **self.encoder_kwargs).last_hidden_state


__all__ = ["DEFAULT_PROMPT", "IMAGENET", "FamilySpec", "Sizes", "config_dict", "hf_input_embeddings",
           "hf_output_embeddings", "hf_vision_hidden", "hidden_to_cpu", "no_output_embeddings"]
