"""A rebuilt transformers model checked against the ONNX graph it came from, by running both.

The graph runs in ``onnx.reference.ReferenceEvaluator`` (numpy: the one ONNX runtime of the main environment)
and the rebuilt model in torch, on the same inputs, built from the graph's inputs by name: ``input_ids`` random
in the vocabulary, ``attention_mask`` ones, ``token_type_ids`` zeros, ``position_ids`` 0..S-1, ``pixel_values``
standard normal at the model's image size, ``past_key_values.*`` zeros with no past positions (a merged
decoder's ``use_cache_branch`` false), ``encoder_hidden_states`` from the rebuilt encoder (an Optimum decoder
part), ``decoder_input_ids`` random; an encoder-decoder's decoder-with-past part gets the cache the rebuilt
model makes for three earlier tokens, and one more token. Outputs are compared by name (``last_hidden_state``,
``logits``, ``text_embeds`` ...) or, for the dynamo exporter's generated names, by position in the model's
output tuple; the caches an export returns (``present.*``) follow from the same weights and are not compared. A
difference above :data:`TOLERANCE` of the output's largest magnitude is one line: the conversion is wrong.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnx
import torch
import transformers
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from transformers.cache_utils import EncoderDecoderCache

from .onnx_graph import Part, fail

__all__ = ["TOLERANCE", "check_parts"]

#: the largest relative difference (to the output's largest magnitude) a conversion may show
TOLERANCE = 1e-4
_NAMED = {"last_hidden_state", "pooler_output", "logits", "text_embeds", "image_embeds", "logits_per_image",
          "logits_per_text", "encoder_last_hidden_state", "start_logits", "end_logits"}
BATCH, SEQ = 2, 7


def _rebuilt(out_dir: Path):
    """The rebuilt model, built with the constructor keywords the import used (``add_pooling_layer=False`` for a
    graph without a pooler: its record in ``onnx_source.json`` says so; a config has no field for it)."""
    cfg = transformers.AutoConfig.from_pretrained(str(out_dir))
    arch = (getattr(cfg, "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    if cls is None:
        cls = transformers.AutoModel
    rec = Path(out_dir) / "onnx_source.json"
    kw = {}
    if rec.is_file():
        written = json.loads(rec.read_text(encoding="utf-8")).get("written") or {}
        kw = dict(written.get("init_kwargs") or {})
    return cls.from_pretrained(str(out_dir), **kw).float().eval()


def _gather_elements():
    """``GatherElements`` for the reference runtime: onnx's own (onnx 1.23) reshapes wrongly when the data is larger
    than the indices on a non-gathered axis (BERT's buffered ``token_type_ids``: data (1, 64), indices (1, 7)), so
    every BERT-like dynamo export would fail to run; numpy's ``take_along_axis`` on the data cut to the indices'
    extent is the operator's definition."""
    class GatherElements(OpRun):
        op_domain = ""

        def _run(self, data, indices, axis=None):
            ax = int(axis or 0) % data.ndim
            idx = np.where(indices < 0, indices + data.shape[ax], indices)
            cut = tuple(slice(None) if d == ax else slice(0, n) for d, n in enumerate(idx.shape))
            return (np.take_along_axis(data[cut], idx, axis=ax),)

    return GatherElements


def _cfg(cfg, name, default=None):
    for c in (cfg, getattr(cfg, "text_config", None), getattr(cfg, "vision_config", None)):
        if c is not None and getattr(c, name, None) is not None:
            return getattr(c, name)
    return default


def _inputs(part: Part, model, rng, enc_len: int) -> dict:
    """Numpy inputs for every graph input, by name (see the module docstring)."""
    cfg = model.config
    vocab = int(_cfg(cfg, "vocab_size", 100))
    feeds = {}
    for name, elem, dims in part.inputs():
        dt = onnx.helper.tensor_dtype_to_np_dtype(elem)
        seq = enc_len if name.startswith("encoder_") else SEQ
        if name in ("input_ids", "decoder_input_ids"):
            seq = dims[1] if len(dims) > 1 and dims[1] else seq
            feeds[name] = rng.integers(0, min(vocab, 1000), (dims[0] or BATCH, seq)).astype(dt)
        elif name in ("attention_mask", "encoder_attention_mask", "decoder_attention_mask"):
            feeds[name] = np.ones((dims[0] or BATCH, dims[1] or seq), dtype=dt)
        elif name == "token_type_ids":
            feeds[name] = np.zeros((dims[0] or BATCH, dims[1] or SEQ), dtype=dt)
        elif name == "position_ids":
            n = dims[1] or SEQ
            feeds[name] = np.broadcast_to(np.arange(n, dtype=dt), (dims[0] or BATCH, n)).copy()
        elif name == "pixel_values":
            size = int(_cfg(cfg, "image_size", 32))
            shape = (dims[0] or BATCH, dims[1] or int(_cfg(cfg, "num_channels", 3)), dims[2] or size, dims[3] or size)
            feeds[name] = rng.standard_normal(shape).astype(dt)
        elif name.startswith("past_key_values"):
            feeds[name] = np.zeros([dims[0] or BATCH] + [0 if d is None else d for d in dims[1:]], dtype=dt)
        elif name == "use_cache_branch":
            feeds[name] = np.array([False])
        elif name == "encoder_hidden_states":
            feeds[name] = None  # filled from the rebuilt encoder
        else:
            raise fail(f"{part.path.name}: graph input {name} {dims}: no rule to build it; cannot check")
    return feeds


def _flat(out) -> list:
    res = []
    for v in (out.to_tuple() if hasattr(out, "to_tuple") else out):
        if isinstance(v, torch.Tensor):
            res.append(v)
        elif isinstance(v, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in v):
            res.extend(v)
    return res


def _run_model(part: Part, model, feeds: dict):
    """The rebuilt model's outputs for this part's inputs."""
    t = {k: torch.from_numpy(np.asarray(v)) for k, v in feeds.items()
         if v is not None and not k.startswith("past_key_values") and k != "use_cache_branch"}
    with torch.no_grad():
        if part.role == "encoder":
            return model.get_encoder()(input_ids=t["input_ids"], attention_mask=t.get("attention_mask"))
        if "encoder_hidden_states" in feeds:  # an encoder-decoder's decoder part (a decoder-only's has none)
            enc = torch.from_numpy(feeds["encoder_hidden_states"])
            return model(encoder_outputs=(enc,), attention_mask=t.get("encoder_attention_mask"),
                         decoder_input_ids=t["input_ids"], use_cache=False)
        kw = dict(t)
        if getattr(model.config, "is_encoder_decoder", False) or "decoder_input_ids" in kw:
            return model(**kw, use_cache=False)
        if hasattr(model, "get_text_features") and "pixel_values" in kw:
            return model(**kw)
        return model(**kw, **({"use_cache": False} if getattr(model.config, "use_cache", None) is not None else {}))


def _encode(model, src: dict) -> torch.Tensor:
    with torch.no_grad():
        return model.get_encoder()(input_ids=torch.from_numpy(np.asarray(src["input_ids"], dtype=np.int64)),
                                   attention_mask=torch.from_numpy(np.asarray(src["attention_mask"], np.int64))
                                   ).last_hidden_state


def _seq2seq_step(part: Part, model, feeds: dict, enc: dict, rng):
    """An encoder-decoder's decoder-with-past part: its cache (self-attention of 3 earlier tokens, cross-attention
    of the encoder output) made by the rebuilt model, then one more token through both."""
    ehs = _encode(model, enc)
    ids = torch.from_numpy(feeds["input_ids"]).long()
    first = torch.from_numpy(rng.integers(0, ids.max().item() + 1, (ids.shape[0], 3)))
    mask = torch.from_numpy(np.asarray(enc["attention_mask"], dtype=np.int64))
    with torch.no_grad():
        past = model(encoder_outputs=(ehs,), attention_mask=mask, decoder_input_ids=first,
                     use_cache=True).past_key_values
    if not isinstance(past, EncoderDecoderCache):
        raise fail(f"{part.path.name}: the rebuilt {type(model).__name__} gives no encoder-decoder cache")
    for name in list(feeds):
        if name.startswith("past_key_values."):
            _, i, side, kv = name.split(".")
            cache = past.self_attention_cache if side == "decoder" else past.cross_attention_cache
            layer = cache.layers[int(i)]
            feeds[name] = (layer.keys if kv == "key" else layer.values).numpy().copy()
        elif name == "encoder_attention_mask":
            feeds[name] = mask.numpy().astype(feeds[name].dtype)
    with torch.no_grad():
        got = model(encoder_outputs=(ehs,), attention_mask=mask, decoder_input_ids=ids[:, :1], past_key_values=past,
                    use_cache=True)
    feeds["input_ids"] = feeds["input_ids"][:, :1]
    return feeds, got


def check_parts(parts: list, out_dir: Path, seed: int = 0) -> dict:
    """Run every part's graph and the rebuilt model of ``out_dir`` on the same inputs; compare their outputs.
    Returns one record per part; raises :class:`~.onnx_graph.OnnxImportError` (one line) on a difference
    above :data:`TOLERANCE`."""
    model = _rebuilt(Path(out_dir))
    rng = np.random.default_rng(seed)
    enc_ids = {"input_ids": rng.integers(0, 100, (BATCH, SEQ)), "attention_mask": np.ones((BATCH, SEQ), np.int64)}
    records = []
    for part in sorted(parts, key=lambda p: p.role != "encoder"):  # the encoder first: its ids feed the decoders
        feeds = _inputs(part, model, rng, SEQ)
        if part.role == "encoder":
            enc_ids = feeds
        if "encoder_hidden_states" not in feeds and any(".encoder." in k for k in feeds):  # cross-attention cache
            feeds, got = _seq2seq_step(part, model, feeds, enc_ids, rng)
        else:
            got = None
        if "encoder_hidden_states" in feeds:
            feeds["encoder_hidden_states"] = _encode(model, enc_ids).numpy()
        proto = part.proto
        if any(t.data_location == onnx.TensorProto.EXTERNAL for t in part.inits.values()):
            for name in part.inits:
                part.array(name)  # every reference checked (bounded) before onnx reads them
            proto = onnx.ModelProto()
            proto.CopyFrom(part.proto)
            onnx.load_external_data_for_model(proto, str(part.path.resolve().parent))
        t0 = time.perf_counter()
        try:
            ref = ReferenceEvaluator(proto, new_ops=[_gather_elements()]).run(None, feeds)
        except Exception as e:  # the reference runtime's own errors: one line naming the file
            raise fail(f"{part.path.name}: onnx.reference cannot run the graph ({type(e).__name__}: {e})") from None
        t_graph = time.perf_counter() - t0
        try:
            got = got if got is not None else _run_model(part, model, feeds)
        except Exception as e:  # a rebuilt model that does not accept the graph's inputs
            raise fail(f"{part.path.name}: the rebuilt {type(model).__name__} cannot run the graph's inputs "
                       f"({type(e).__name__}: {e})") from None
        flat = _flat(got)
        compared = []
        for i, name in enumerate(part.outputs()):
            if name.startswith("present"):
                continue
            if name in _NAMED:
                mine = getattr(got, name, None)
            else:
                mine = flat[i] if i < len(flat) else None
            if mine is None:
                raise fail(f"{part.path.name}: output {name}: the rebuilt {type(model).__name__} has no such output")
            mine = mine.detach().float().numpy()
            if mine.shape != ref[i].shape:
                raise fail(f"{part.path.name}: output {name}: the rebuilt model gives {mine.shape}, the graph "
                           f"{ref[i].shape}")
            diff = float(np.abs(mine - ref[i]).max()) if mine.size else 0.0
            scale = float(np.abs(ref[i]).max()) or 1.0
            compared.append({"output": name, "shape": list(mine.shape), "max_abs_diff": diff,
                             "max_rel_diff": diff / scale})
            if diff / scale > TOLERANCE:
                raise fail(f"{part.path.name}: output {name} of the rebuilt {type(model).__name__} differs from the "
                           f"graph's by {diff / scale:.2e} of its scale (tolerance {TOLERANCE:g}): the conversion "
                           f"is wrong")
        if not compared:
            raise fail(f"{part.path.name}: no output to compare (outputs {part.outputs()})")
        records.append({"file": part.path.name, "inputs": {k: list(np.shape(v)) for k, v in feeds.items()},
                        "compared": compared, "graph_seconds": round(t_graph, 2)})
    return {"against": "onnx.reference.ReferenceEvaluator", "tolerance": TOLERANCE, "class": type(model).__name__,
            "parts": records, "max_rel_diff": max(c["max_rel_diff"] for r in records for c in r["compared"])}
