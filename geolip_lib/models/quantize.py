"""Simulated GGUF quantization: round a model's fp32 weights to a ggml block scheme and back.

A GGUF file stores most matrices quantized (Q4_1: blocks of 32 weights along a row, each with
an fp16 scale ``d`` and minimum ``m`` and 4-bit codes ``q`` in 0..15, ``w ≈ d·q + m``); loading
it dequantizes them. Measures that look at individual weights (``|w| < 0.1`` thresholds,
spectral tails) see the rounding. To measure by how much, a params file may ask for
``quantize: q4_1``: the model's fp32 weights are rounded exactly as ``ggml``'s ``quantize_row``
does, by the ``gguf`` package's own numpy implementation (``gguf.quants``, maintained with
llama.cpp; nothing here re-implements the arithmetic), and the notebooks run on the result.

Which tensors: like ``convert_hf_to_gguf.py``, only 2-D floating matrices whose rows divide
into whole blocks are quantized; 1-D tensors (norms, biases) stay fp32.
"""
from __future__ import annotations

from typing import Union

import numpy as np
import torch
from gguf import GGMLQuantizationType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize

from ..provenance import weight_files
from .common import ModelLoadError, weights_hash

#: the schemes a params file's ``quantize:`` may name -> ggml type
SCHEMES: dict[str, GGMLQuantizationType] = {"q4_1": GGMLQuantizationType.Q4_1}

#: part of the cache key of a quantized model's safetensors copy (bump when the rounding changes)
QUANT_VERSION = "simulated-quant-1"


def _qtype(scheme: str) -> GGMLQuantizationType:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: unknown quantization {scheme!r} (known: {', '.join(SCHEMES)})")
    return SCHEMES[scheme]


def block_size(scheme: str) -> int:
    """Weights per block of ``scheme`` (32 for Q4_1)."""
    return GGML_QUANT_SIZES[_qtype(scheme)][0]


def quantizable(tensor: Union[torch.Tensor, np.ndarray], scheme: str = "q4_1") -> bool:
    """True for a 2-D floating matrix whose rows divide into whole blocks (what GGUF quantizes)."""
    if isinstance(tensor, torch.Tensor):
        floating = tensor.is_floating_point()
    else:
        floating = np.issubdtype(np.asarray(tensor).dtype, np.floating)
    return floating and tensor.ndim == 2 and tensor.shape[-1] % block_size(scheme) == 0


def encode(w: np.ndarray, scheme: str = "q4_1") -> np.ndarray:
    """The ggml blocks of ``w`` (rows of length a multiple of the block size), as bytes (uint8)."""
    w = np.asarray(w)
    if w.ndim < 1 or w.shape[-1] % block_size(scheme) != 0:
        raise ValueError(f"w: the last dimension ({w.shape[-1] if w.ndim else 'scalar'}) must be a multiple of "
                         f"{block_size(scheme)} (the {scheme} block size)")
    return quantize(np.ascontiguousarray(w, dtype=np.float32), _qtype(scheme))


def decode(blocks: np.ndarray, scheme: str = "q4_1") -> np.ndarray:
    """float32 weights of ggml ``blocks`` (the inverse layout of :func:`encode`)."""
    return dequantize(blocks, _qtype(scheme))


def round_trip(w: Union[torch.Tensor, np.ndarray], scheme: str = "q4_1") -> Union[torch.Tensor, np.ndarray]:
    """``dequantize(quantize(w))``: what a GGUF file of ``w`` gives back, in ``w``'s type, dtype and device.

    Parameters
    ----------
    w : tensor or array, last dimension a multiple of the block size (32 for Q4_1)
    scheme : str
        A key of :data:`SCHEMES`.
    """
    if isinstance(w, torch.Tensor):
        out = decode(encode(w.detach().to("cpu", torch.float32).numpy(), scheme), scheme)
        return torch.from_numpy(out).to(device=w.device, dtype=w.dtype)
    return decode(encode(w, scheme), scheme).astype(np.asarray(w).dtype, copy=False)


def block_parameters(w: np.ndarray, scheme: str = "q4_1") -> tuple[np.ndarray, np.ndarray]:
    """Per-block scale ``d`` and minimum ``m`` (fp16, as stored) of ``w``'s blocks, shape ``(n_blocks,)`` each."""
    if scheme != "q4_1":
        raise ValueError(f"scheme: block_parameters reads the q4_1 layout only, got {scheme!r}")
    b = encode(w, scheme).reshape(-1, GGML_QUANT_SIZES[_qtype(scheme)][1])
    return (b[:, 0:2].copy().view(np.float16).astype(np.float32).ravel(),
            b[:, 2:4].copy().view(np.float16).astype(np.float32).ravel())


@torch.no_grad()
def quantize_model(model: torch.nn.Module, scheme: str = "q4_1") -> dict[str, str]:
    """Round every quantizable parameter of ``model`` in place; ``{parameter name: ggml type}`` of those rounded.

    Tied parameters (one tensor under two names) are rounded once, under their first name.
    """
    qtype = _qtype(scheme)
    done: dict[str, str] = {}
    for name, p in model.named_parameters():  # named_parameters yields a tied tensor once
        if quantizable(p, scheme):
            p.copy_(round_trip(p.data, scheme))
            done[name] = qtype.name
    if not done:
        raise ValueError(f"model: no 2-D weight has rows divisible by {block_size(scheme)}; nothing to quantize")
    return done


def apply(lm) -> None:
    """Round a freshly loaded :class:`~geolip_lib.models.loaded.LoadedModel` as its params' ``quantize:`` asks.

    In place: the module's matrices are rounded (:func:`quantize_model`), the weight battery's
    safetensors folder becomes a copy of the rounded weights (written lazily under its own cache
    key), and ``lm.quantization`` records what was done for the provenance (``simulated: true``;
    the source files stay those the fp32 weights were read from).
    """
    p = lm.params
    if not p.quantize:
        return
    if lm.quantization:
        raise ModelLoadError(f"model '{p.name}': quantize: {p.quantize} asks to round weights that are already "
                             f"dequantized from {lm.quantization.get('gguf_file')}; remove quantize:")
    types = quantize_model(lm.model, p.quantize)
    if not lm.source_files:  # the provenance names the fp32 files the rounded weights came from
        lm.source_files = tuple(weight_files(lm._weights_dir))
    lm._weights_dir = None
    lm._weights_key = weights_hash([p.model_dump(), QUANT_VERSION])
    lm.quantization = {"simulated": True, "scheme": _qtype(p.quantize).name, "types": types,
                       "gguf_file": None, "sha256": None, "bytes": None}


def provenance(scheme: str, tensors: dict[str, str]) -> dict:
    """The weights' provenance block of a simulated quantization (the shared dequantized convention)."""
    return {"dequantized": True, "simulated": True, "scheme": _qtype(scheme).name, "quantization": dict(tensors),
            "note": f"fp32 weights rounded to {_qtype(scheme).name} blocks and back (gguf.quants), "
                    "as a GGUF file of them would load; 1-D tensors (norms, biases) untouched"}


__all__ = ["QUANT_VERSION", "SCHEMES", "apply", "block_parameters", "block_size", "decode", "encode", "provenance",
           "quantizable", "quantize_model", "round_trip"]
