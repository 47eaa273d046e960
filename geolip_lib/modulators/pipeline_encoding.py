"""The pooled text representation the modulator pipeline measures: the module whose
``last_hidden_state`` is the representation (read from the family spec) and its mean over
real tokens.

``lexical.representations.encode_texts`` uses the same module and forward
(:meth:`geolip_lib.families.FamilySpec.encode`) but differs on purpose in two ways that
change the floats: it sorts texts by length before batching (less padding) and pools in
float32, while :func:`encode_mean_pooled` keeps the input order (the seed's batches) and
pools in the model's dtype. Both stay as they are so every recorded metric is unchanged.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
from tqdm.auto import tqdm

from .. import progress as _progress
from ..families import family_of_model, spec


def encoder_module(model: nn.Module, family: str | None = None) -> nn.Module:
    """The module whose ``last_hidden_state`` is the representation: the family spec's ``encoder``
    (T5: the encoder; decoder LMs: the base model; BERT: the model or its ``.bert``); a model of
    an unknown family: its encoder when it is an encoder-decoder, its base model when it has
    ``.model.layers``, else itself."""
    fam = family or family_of_model(model)
    if fam is not None and spec(fam).encoder is not None:
        return spec(fam).encoder(model)
    if hasattr(model, "get_encoder") and getattr(model.config, "is_encoder_decoder", False):
        return model.get_encoder()
    if hasattr(model, "model") and hasattr(model.model, "layers"):
        return model.model
    return model


@torch.no_grad()
def encode_mean_pooled(model: nn.Module, tokenizer, texts: Sequence[str], batch_size: int = 64,
                       max_length: int = 128, progress: bool = False) -> np.ndarray:
    """Mean-pooled last hidden state over non-padding tokens.

    Runs through ``encoder_module(model)``, so attached hooks apply.

    Returns
    -------
    (len(texts), d_model) float32 array.
    """
    enc = encoder_module(model)
    out = []
    for s in tqdm(range(0, len(texts), batch_size), desc="encode", disable=_progress.disabled(progress), leave=False):
        b = tokenizer(list(texts[s:s + batch_size]), return_tensors="pt", padding=True, truncation=True,
                      max_length=max_length, return_token_type_ids=False)
        dev = next(enc.parameters()).device
        h = enc(input_ids=b["input_ids"].to(dev), attention_mask=b["attention_mask"].to(dev)).last_hidden_state
        m = b["attention_mask"].to(dev).unsqueeze(-1).to(h.dtype)
        out.append(((h * m).sum(1) / m.sum(1).clamp(min=1)).float().cpu().numpy())
    d = getattr(model.config, "d_model", None) or getattr(model.config, "hidden_size", 0)
    return np.concatenate(out) if out else np.zeros((0, d), np.float32)
