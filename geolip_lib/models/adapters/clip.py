"""HF CLIP and SigLIP adapter (``CLIPModel`` / ``SiglipModel``): a ``text`` and a ``vision`` tower.

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

from .rules import Heads, build, rules

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
