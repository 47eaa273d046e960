"""Where each weight of a quantized matrix lay before its rounding: a per-weight interval, from the stored scales.

Values measured on dequantized weights (a GGUF file, a simulated ``quantize: q4_1`` copy, a CTranslate2 int8 /
int16 file) are not the trained values. A claims record keeps its verdict only when it carries the range the
unquantized value can lie in (``quantization_bound``), and that range follows from where each weight can have been
before rounding. :func:`rounding_of` gives, for one catalog entry, every weight's dequantized value and how far below
and above it the original can lie (a :class:`Rounding`); :func:`threshold_counts` and :func:`turn` summarise it for
the fraction |w| < t and for the direction of the flattened matrix.

The rule per stored type (:data:`TYPES`):

* round-to-nearest blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 as ggml's ``quantize_row_*_ref`` and ``gguf.quants``
  write them; the simulated copies; CTranslate2 int8 / int16): every code is the nearest one at the block's scale,
  so a weight lay within **half a step** of its stored value. ggml picks the codes at the fp32 scale and then
  stores the scale (and Q4_1's / Q5_1's minimum) as fp16: the half fp16 spacing this moves code q by is added.
  Q4_0 and Q5_0 clamp their top code (their largest magnitude sits on code 0, 8 or 16 steps from zero; the top code
  is 7 or 15): a weight there lay up to one step above it.
* K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: super-blocks of 256, sub-blocks of 32 with step ``d·sc`` or of 16), and
  the round-to-nearest types of a file made with an importance matrix: **one full step**. llama.cpp's own final
  pass rounds each weight to the nearest code at the stored sub-block scale (half a step), but its scale search
  (``make_qkx2_quants``, ``make_qx_quants``) picks codes at a trial scale and refits scale and minimum by least
  squares, and a quantizer that keeps those codes (the importance-matrix paths of the legacy types do) moves a
  weight by more than half of the refitted step. An **end code** (0 or the largest) may hold a clamped weight,
  whose original lies beyond it on the outer side: nothing stored bounds how far, and it is assumed to lie within
  one more range of its sub-block (``nmax`` steps; a clamp that cut a whole range off would cost the least-squares
  fit more than the unclamped range it starts from). :func:`threshold_counts` can also leave that side open
  (``ends_unbounded``). A sub-block of step 0 (its scale rounded to 0) tells nothing: its weights may lie anywhere.

Where the step comes from. A GGUF matrix's step and code are read from **its stored blocks** (the file's raw bytes,
dequantized by ``gguf.quants`` itself with every code set to its lowest value and to the next one: the value at
the lowest code and the step of each (sub-)block, exactly as the file's own dequantization computes them), not
from the dequantized values: a step read back from a K-quant sub-block's values (the smallest gap between distinct
values) is only an upper bound, and cannot tell which weights sit on an end code. The mapping from the loaded
matrix to its GGUF tensor (``gguf``'s own tensor-name map) is checked value for value, up to an order of rows
(transformers reorders llama's W_Q / W_K rows); a matrix that does not match gets no bound. A simulated copy and a
CTranslate2 file have no stored block beside the loaded weights: their step is **read back** from the dequantized
values (:func:`readback_rounding`, :func:`ct2_rounding`), which their reference rounding makes exact (a block's
extreme weight sits on a known code; CTranslate2's row maximum maps to 127).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import gguf
import numpy as np
from gguf import GGMLQuantizationType, GGUFReader
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

#: half the spacing of fp16 relative to a normal value, and half its subnormal spacing
FP16_HALF_ULP, FP16_HALF_SUBNORMAL = 2.0 ** -11, 2.0 ** -25
#: half the spacing of bfloat16 relative to its value
BF16_HALF_ULP = 2.0 ** -8
#: float32 arithmetic of the dequantization (products and sums of the stored scales), relative to a block's scale
FP32_SLACK = 2.0 ** -20
#: the GGUF metadata keys llama-quantize writes when an importance matrix chose the codes
IMATRIX_KEYS = ("quantize.imatrix.file", "quantize.imatrix.dataset", "quantize.imatrix.entries_count")


@dataclass(frozen=True)
class BlockType:
    """One ggml block type: weights per (sub-)block sharing a step, number of codes, the code whose value carries
    no step (``zero``; 0 for the types with a minimum), the byte ranges of the codes in a block with the byte
    that writes every code there as the lowest one and as the next one, whether it is a K-quant, and how far beyond
    its top code (in steps) a round-to-nearest block can hold a clamped weight."""

    name: str
    sub: int
    levels: int
    zero: int
    codes: tuple
    kquant: bool = False
    top_extra: float = 0.0


TYPES: dict[str, BlockType] = {t.name: t for t in (
    BlockType("Q4_0", 32, 16, 8, ((2, 18, 0x00, 0x11),), top_extra=0.5),
    BlockType("Q4_1", 32, 16, 0, ((4, 20, 0x00, 0x11),)),
    BlockType("Q5_0", 32, 32, 16, ((2, 6, 0x00, 0x00), (6, 22, 0x00, 0x11)), top_extra=0.5),
    BlockType("Q5_1", 32, 32, 0, ((4, 8, 0x00, 0x00), (8, 24, 0x00, 0x11))),
    BlockType("Q8_0", 32, 256, 128, ((2, 34, 0x80, 0x81),)),
    BlockType("Q2_K", 16, 4, 0, ((16, 80, 0x00, 0x55),), kquant=True),
    BlockType("Q3_K", 16, 8, 4, ((0, 32, 0x00, 0x00), (32, 96, 0x00, 0x55)), kquant=True),
    BlockType("Q4_K", 32, 16, 0, ((16, 144, 0x00, 0x11),), kquant=True),
    BlockType("Q5_K", 32, 32, 0, ((16, 48, 0x00, 0x00), (48, 176, 0x00, 0x11)), kquant=True),
    BlockType("Q6_K", 16, 64, 32, ((0, 128, 0x00, 0x11), (128, 192, 0x00, 0x00)), kquant=True),
)}
#: float types: how far the rounding to them moved a weight, relative to its value (F32: not at all)
FLOAT_TYPES = {"F32": 0.0, "F16": FP16_HALF_ULP, "BF16": BF16_HALF_ULP}


def rule_text(qtype: str, imatrix: bool = False) -> str:
    """The per-weight rule of ``qtype`` in words (``"text"`` of a bound record)."""
    if qtype in FLOAT_TYPES:
        return "exact (F32)" if qtype == "F32" else f"each weight moved at most half a {qtype} spacing"
    if qtype in ("int8", "int16"):
        return f"each weight moved at most half a step of its CTranslate2 {qtype} scale"
    t = TYPES[qtype]
    if t.kquant or (imatrix and qtype != "Q8_0"):
        unit = "sub-block" if t.kquant else "block"
        return (f"each weight moved at most one step of its {qtype} {unit}, a weight on an end code (possibly "
                f"clamped) at most one {unit} range further out")
    top = " (a weight on the clamped top code up to one step above)" if t.top_extra else ""
    return f"each weight moved at most half a step of its {qtype} block{top}"


def assumption(qtype: str, imatrix: bool = False) -> Optional[str]:
    """What the rule of ``qtype`` assumes beyond the stored bytes (``"assumes"`` of a bound record), or None."""
    t = TYPES.get(qtype)
    if t is None or not (t.kquant or (imatrix and qtype != "Q8_0")):
        return None
    return ("one step per weight, not half: llama.cpp's final pass rounds to the nearest code at the stored scale, "
            "but its scale search picks codes at a trial scale and refits the scale by least squares, and a "
            "quantizer that keeps those codes moves a weight further; an end code may hold a clamped weight, assumed "
            "within one more range of its sub-block beyond it (nothing stored bounds it); a sub-block of step 0: "
            "anywhere")


@dataclass
class Rounding:
    """Every weight of one matrix (the loaded layout): its dequantized ``values``, how far ``below`` and ``above``
    them the original can lie (``inf``: unbounded), the ``step`` of its (sub-)block (0 where nothing is known),
    which of those sides is an end code's assumed reach (``open_below`` / ``open_above``: a clamped weight may lie
    further), the stored ``qtype``, the rule in words and whether an importance matrix chose the codes."""

    values: np.ndarray
    below: np.ndarray
    above: np.ndarray
    step: np.ndarray
    qtype: str
    imatrix: bool = False
    open_below: Optional[np.ndarray] = None
    open_above: Optional[np.ndarray] = None
    source: str = "stored scales"

    @property
    def text(self) -> str:
        return rule_text(self.qtype, self.imatrix)

    def rows(self, row_slice: Optional[tuple]) -> "Rounding":
        """The rows ``row_slice`` (a catalog view's rows of its stored tensor)."""
        if row_slice is None:
            return self
        s = slice(int(row_slice[0]), int(row_slice[1]))
        cut = (lambda a: None if a is None else a[s])
        return Rounding(self.values[s], self.below[s], self.above[s], self.step[s], self.qtype, self.imatrix,
                        cut(self.open_below), cut(self.open_above), self.source)


def _per_weight(v, v0, s, spec: BlockType, one_step: bool, round_fp16: bool) -> tuple:
    """``(below, above, step, open_below, open_above)`` of weights ``v`` (one (sub-)block per row) whose lowest code
    is worth ``v0`` and whose code steps by ``s`` (signed; one per row), by the module's rules (float32: the widths
    carry a relative slack far above its precision)."""
    v = np.asarray(v, dtype=np.float32)
    v0, s = np.asarray(v0, dtype=np.float32), np.asarray(s, dtype=np.float32)
    a = np.abs(s)
    known = a > 0
    k = np.rint((v - v0) / np.where(known, s, np.float32(1))) * known
    top, bottom = (k >= spec.levels - 1) & known, (k <= 0) & known
    up = s >= 0  # a negative step (Q6_K / Q3_K scales are signed) turns the codes' order in values
    r = np.float32(1.0 if one_step else 0.5)
    slack = np.float32(FP32_SLACK) * (np.abs(v0) + spec.levels * a)
    if round_fp16:  # the fp16 scale (and minimum) moved the value of code k by half their spacing
        kz = np.abs(k - spec.zero)
        slack = slack + np.float32(FP16_HALF_ULP) * (np.abs(v0 + spec.zero * s) + (kz + 1) * a) \
            + np.float32(FP16_HALF_SUBNORMAL) * (kz + 2)
    below_ext, above_ext = (bottom, top) if one_step else (np.zeros_like(top), top)
    ext_below = float(spec.levels - 1) if one_step else 0.0
    ext_above = float(spec.levels - 1) if one_step else spec.top_extra
    lo_code = r + np.float32(ext_below) * below_ext  # in steps, towards the lower codes
    hi_code = r + np.float32(ext_above) * above_ext
    below = np.where(up, lo_code, hi_code) * a + slack
    above = np.where(up, hi_code, lo_code) * a + slack
    if one_step:  # a sub-block of step 0 says nothing about its weights
        below, above = np.where(known, below, np.inf), np.where(known, above, np.inf)
        return below, above, np.broadcast_to(a, v.shape), np.where(up, bottom, top), np.where(up, top, bottom)
    # an fp16 scale that rounded to 0: the weights were within the code range of half a subnormal spacing
    zero = np.float32(FP16_HALF_ULP) * np.abs(v) + np.float32(FP16_HALF_SUBNORMAL * (spec.levels + 2))
    return np.where(known, below, zero), np.where(known, above, zero), np.broadcast_to(a, v.shape), None, None


def _rounding(values, below, above, step, ob, oa, qtype, imatrix, source, shape) -> Rounding:
    f = (lambda x: None if x is None else np.asarray(x).reshape(shape))
    return Rounding(np.asarray(values, dtype=np.float32).reshape(shape), np.asarray(below, np.float32).reshape(shape),
                    np.asarray(above, np.float32).reshape(shape), np.asarray(step, np.float32).reshape(shape), qtype,
                    imatrix, f(ob), f(oa), source)


def stored_rounding(data: np.ndarray, qtype: str, shape: tuple, imatrix: bool = False) -> Rounding:
    """The :class:`Rounding` of a GGUF tensor from its stored bytes: ``data`` as ``GGUFReader`` holds it (raw
    blocks, uint8, for a block type; the values for F32 / F16 / BF16), ``qtype`` its type name, ``shape`` (rows,
    columns) as loaded; ``imatrix``: an importance matrix chose the codes (one step for the legacy types too)."""
    if qtype in FLOAT_TYPES:
        v = np.asarray(data, dtype=np.float32).reshape(shape)
        rel = FLOAT_TYPES[qtype]
        d = rel * np.abs(v.astype(np.float64)) + (FP16_HALF_SUBNORMAL if qtype == "F16" else 0.0)
        return _rounding(v, d, d, np.zeros_like(v), None, None, qtype, False, "stored type", shape)
    spec = TYPES.get(qtype)
    if spec is None:
        raise ValueError(f"qtype: no rounding rule for {qtype!r} (known: {', '.join([*TYPES, *FLOAT_TYPES])})")
    qt = GGMLQuantizationType[qtype]
    block, nbytes = GGML_QUANT_SIZES[qt]
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1, nbytes)
    low, nxt = raw.copy(), raw.copy()
    for a, b, fill_low, fill_next in spec.codes:  # every code the lowest one, then the next one
        low[:, a:b], nxt[:, a:b] = fill_low, fill_next
    v = dequantize(raw, qt).reshape(-1, spec.sub)
    v0 = dequantize(low, qt).reshape(-1, spec.sub)[:, :1]  # one value per (sub-)block
    s = dequantize(nxt, qt).reshape(-1, spec.sub)[:, :1] - v0
    one = spec.kquant or (imatrix and qtype != "Q8_0")  # llama.cpp's Q8_0 ignores an importance matrix
    b, a, st, ob, oa = _per_weight(v, v0, s, spec, one, round_fp16=not one)
    return _rounding(v, b, a, st, ob, oa, qtype, imatrix, "stored scales", shape)


def readback_rounding(w: np.ndarray, qtype: str = "Q4_1") -> Optional[Rounding]:
    """The :class:`Rounding` of a matrix rounded to a round-to-nearest type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) by the
    reference rounding (``gguf.quants``, a simulated copy), read back from its dequantized blocks of 32 along each
    row: the reference puts each block's minimum on code 0 (Q4_1, Q5_1) or its largest magnitude on code 0 (Q4_0,
    Q5_0) or on ±127 (Q8_0), so the step read back is the stored one. None when a block does not lie on that grid
    (not rounded so)."""
    spec = TYPES.get(qtype)
    if spec is None or spec.kquant:
        raise ValueError(f"qtype: read back only for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, got {qtype!r}")
    a = np.asarray(w, dtype=np.float64)
    if a.ndim != 2 or a.shape[-1] % spec.sub:
        raise ValueError(f"w: expected a 2-D matrix whose rows divide into blocks of {spec.sub} ({qtype}), got shape "
                         f"{a.shape}")
    b = a.reshape(-1, spec.sub)
    if spec.zero == 0:  # a minimum: code 0 at the block's minimum, the top code at its maximum
        v0 = b.min(1, keepdims=True)
        s = (b.max(1, keepdims=True) - v0) / (spec.levels - 1)
    elif qtype == "Q8_0":
        s = np.abs(b).max(1, keepdims=True) / 127
        v0 = -128 * s
    else:  # the largest magnitude sits on code 0, worth -zero·d
        vm = np.take_along_axis(b, np.abs(b).argmax(1)[:, None], 1)
        s = -vm / spec.zero
        v0 = vm
    k = np.where(s != 0, np.rint((b - v0) / np.where(s != 0, s, 1.0)), 0.0)
    off = np.abs(v0 + k * s - b) > 4 * FP32_SLACK * (np.abs(v0) + spec.levels * np.abs(s)) + 1e-30
    if off.any() or (k < 0).any() or (k > spec.levels - 1).any():
        return None
    below, above, st, _, _ = _per_weight(b, v0, s, spec, one_step=False, round_fp16=True)
    return _rounding(b, below, above, st, None, None, qtype, False, "read back from the dequantized blocks", a.shape)


def ct2_rounding(w: np.ndarray, kind: str) -> Optional[Rounding]:
    """The :class:`Rounding` of a matrix CTranslate2 stored as ``int8`` (one scale per output row: ``127 / max
    |row|``, the row's largest weight on ±127, so the step is read back exactly; the rows are tried, then the
    columns, for a matrix the rebuild transposed) or ``int16`` (one scale per tensor; the smallest gap between
    distinct values is a whole number of steps, never less than one: an upper bound, whatever the tensor was split
    from). Round to nearest: half a step. None when the values lie on no such grid."""
    a = np.asarray(w, dtype=np.float64)
    if a.ndim != 2 or kind not in ("int8", "int16"):
        raise ValueError(f"w, kind: expected a 2-D matrix and 'int8' or 'int16', got shape {a.shape}, {kind!r}")
    if kind == "int16":
        u = np.unique(a)
        if len(u) < 2:
            return None
        step = np.full(a.shape, float(np.diff(u).min()))
    else:
        step = None
        for m in (a, a.T):
            s = np.abs(m).max(1, keepdims=True) / 127
            q = m / np.where(s > 0, s, 1.0)
            if (np.abs(q - np.rint(q)) <= 1e-3).all():
                step = np.broadcast_to(s, m.shape)
                step = step if m is a else step.T
                break
        if step is None:
            return None
    d = 0.5 * step + FP32_SLACK * (np.abs(a) + step)
    return _rounding(a, d, d, step, None, None, kind, False, "read back from the dequantized rows", a.shape)


# ------------------------------------------------------------------ a loaded model's matrices
@dataclass
class _GGUFFile:
    tensors: dict
    imatrix: bool
    names: object  # gguf.TensorNameMap of the file's architecture


@functools.lru_cache(maxsize=2)
def _gguf_file(path: str, size: int, mtime: float) -> _GGUFFile:
    """The tensors (memory-mapped), importance-matrix flag and tensor-name map of a GGUF file (kept for the last
    two files; the size and mtime are part of the key, so a file changed in place is read afresh)."""
    reader = GGUFReader(path)
    fields = reader.fields
    arch = fields["general.architecture"].contents() if "general.architecture" in fields else None
    by_name = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
    blocks = fields.get(f"{arch}.block_count")
    names = gguf.get_tensor_name_map(by_name[arch], int(blocks.contents())) if arch in by_name and blocks else None
    return _GGUFFile({t.name: t for t in reader.tensors}, any(k in fields for k in IMATRIX_KEYS), names)


def _gguf_path(lm) -> Optional[Path]:
    name = (getattr(lm, "quantization", None) or {}).get("gguf_file")
    return next((Path(f) for f in getattr(lm, "source_files", ()) or () if name and Path(f).name == name), None)


def _row_order(loaded: np.ndarray, stored: np.ndarray) -> Optional[np.ndarray]:
    """Rows ``idx`` with ``stored[idx] == loaded`` exactly (identity first; then rows matched by a hash of their
    values), or None when the matrices differ in more than the order of their rows."""
    if loaded.shape != stored.shape:
        return None
    if np.array_equal(loaded, stored):
        return np.arange(loaded.shape[0])
    r = np.random.default_rng(0).standard_normal(loaded.shape[1])
    hl, hs = loaded.astype(np.float64) @ r, stored.astype(np.float64) @ r
    idx = np.empty(loaded.shape[0], dtype=np.int64)
    idx[np.argsort(hl, kind="stable")] = np.argsort(hs, kind="stable")
    return idx if np.array_equal(loaded, stored[idx]) else None


def _gguf_rounding(lm, store, name: str) -> Optional[Rounding]:
    path = _gguf_path(lm)
    if path is None or not path.is_file():
        return None
    st = path.stat()
    f = _gguf_file(str(path), st.st_size, st.st_mtime)
    gname = f.names.get_name(name, try_suffixes=(".weight", ".bias")) if f.names is not None else None
    t = f.tensors.get(gname)
    if t is None:
        return None
    qtype = t.tensor_type.name
    if qtype not in TYPES and qtype not in FLOAT_TYPES:
        return None
    loaded = store.get(name).numpy()
    if loaded.ndim != 2:
        return None
    r = stored_rounding(np.asarray(t.data), qtype, loaded.shape, f.imatrix)
    idx = _row_order(loaded, r.values)
    if idx is None:
        return None
    pick = (lambda a: None if a is None else a[idx])
    return Rounding(r.values[idx], r.below[idx], r.above[idx], r.step[idx], qtype, f.imatrix, pick(r.open_below),
                    pick(r.open_above), r.source)


def quantized(lm) -> bool:
    """Whether ``lm``'s weights were read from rounded values this module bounds (a GGUF file, a simulated copy, a
    CTranslate2 int8 / int16 file)."""
    q = getattr(lm, "quantization", None) or {}
    conv = getattr(lm, "conversion", None) or {}
    stored = conv.get("stored") if isinstance(conv.get("stored"), dict) else {}
    return bool(q) or any(str(v) in ("int8", "int16") for v in stored.values())


def rounding_of(lm, store, entry) -> Optional[Rounding]:
    """The :class:`Rounding` of a catalog ``entry``'s matrix (its rows, for a view) in ``lm``, as stored: from the
    GGUF file's blocks, read back from a simulated copy or a CTranslate2 int8 / int16 matrix; exact (zero width)
    for a matrix the simulated copy or the conversion left in float32. None when nothing is known (a type with no
    rule, a matrix that does not match its GGUF tensor, a model that was not quantized)."""
    q = getattr(lm, "quantization", None) or {}
    conv = getattr(lm, "conversion", None) or {}
    name = entry.name
    if q.get("simulated"):
        w = store.get(name).numpy()
        spec = TYPES.get(str(q.get("scheme", "")).upper())
        if w.ndim != 2 or spec is None:
            return None
        if w.shape[-1] % spec.sub:  # left in float32 by the simulated rounding (quantize.quantizable)
            return stored_rounding(w, "F32", w.shape).rows(entry.row_slice)
        r = readback_rounding(w, spec.name)
    elif q:
        r = _gguf_rounding(lm, store, name)
    else:
        kind = str(((conv.get("stored") or {}) if isinstance(conv.get("stored"), dict) else {}).get(name, ""))
        if kind not in ("int8", "int16", "float32", "float16", "bfloat16"):
            return None
        w = store.get(name).numpy()
        if w.ndim != 2:
            return None
        floats = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
        r = ct2_rounding(w, kind) if kind in ("int8", "int16") else stored_rounding(w, floats[kind], w.shape)
    return None if r is None else r.rows(entry.row_slice)


# ------------------------------------------------------------------ summaries
def threshold_counts(r: Rounding, t: float, ends_unbounded: bool = False) -> dict:
    """How many weights of ``r`` lie below ``t`` in magnitude: ``{"below"`` (the dequantized values), ``"certain"``
    (originals surely below: the whole interval inside (-t, t)), ``"possible"`` (originals that may be below),
    ``"n"}``. The unquantized fraction lies in [certain / n, possible / n]. ``ends_unbounded``: an end code's outer
    side open (a clamped weight anywhere beyond it) instead of the assumed one range."""
    if not t > 0:
        raise ValueError(f"t: expected a positive threshold, got {t!r}")
    v = r.values.astype(np.float64).ravel()
    lo, hi = v - r.below.ravel(), v + r.above.ravel()
    if ends_unbounded and r.open_below is not None:
        lo = np.where(r.open_below.ravel(), -np.inf, lo)
        hi = np.where(r.open_above.ravel(), np.inf, hi)
    possible = (lo < t) & (hi > -t)
    certain = possible & (lo > -t) & (hi < t)
    return {"below": int((np.abs(v) < t).sum()), "certain": int(certain.sum()), "possible": int(possible.sum()),
            "n": int(v.size)}


def turn(r: Rounding) -> dict:
    """How far the direction of ``r``'s flattened matrix can have turned: ``{"theta"`` (radians, the worst case:
    the originals lie in a ball of radius ‖e‖ around the values, e the larger of each weight's two sides, so the
    angle is at most arcsin(‖e‖ / ‖v‖), or π when the ball holds 0), ``"tau"`` (the typical turn: each weight's
    rounding error independent and uniform within half its step, projected on a direction that does not single out
    any weight: ‖step‖ / sqrt(12) / (‖v‖ sqrt(n))), ``"norm"``, ``"n"}``."""
    v = r.values.astype(np.float64).ravel()
    vn = float(np.sqrt(np.dot(v, v)))
    e = np.maximum(r.below, r.above).astype(np.float64).ravel()
    en = float(np.sqrt(np.dot(e, e))) if np.isfinite(e).all() else math.inf
    theta = math.asin(en / vn) if 0 < vn and en < vn else math.pi
    st = r.step.astype(np.float64).ravel()
    tau = float(np.sqrt(np.dot(st, st)) / math.sqrt(12) / (vn * math.sqrt(v.size))) if vn > 0 else math.inf
    return {"theta": theta, "tau": tau, "norm": vn, "n": int(v.size)}


__all__ = ["BlockType", "FLOAT_TYPES", "Rounding", "TYPES", "assumption", "ct2_rounding", "quantized",
           "readback_rounding", "rounding_of", "rule_text", "stored_rounding", "threshold_counts", "turn"]
