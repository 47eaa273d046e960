"""Family ``any``: a transformers model whose ``model_type`` no family covers.

What needs no attention semantics still runs: notebook 01's embedding probes and hidden-state
geometry (``AutoModel``'s input embeddings and ``output_hidden_states``), and notebook 02's
matrix-level battery over every 2-D weight. The attention sections (02's QK manifold, 06's QK
operators) are skipped with one line naming the family file that would enable them
(:func:`missing_adapter`). A params file says ``family: any`` (the registry never detects it from
a config). Its tiny model is a GPT-Neo, an architecture no other family claims; ``tiny-mamba``
is a model without attention.

Weight names (:func:`adapt`)
----------------------------
Roles, layers and stacks are guessed from names (:mod:`geolip_lib.checkpoints.guess`:
``q_proj``/``query``/``fc1``/``down_proj``/``layers.N``...), so the battery's matrix-level analyses
(spectra by role, sparsity, norms, cross-layer correlation by module name) run over the 2-D
weights, as WeightWatcher does; no entry carries head counts, so the catalog has no attention
blocks. Nothing is attention unless its module path says so (``attn``/``attention``): a Mamba
``mixer.out_proj`` is not an attention ``o``. A sequence mixer that is not attention (Mamba's
``mixer.{in_proj,x_proj,dt_proj,out_proj,conv1d,A_log,D}``) is catalogued as role ``other`` with
its layer and the note ``sequence mixer, not attention``; the catalog says once what is not
analysed (``Catalog.not_analysed``). The one warning lists the 2-D tensors whose role could not
be guessed (they still count in sparsity and norms).
"""
from __future__ import annotations

from ..checkpoints.guess import adapt_without_heads as adapt
from ..validation import fail
from .hf import base
from .spec import FamilySpec, Sizes, hidden_to_cpu

_KEYS = {"d": ("hidden_size", "d_model", "n_embd", "dim", "width"),
         "layers": ("num_hidden_layers", "num_layers", "n_layer", "n_layers"),
         "heads": ("num_attention_heads", "num_heads", "n_head", "n_heads")}


def _first(cfg: dict, keys) -> int | None:
    for src in (cfg, cfg.get("text_config") or {}):
        for k in keys:
            if isinstance(src.get(k), int) and not isinstance(src.get(k), bool):
                return int(src[k])
    return None


def _sizes(cfg: dict) -> Sizes:
    d, n, h = _first(cfg, _KEYS["d"]), _first(cfg, _KEYS["layers"]), _first(cfg, _KEYS["heads"])
    if d is None or n is None:
        fail("config", f"family any: model_type {cfg.get('model_type')!r} names no hidden size / layer count "
                       f"(looked for {', '.join(_KEYS['d'])} and {', '.join(_KEYS['layers'])})")
    h = h or 1
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=d // h, n_kv_heads=h)


def _text_hidden(model, stack, ids, mask, dec) -> list:
    out = base(model)(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    hs = getattr(out, "hidden_states", None) or getattr(out, "encoder_hidden_states", None)
    if hs is None:
        fail("model", f"family any: {type(model).__name__} returns no hidden states")
    return hidden_to_cpu(hs)


ANY = FamilySpec(
    name="any", stacks=("model",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=(),  # covers no model_type by name: a params file says family: any
    sizes=_sizes, adapt=adapt, text_hidden=_text_hidden,
    tiny_defaults=dict(model_type="gpt_neo", hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64,
                       max_position_embeddings=128, attention_types=[[["global", "local"], 1]], window_size=16,
                       embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0, bos_token_id=101, eos_token_id=102,
                       pad_token_id=0),
    tiny_tokenizer="minilm",
    # a model without attention (params/models/tiny-mamba.yaml): its sequence mixer is catalogued, not analysed
    tiny_model_types={"mamba": dict(hidden_size=32, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
                                    use_cache=False, bos_token_id=101, eos_token_id=102, pad_token_id=0)},
    qk_statement="any: no family knows this model's attention; the QK sections are skipped.",
)


def missing_adapter(model_type: str | None, section: str) -> str:
    """One line: ``section`` is skipped for ``model_type`` and which family file would enable it."""
    mt = model_type or "this model"
    return (f"{section} skipped: no family knows the attention of model_type {mt!r} (family 'any' reads its "
            f"matrices only); a family file geolip_lib/families/<family>.py (spec and weight-name rules) "
            f"for {mt!r} would enable it (geolip_lib/README.md, 'Adding a model family').")
