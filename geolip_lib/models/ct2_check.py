"""A rebuilt CTranslate2 model checked by running CTranslate2 itself on the same inputs.

The ``ctranslate2`` package (CPU) loads the original folder; the rebuilt transformers folder is loaded by
transformers; both get the same deterministic token ids (two rows of seven, drawn from the ordinary part of the
vocabulary with a fixed seed):

* decoders: ``Generator.forward_batch`` logits vs the causal LM's logits, every position;
* encoders: ``Encoder.forward_batch`` ``last_hidden_state`` (and the pooler output) vs the model's;
* seq2seq: ``Translator.score_batch`` per-token log-probabilities of a target sequence (CTranslate2 starts the
  decoder itself and appends ``</s>``) vs the log-softmax of the model's logits at the same tokens.

The difference is measured relative to the reference's scale (``max |a - b| / max |b|``). Bounds:

* float32 / float16 / bfloat16 files: :data:`FLOAT_TOL` (1e-4): CTranslate2 computes in float32 from the same
  float32 values we load (float16 and bfloat16 widen exactly), so only summation order differs;
* int8 files: :data:`INT8_TOL` (5e-2). CTranslate2 keeps the weights in int8 and also quantizes each activation
  row to int8 before every matmul (``int8_float32`` on CPU); the rebuilt model holds the dequantized weights in
  float32 and does not round its activations. The activation rounding (half a step of 1/127 of each row's max,
  about 0.4 % per element) is the error left; through a few layers and the softmax it stays within a few percent
  of the output's scale on the tiny test models (measured with ctranslate2 4.8.5 on the eighteen families of
  tests/formats/ct2_recipes.py: 1.6e-4 to 1.1e-2, OPT the largest). A wrong
  map (a swapped or transposed matrix) gives differences of the order of the scale itself, far above either bound.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

from ..lazy import lazy

ctranslate2 = lazy("ctranslate2")

__all__ = ["FLOAT_TOL", "INT8_TOL", "run_both"]

#: the model types run with ``ctranslate2.Encoder``
ENCODERS = ("bert", "roberta", "xlm-roberta", "distilbert")
FLOAT_TOL = 1e-4
INT8_TOL = 5e-2


def _ids(vocab_size: int, special: set, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pool = np.array([i for i in range(vocab_size) if i not in special])
    return rng.choice(pool, size=(2, 7))


def _rel(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    diff = float(np.abs(a - b).max())
    return diff, diff / (float(np.abs(b).max()) or 1.0)


def run_both(folder: Path, out_dir: Path, where: str, model_type: str, vocab: list, int8: bool) -> dict:
    """Run the CTranslate2 folder and the rebuilt transformers folder on the same ids (module docstring)."""
    cfg = transformers.AutoConfig.from_pretrained(str(out_dir))
    model = getattr(transformers, cfg.architectures[0]).from_pretrained(str(out_dir)).eval()
    special = {getattr(cfg, k, None) for k in ("pad_token_id", "bos_token_id", "eos_token_id",
                                               "decoder_start_token_id")}
    ids = _ids(cfg.vocab_size, special)
    compute = "int8_float32" if int8 else "float32"
    tol = INT8_TOL if int8 else FLOAT_TOL
    kw = dict(device="cpu", compute_type=compute, inter_threads=1, intra_threads=1)
    out = {"against": f"ctranslate2 {ctranslate2.__version__} (CPU, {compute})", "tolerance": tol,
           "input": f"token ids {ids.shape[0]} x {ids.shape[1]} (seed 0)"}
    with torch.no_grad():
        if model_type in ENCODERS:
            ct = ctranslate2.Encoder(str(folder), **kw)
            types = np.zeros_like(ids).tolist() if model_type != "distilbert" else None
            res = ct.forward_batch(ids.tolist(), token_type_ids=types)
            a = np.array(res.last_hidden_state)
            t = {} if types is None else {"token_type_ids": torch.zeros_like(torch.from_numpy(ids))}
            ref = model(input_ids=torch.from_numpy(ids), **t)
            b = ref.last_hidden_state.numpy()
            out["compared"] = "encoder last_hidden_state"
            if res.pooler_output is not None and getattr(ref, "pooler_output", None) is not None:
                pa, pb = np.array(res.pooler_output), ref.pooler_output.numpy()
                out["pooler_max_rel_diff"] = _rel(pa, pb)[1]
        elif model_type in ("marian", "t5", "mt5"):
            ct = ctranslate2.Translator(str(folder), **kw)
            eos = cfg.eos_token_id
            src = [[vocab[i] for i in row] for row in ids]
            tgt = [[vocab[i] for i in row[::-1]] for row in ids]
            res = ct.score_batch(src, tgt)
            a = np.array([r.log_probs for r in res], dtype=np.float64)
            start = torch.full((ids.shape[0], 1), cfg.decoder_start_token_id, device="cpu")  # the check runs on the CPU
            tgt_ids = torch.from_numpy(ids[:, ::-1].copy())
            logits = model(input_ids=torch.from_numpy(ids), decoder_input_ids=torch.cat([start, tgt_ids], 1)).logits
            # over the tokens CTranslate2 keeps: the converter dropped <pad> (the last row) from the vocabulary
            lp = torch.log_softmax(logits[..., :len(vocab)].double(), -1)
            gold = torch.cat([tgt_ids, torch.full((ids.shape[0], 1), eos, device="cpu")], 1)
            b = lp.gather(-1, gold[..., None])[..., 0].numpy()
            out["compared"] = (f"per-token log-probabilities of a target (score_batch), over the {len(vocab)} tokens "
                               f"CTranslate2 keeps (<pad> excluded: the converter drops it)")
        else:
            ct = ctranslate2.Generator(str(folder), **kw)
            a = np.array(ct.forward_batch(ids.tolist()))
            b = model(input_ids=torch.from_numpy(ids)).logits.numpy()
            out["compared"] = "logits at every position (forward_batch)"
    if a.shape != b.shape:
        raise ValueError(f"CTranslate2 file {where}: CTranslate2 gives {list(a.shape)} where the rebuilt model "
                         f"gives {list(b.shape)}: the conversion is wrong")
    diff, rel = _rel(a, b)
    out.update(max_abs_diff=diff, max_rel_diff=rel)
    if not rel <= tol:
        raise ValueError(f"CTranslate2 file {where}: the rebuilt {model_type} differs from CTranslate2's own run by "
                         f"{rel:.2e} of the output's scale (tolerance {tol:g}): the conversion is wrong")
    return out
