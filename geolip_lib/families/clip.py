"""HF CLIP and SigLIP (transformers ``CLIPModel`` / ``SiglipModel``): a ``text`` and a ``vision`` tower.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
HF CLIP and SigLIP adapter (``CLIPModel`` / ``SiglipModel``): a ``text`` and a ``vision`` tower.

Names::

    text_model.embeddings.{token,position}_embedding.weight      embed (text)
    vision_model.embeddings.position_embedding.weight            embed (vision)
    vision_model.embeddings.{patch_embedding,class_embedding}    embed (vision; 4-D conv, 1-D)
    {text,vision}_model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj   q / k / v / o (self, text / vision)
    {text,vision}_model.encoder.layers.{i}.mlp.fc1 / fc2         mlp_in / mlp_out
    {text,vision}_model.encoder.layers.{i}.layer_norm{1,2}       norm
    text_model.final_layer_norm, vision_model.{pre_layrnorm,post_layernorm}   norm
    text_projection, visual_projection, logit_scale, logit_bias, text_model.head, vision_model.head.*
                                                                 other (projection / pooling heads)

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim)`` in both towers (absolute positions).
"""
from __future__ import annotations

from ..checkpoints.rules import Heads, build, rules
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu, no_output_embeddings

_L = r"(?:^|\.)(?P<stack>text_model|vision_model)\.encoder\.layers\.(?P<layer>\d+)\."
_S = r"(?:^|\.)(?P<stack>text_model|vision_model)\."
RULES = rules(
    (_L + r"self_attn\.q_proj\.", "q", None, "self"),
    (_L + r"self_attn\.k_proj\.", "k", None, "self"),
    (_L + r"self_attn\.v_proj\.", "v", None, "self"),
    (_L + r"self_attn\.out_proj\.", "o", None, "self"),
    (_L + r"mlp\.fc1\.", "mlp_in", None),
    (_L + r"mlp\.fc2\.", "mlp_out", None),
    (_L + r"layer_norm[12]\.", "norm", None),
    (_S + r"embeddings\.(?:token_embedding|position_embedding)\.weight$", "embed", None),
    (_S + r"embeddings\.(?:patch_embedding\.weight|class_embedding)$", "embed", None),
    (_S + r"embeddings\.patch_embedding\.bias$", "bias", None),
    (_S + r"embeddings\.position_ids$", "other", None, None, "buffer"),
    (_S + r"(?:final_layer_norm|pre_layrnorm|post_layernorm)\.", "norm", None),
    (_S + r"head\.", "other", None, None, "pooling head"),
    (r"(?:^|\.)(?:text_projection|visual_projection|logit_scale|logit_bias|classifier)\b", "other", None, None,
     "projection head"),
)


def _tower(config: dict, stack: str) -> dict:
    return config.get("text_config" if stack == "text" else "vision_config") or {}


def adapt(tensors, config) -> list:
    """Map CLIP / SigLIP tensor names to catalog entries (see the module docstring)."""
    def heads(stack, attn):
        c = _tower(config, stack)
        d, h = c.get("hidden_size"), c.get("num_attention_heads")
        if not isinstance(d, int) or not isinstance(h, int):
            raise ValueError(f"config: the clip adapter needs {stack}_config.hidden_size and "
                             f"{stack}_config.num_attention_heads (pass the model's config.json)")
        return Heads(h, d // h, h, d)
    return build(tensors, RULES, heads)


def _sizes(cfg: dict) -> Sizes:
    t = cfg.get("text_config") or {}
    d, h = int(t["hidden_size"]), int(t["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(t["num_hidden_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


def _text_hidden(model, stack, ids, mask, dec) -> list:
    return hidden_to_cpu(model.text_model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)


def _vision_hidden(model, x) -> list:
    return hidden_to_cpu(model.vision_model(pixel_values=x, output_hidden_states=True).hidden_states)


def _vision_tables(model) -> dict:
    emb = model.vision_model.embeddings
    return {"position": emb.position_embedding.weight, "patch": emb.patch_embedding.weight.flatten(1)}


def _image_stats(model):
    return ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)) \
        if model.config.model_type == "clip" else ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


def _locate(model, stack):
    if stack not in ("text", "vision"):
        fail("stack", f"CLIP models have stacks 'text' and 'vision', got {stack!r}")
    tower = model.text_model if stack == "text" else model.vision_model
    return tower, tower.encoder.layers


_TOWER = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, attention_dropout=0.0)

CLIP = FamilySpec(
    name="clip", stacks=("text", "vision"), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("clip", "siglip"), sizes=_sizes, adapt=adapt,
    input_embeddings=lambda model: model.text_model.embeddings.token_embedding.weight,
    output_embeddings=no_output_embeddings, text_hidden=_text_hidden, vision_hidden=_vision_hidden,
    image_size=lambda model, config: int(config.vision_config.image_size), image_stats=_image_stats,
    vision_tables=_vision_tables, locate_blocks=_locate, encoder=lambda model: model.text_model,
    tiny_defaults=dict(model_type="clip", projection_dim=16,
                       text_config=dict(_TOWER, max_position_embeddings=64, vocab_size=30522, pad_token_id=0,
                                        bos_token_id=101, eos_token_id=102),
                       vision_config=dict(_TOWER, image_size=32, patch_size=8)),
    tiny_model_types={"siglip": {"model_type": "siglip", "text_config": dict(_TOWER, max_position_embeddings=64, vocab_size=30522,
                                                    pad_token_id=0, bos_token_id=101, eos_token_id=102),
                                 "vision_config": dict(_TOWER, image_size=32, patch_size=8)}},
    tiny_tokenizer="minilm", vocab_from_tokenizer=False,  # the vocabulary is in text_config
    qk_statement="CLIP / SigLIP: in both towers scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the "
                 "bilinear form holds the x W_q^T W_k x term, the bias terms are extra; positions are added to the "
                 "input; the text tower is causal in CLIP, bidirectional in SigLIP.",
)
