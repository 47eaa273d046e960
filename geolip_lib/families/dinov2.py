"""DINOv2 / ViT (vision only): one ``vision`` stack; the only "embedding table" is the learned positions."""
from __future__ import annotations

from ..models.adapters import dinov2 as _adapter
from .spec import FamilySpec, Sizes, hf_vision_hidden, no_output_embeddings


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


def _vision_tables(model) -> dict:
    emb = model.embeddings
    return {"position": emb.position_embeddings[0], "patch": emb.patch_embeddings.projection.weight.flatten(1)}


DINOV2 = FamilySpec(
    name="dinov2", stacks=("vision",), is_text=False, is_generative=False,
    auto_class="AutoModel", model_types=("dinov2", "vit", "dinov2_with_registers"),
    sizes=_sizes, adapter=_adapter,
    # the learned position embeddings (1 + n_patches, D), CLS position first
    input_embeddings=lambda model: model.embeddings.position_embeddings[0],
    output_embeddings=no_output_embeddings,
    vision_hidden=hf_vision_hidden, image_size=lambda model, config: int(config.image_size),
    vision_tables=_vision_tables,
    qk_statement="DINOv2 / ViT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds "
                 "the x W_q^T W_k x term, the bias terms are extra; positions are added to the patch tokens.",
    tiny_defaults=dict(model_type="dinov2", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2,
                       image_size=32, patch_size=8, num_channels=3),
    tiny_tokenizer=None,
    tiny_model_types={
        "vit": dict(model_type="vit", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                    image_size=32, patch_size=8, num_channels=3),
        "dinov2_with_registers": dict(model_type="dinov2_with_registers", hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=4, mlp_ratio=2, image_size=32, patch_size=8,
                                      num_channels=3, num_register_tokens=2)},
)
