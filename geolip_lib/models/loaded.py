""":class:`LoadedModel`: a loaded model and the accessors the notebooks use; every family
difference is read from its spec (``geolip_lib.families``)."""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..families import FamilySpec, spec
from ..paths import cache_root
from ..params import ModelParams
from ..checkpoints.store import TensorStore
from . import twin
from .common import (DTYPES, ModelLoadError, checkpoint_state, has_safetensors, quiet_transformers, release_file_pages,
                     safetensors_problems, saver, source_key, untie_output, weights_hash)
from .preflight import _unplaced  # one judgement of "a layer the model lacks", before the kernel and at the load
from .tokenizers import _atomic_dir


class HiddenStates(NamedTuple):
    """Per-layer hidden states: ``layers[0]`` is the embedding output, then one per block.

    ``layers``: list of ``(B, S, D)`` float32 CPU tensors; ``mask``: ``(B, S)`` long, 1 on
    real tokens (all ones for images).
    """

    layers: list
    mask: torch.Tensor


@dataclass
class LoadedModel:
    """A loaded model and everything the notebooks need from it (see geolip_lib/README.md).

    Attributes
    ----------
    name, family : str
    params : ModelParams
    model : torch.nn.Module
        Hugging Face model or open_clip model, in eval mode.
    tokenizer : transformers tokenizer or None
        ``None`` for vision-only models (DINOv2).
    config : transformers config or dict (open_clip: ``{"model_cfg": ...}``)
    """

    name: str
    family: str
    params: ModelParams
    model: torch.nn.Module
    tokenizer: Any
    config: Any
    _weights_dir: Optional[Path] = None
    _save_weights: Optional[Callable[[Path], None]] = field(default=None, repr=False)
    _weights_key: str = ""
    #: the weight files the model was read from (a GGUF file, ``pytorch_model.bin``, safetensors),
    #: recorded by the provenance even when the weight battery reads a copy (:attr:`weights_dir`)
    source_files: tuple = ()
    #: a GGUF model's stored types: ``{"gguf_file", "sha256", "bytes", "types": {tensor: type}}``; None otherwise
    quantization: Optional[dict] = None
    #: an ONNX / CTranslate2 model's conversion record (:func:`geolip_lib.models.converted.source_info`); None otherwise
    conversion: Optional[dict] = None

    # ------------------------------------------------------------------ basics
    @property
    def spec(self) -> FamilySpec:
        """The family's spec (:mod:`geolip_lib.families`)."""
        return spec(self.family)

    @property
    def is_text(self) -> bool:
        """True for models with a tokenizer and token embeddings (open_clip: its text tower)."""
        return self.spec.is_text

    @property
    def is_generative(self) -> bool:
        """True for models that generate text (T5, decoder LMs)."""
        return self.spec.is_generative

    @property
    def stacks(self) -> tuple:
        """Stacks accepted by :meth:`hidden_states`, default first."""
        return self.spec.stacks

    @property
    def probe_stacks(self) -> tuple:
        """The stacks that read the probes' texts or images: :attr:`stacks` without the family's audio stacks
        (Whisper's encoder reads log-mel features; its weights and attention are measured all the same)."""
        return tuple(st for st in self.spec.stacks if st not in self.spec.audio_stacks)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The load dtype of ``params.dtype`` (not the first parameter's: open_clip in float16 /
        bfloat16 keeps embeddings and norms in float32, while its conv and linear weights, which
        the inputs meet, are in half precision)."""
        return DTYPES[self.params.dtype]

    @property
    def image_size(self) -> Optional[int]:
        """Input resolution of the vision stack (None for text-only models)."""
        fn = self.spec.image_size
        return None if fn is None else fn(self.model, self.config)

    @property
    def weights_dir(self) -> Path:
        """Directory holding this model's ``*.safetensors`` (written to ``.cache/`` on first use if needed)."""
        if not has_safetensors(self._weights_dir):
            key = source_key(self._weights_key or weights_hash(self.params.model_dump()), self.source_files)
            target = cache_root() / "safetensors" / f"{self.name}-{key}"  # keyed by the source files' sha256 too
            if self._save_weights is None:
                raise ModelLoadError(f"model '{self.name}': no safetensors directory and no way to write one")
            bad = safetensors_problems(target) if target.is_dir() else []
            if bad:
                print(f"rebuilding the corrupt cache entry {target} ({bad[0][0].name}: {bad[0][1]})", file=sys.stderr)
                shutil.rmtree(target, ignore_errors=True)
            self._weights_dir = _atomic_dir(target, self._save_weights)
        return self._weights_dir

    # ------------------------------------------------------------------ embeddings
    def input_embeddings(self, *, view: bool = False) -> torch.Tensor:
        """Input embedding table, ``(V, D)`` float32 CPU copy.

        Text models: the token embedding (open_clip: the text tower's). DINOv2: the learned
        position embeddings ``(1 + n_patches, D)`` (CLS position first), the only table a ViT has.
        ``view=True``: the model's own tensor where it is already float32 on the CPU (the same
        values, no second table: a reader that never writes to it), else the copy.
        """
        return self.spec.input_embeddings(self.model).detach().to("cpu", torch.float32, copy=not view)

    def output_embeddings(self) -> Optional[torch.Tensor]:
        """Output (unembedding) matrix ``(V, D)`` float32 CPU, or ``None`` when tied to the input or absent."""
        return self.spec.output_embeddings(self.model)

    # ------------------------------------------------------------------ hidden states
    def tokenize(self, texts: Sequence[str], *, max_length: int = 64) -> dict:
        """Tokenize a batch (padded to the longest, truncated at ``max_length``) -> ``input_ids``, ``attention_mask``."""
        if self.tokenizer is None:
            raise ValueError(f"texts: model '{self.name}' ({self.family}) has no tokenizer; pass images")
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts) or len(texts) == 0:
            raise ValueError("texts: expected a non-empty list of strings")
        ctx = self.spec.context_length
        if ctx is not None:  # the text tower needs exactly context_length positions (open_clip)
            enc = self.tokenizer(list(texts), padding="max_length", max_length=ctx(self.model), truncation=True,
                                 return_tensors="pt")
        else:
            enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length,
                                 return_tensors="pt")
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def preprocess(self, images) -> torch.Tensor:
        """Images -> ``(B, 3, H, W)`` float tensor at :attr:`image_size`, normalised for this model.

        Accepts a float tensor ``(B, 3, H, W)`` in [0, 1] (resized if needed), a uint8 tensor
        or array ``(B, H, W, 3)``, or a list of PIL images.
        """
        size = self.image_size
        if size is None:
            raise ValueError(f"images: model '{self.name}' has no vision stack")
        if isinstance(images, (list, tuple)):
            images = torch.stack([torch.from_numpy(np.array(im.convert("RGB"))) for im in images])
        x = torch.as_tensor(images)
        if x.dtype == torch.uint8:
            x = x.permute(0, 3, 1, 2).float() / 255.0
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f"images: expected (B, 3, H, W) floats or (B, H, W, 3) uint8, got shape {tuple(x.shape)}")
        if tuple(x.shape[-2:]) != (size, size):
            x = F.interpolate(x.float(), size=(size, size), mode="bicubic", align_corners=False).clamp(0, 1)
        mean, std = self.spec.image_stats(self.model)
        mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
        std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
        return (x.float() - mean_t) / std_t

    @torch.no_grad()
    def hidden_states(self, inputs, stack: Optional[str] = None, *, max_length: int = 64,
                      batch_size: int = 32, decoder_texts: Optional[Sequence[str]] = None) -> HiddenStates:
        """Per-layer hidden states for a batch of texts (or images for vision stacks).

        Parameters
        ----------
        inputs : list of str, or images
            Texts for text stacks; for ``vision`` a normalised ``(B, 3, H, W)`` tensor (see
            :meth:`preprocess`, which is applied when a uint8 batch or PIL list is given).
        stack : str, optional
            One of :attr:`stacks` (default: the first; open_clip picks ``vision`` for image input).
            T5 ``decoder``: the decoder reads ``decoder_texts`` (default: the same texts),
            shifted right as in teacher forcing, with the encoder output of ``inputs``.
        max_length : int
            Truncation length for texts.
        batch_size : int
            Rows per forward pass.

        Returns
        -------
        HiddenStates
            ``layers``: list of ``n_layers + 1`` tensors ``(B, S, D)`` float32 CPU (embedding
            output first; Hugging Face's convention, so T5's last entry is after the final
            norm); ``mask``: ``(B, S)``.
        """
        is_img = isinstance(inputs, torch.Tensor) or (
            isinstance(inputs, (list, tuple)) and len(inputs) > 0 and not isinstance(inputs[0], str))
        if stack is None:
            stack = "vision" if (is_img and "vision" in self.stacks) else self.stacks[0]
        if stack not in self.stacks:
            raise ValueError(f"stack: model '{self.name}' ({self.family}) has stacks {list(self.stacks)}, got {stack!r}")
        if stack == "vision":
            if not is_img:
                raise ValueError(f"inputs: stack 'vision' of model '{self.name}' takes images "
                                 "((B, 3, H, W) floats, (B, H, W, 3) uint8 or PIL images), not texts")
            x = inputs if (isinstance(inputs, torch.Tensor) and inputs.is_floating_point()) else self.preprocess(inputs)
            if x.ndim != 4:
                raise ValueError(f"inputs: expected images (B, 3, H, W), got shape {tuple(x.shape)}")
            chunks = [self._vision_batch(x[i:i + batch_size]) for i in range(0, x.shape[0], batch_size)]
            layers = [torch.cat([c[j] for c in chunks]) for j in range(len(chunks[0]))]
            return HiddenStates(layers, torch.ones(layers[0].shape[:2], dtype=torch.long))
        enc = self.tokenize(inputs, max_length=max_length)
        ids, mask = enc["input_ids"], enc["attention_mask"]
        dec = None
        if self.spec.teacher_forced_decoder and stack == "decoder":
            d = self.tokenize(decoder_texts if decoder_texts is not None else inputs, max_length=max_length)
            if len(d["input_ids"]) != len(ids):
                raise ValueError("decoder_texts: expected as many texts as inputs")
            start = int(self.config.decoder_start_token_id or 0)
            dec_ids = torch.cat([torch.full_like(d["input_ids"][:, :1], start), d["input_ids"][:, :-1]], 1)
            dec_mask = torch.cat([torch.ones_like(d["attention_mask"][:, :1]), d["attention_mask"][:, :-1]], 1)
            dec = (dec_ids, dec_mask)
        chunks = []
        for i in range(0, ids.shape[0], batch_size):
            sl = slice(i, i + batch_size)
            chunks.append(self._text_batch(stack, ids[sl], mask[sl], None if dec is None else (dec[0][sl], dec[1][sl])))
        layers = [torch.cat([c[j] for c in chunks]) for j in range(len(chunks[0]))]
        return HiddenStates(layers, (dec[1] if dec is not None else mask).clone())

    def release_file_pages(self) -> int:
        """Hand back the pages of a memory-mapped checkpoint that the forwards so far read (clean file pages: the
        values stay, a later forward maps them again from the page cache); bytes released, 0 for a model held in
        memory. A notebook calls it once its forwards are done: Qwen2.5-Coder-1.5B's hidden states left its whole
        7.1 GB float32 file resident for the rest of notebook 01, under every later cell's own working set."""
        return release_file_pages(list(self.model.parameters()) + list(self.model.buffers()))

    def _text_batch(self, stack, ids, mask, dec) -> list:
        dev = self.device
        return self.spec.text_hidden(self.model, stack, ids.to(dev), mask.to(dev), dec)

    def _vision_batch(self, x) -> list:
        return self.spec.vision_hidden(self.model, x.to(self.device, self.dtype))

    # ------------------------------------------------------------------ null baseline
    def random_init(self, seed: Optional[int] = None) -> "LoadedModel":
        """The same architecture at random initialisation (the null baseline), seeded.

        ``seed`` defaults to ``params.seed + 1`` so that a tiny model (itself random with
        ``params.seed``) and its baseline differ. The tokenizer is shared.
        """
        s = self.params.seed + 1 if seed is None else int(seed)
        dev, dt = self.device, self.dtype
        torch.manual_seed(s)
        if not self.spec.hf:
            import open_clip  # heavy optional dependency
            with torch.device(dev):
                model = open_clip.CLIP(**self.config["model_cfg"])
        else:
            with torch.device(dev), quiet_transformers():  # built directly in the target dtype / device
                model = type(self.model)._from_config(self.config, dtype=dt)
            if self.output_embeddings() is not None:
                untie_output(model)
        model = model.to(dt).eval()
        params = self.params.model_copy(update={"seed": s})
        name = f"{self.name}@random{s}"
        return LoadedModel(name=name, family=self.family, params=params, model=model, tokenizer=self.tokenizer,
                           config=self.config, _weights_dir=None, _save_weights=saver(model, self.family),
                           _weights_key=weights_hash([self.params.model_dump(), s]))

    def random_init_weights(self, seed: Optional[int] = None, *, max_params: Optional[int] = None):
        """The random-init twin's weights as a read-only tensor store (what the weight battery and
        ``operators.measure_model`` read), never written to disk.

        At or below ``max_params`` parameters (default :data:`geolip_lib.models.twin.TWIN_MAX_PARAMS`,
        1e9): the in-memory twin of :meth:`random_init` (``TensorStore`` over its state dict).
        Above: a :class:`geolip_lib.models.twin.RandomInitStore`, which generates each tensor on
        demand with the model's own initialisation (seeded per tensor name) and never holds the
        model whole. Same seed default as :meth:`random_init`. The parameter count is the
        loaded model's (the twin has the same architecture).
        """
        s = self.params.seed + 1 if seed is None else int(seed)
        limit = twin.TWIN_MAX_PARAMS if max_params is None else int(max_params)
        n = sum(p.numel() for p in self.model.parameters())
        if n <= limit:  # named and laid out as the checkpoint files (MoE experts one by one, canonical layout)
            m = self.random_init(s).model
            return TensorStore(checkpoint_state(m, self.family) if self.spec.hf else m.state_dict())
        if not self.spec.hf:
            return twin.RandomInitStore(self.config, self.family, s, dtype=self.dtype, device=self.device)
        out, inp = self.model.get_output_embeddings(), self.model.get_input_embeddings()
        untied = out is not None and getattr(out, "weight", None) is not None and \
            out.weight.data_ptr() != inp.weight.data_ptr()
        return twin.RandomInitStore(self.config, self.family, s, dtype=self.dtype, untie_output=untied,
                                    model_cls=type(self.model), device=self.device)  # drawn where the model is


def loading_problem(model_name: str, directory: Path, model: torch.nn.Module, info: dict,
                    over: str = "") -> Optional[str]:
    """Why ``model``, just built by ``from_pretrained`` from ``directory`` with ``output_loading_info=True`` and
    ``ignore_mismatched_sizes=True`` (its loading ``info``), is not the model the weights hold (None: it is): a
    stored tensor with another shape, a stored tensor of a layer the model lacks (transformers' unexpected key), a
    layer of the model the weights lack (a missing key; made up at random). The same judgement as the runner's
    pre-kernel check (:func:`.preflight.check_stored`), made on what was loaded: a ``config.json`` rewritten between
    that check and this load is refused, not measured. ``over``: said after the config file when the params
    file's ``config:`` replaced some of its keys. A head the model lacks (BERT's ``cls.*``) or a part the weights
    never held (a pooler) is no layer: those load as transformers says."""
    cfg = f"{Path(directory) / 'config.json'}{over}"
    keys = {k: tuple(v.shape) for k, v in model.state_dict().items()}  # what _unplaced matches names against
    prefix = getattr(model, "base_model_prefix", "") or ""
    missing = set(info.get("missing_keys") or ())
    loaded = {k: v for k, v in keys.items() if k not in missing}
    checks = [
        (sorted(info.get("mismatched_keys") or ()),
         lambda m: f"tensor {m[0]} in {directory} has shape {list(m[1])}, but {cfg} makes it {list(m[2])}",
         "the config and the weights disagree"),
        ([k for k in sorted(info.get("unexpected_keys") or ()) if _unplaced(k, keys, prefix)],
         lambda k: f"tensor {k} in {directory} has no place in the model {cfg} makes",
         "the weights hold more layers than the config asks for, and those would be ignored while the provenance "
         "names the files"),
        ([k for k in sorted(missing) if _unplaced(k, loaded, prefix)],
         lambda k: f"the model {cfg} makes has {k}, which the weights in {directory} do not hold",
         "the config asks for more layers than the weights hold, and those would be measured at their random start")]
    for found, first, why in checks:
        if found:
            more = f" (and {len(found) - 1} more tensor(s))" if len(found) > 1 else ""
            return (f"model '{model_name}': {first(found[0])}{more}: {why}; use the config the weights were saved "
                    "with (was the config file changed after the run's check?)")
    return None
