"""HF CLIP and SigLIP (transformers ``CLIPModel`` / ``SiglipModel``): a ``text`` and a ``vision`` tower."""
from __future__ import annotations

from ..models.adapters import clip as _adapter
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu, no_output_embeddings


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
    model_types=("clip", "siglip"), sizes=_sizes, adapter=_adapter,
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
