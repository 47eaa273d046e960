"""Every model_type of the family registry on a tiny random model built from its transformers config: the library calls notebooks 01 and 06 make (load, embeddings, hidden states of every
stack, catalog, random-init twin, QK operators), and the attention reconstruction that proves
each adapter against the model itself (§2).

The reconstruction runs the model once in float32 with eager attention and
``output_attentions=True``, captures each attention module's input with a forward hook,
recomputes every head's attention weights from the catalog's W_Q, W_K (biases, scale, head
layout, GQA, fused splits, canonical layout, q/k-norm gains folded) and compares them with the
module's own to 1e-5. What a bilinear form cannot hold is added back explicitly from the
module's own code and named in each record (``added``), and the family's ``qk_statement`` must
say it is left out: RoPE (the model's ``apply_rotary_pos_emb`` on the captured
``position_embeddings``; GPT-J's ``embed_positions``), ALiBi (the captured ``alibi``), T5's
relative bias (the ``position_bias`` the module returns; UMT5's ``compute_bias``; MPNet's encoder's
``compute_position_bias``), DeBERTa's
relative c2p/p2c terms (the module's ``disentangled_attention_bias`` on our q and k), the
per-token ``1/rms`` of a q/k norm, Gemma 2's logit soft-capping, and the causal mask.

The notebooks themselves (01, 02, 06 through papermill) run on every model_type in
``test_families_notebooks.py`` (marker ``families``: ``make test-families``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest
import torch

from geolip_lib import families, models, operators, probes
from geolip_lib.checkpoints import UnclassifiedWeightsWarning
from geolip_lib.families import catalog
from geolip_lib.families import deberta_v2 as deberta_adapter
from geolip_lib.weights import TensorStore

pytestmark = pytest.mark.integration

#: (family, model_type, tiny config) of every model_type of the registry (open_clip: its one config)
CASES = [(fam, mt, cfg) for fam, s in families.REGISTRY.items() for mt, cfg in s.tiny_configs().items()]
IDS = [f"{fam}-{mt}" for fam, mt, _ in CASES]
#: every model_type's catalog, digested (the name rules moved into the family files with every
#: catalog unchanged): rewrite with ``.venv/bin/python tests/integration/test_families.py --write-catalog-digests``
#: after a deliberate change to a family's rules, and say why in the commit
DIGESTS = Path(__file__).with_name("catalog_digests.json")
_LOADED: dict = {}


def tiny(fam: str, mt: str, cfg: dict):
    """The tiny model of that (family, model_type), loaded once per session."""
    key = (fam, mt)
    if key not in _LOADED:
        s = families.spec(fam)
        p = {"name": f"tiny-{fam}-{mt}".replace("_", "-"), "family": fam, "source": "tiny", "seed": 0,
             "config": cfg if s.hf else {}}
        _LOADED.clear()  # one model at a time: the session's memory stays that of one tiny model
        _LOADED[key] = models.load(p)
    return _LOADED[key]


def catalog_digest(cat) -> dict:
    """A catalog's entries (every field) and attention blocks as a sha256, with counts to read a difference by."""
    blocks = [(b.stack, b.attn, b.layer, b.n_heads, b.head_dim, b.n_kv_heads, b.d_model, round(b.scale, 9),
               sorted(b.biases), sorted(b.qk_norm), b.qk_norm_offset) for b in cat.attention_blocks()]
    body = {"family": cat.family, "d_model": cat.d_model, "qk_norm_offset": cat.qk_norm_offset,
            "entries": [dataclasses.astuple(e) for e in cat.entries], "blocks": blocks}
    return {"sha256": hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest(),
            "entries": len(cat.entries), "attention_blocks": len(blocks),
            "roles": dict(sorted(Counter(e.role for e in cat.entries).items()))}


def model_inputs(lm, seed: int = 0) -> dict:
    """A random input for every stack: token ids without padding (batch 2, 7 tokens), images."""
    g = torch.Generator().manual_seed(seed)
    out: dict = {}
    s = lm.spec
    if s.is_text:
        V = lm.input_embeddings().shape[0]
        n = s.context_length(lm.model) if s.context_length is not None else 7  # open_clip: exactly its context
        out["input_ids"] = torch.randint(5, min(V, 1000), (2, n), generator=g)
        out["attention_mask"] = torch.ones_like(out["input_ids"])
        if s.teacher_forced_decoder:
            out["decoder_input_ids"] = torch.randint(5, min(V, 1000), (2, 5), generator=g)
    if s.audio_stacks:  # Whisper: the encoder reads log-mel features (the family's chirp), the decoder token ids
        from geolip_lib.families.whisper import synthetic_log_mel
        c = lm.config
        feats = torch.from_numpy(synthetic_log_mel(c.num_mel_bins, 2 * c.max_source_positions))
        out = {"input_features": feats[None].expand(2, -1, -1).contiguous(),
               "decoder_input_ids": out["decoder_input_ids"]}
    if s.vision_hidden is not None:
        n = lm.image_size
        out["pixel_values"] = torch.randn(2, 3, n, n, generator=g)
    return out


def _module_path(name: str) -> str:
    if name.endswith("in_proj_weight"):  # torch MultiheadAttention (open_clip)
        return name.rsplit(".", 1)[0]
    return name.rsplit(".", 2)[0]


def _param_named_like(model, W: torch.Tensor) -> str:
    """The name of the model's parameter equal to ``W`` (the module a stored tensor became on load)."""
    for name, p in model.named_parameters():
        if tuple(p.shape) == tuple(W.shape) and torch.equal(p.detach().float(), W):
            return name
    raise AssertionError(f"no parameter of the model equals a stored tensor of shape {tuple(W.shape)}")


def _out_weights(out, n_heads: int) -> Optional[torch.Tensor]:
    ts = [t for t in (out if isinstance(out, tuple) else (out,)) if torch.is_tensor(t) and t.dim() == 4
          and t.shape[1] == n_heads]
    return ts[-1] if ts else None


def _rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _causal(lm, blk) -> bool:
    if blk.attn != "self":
        return False
    if blk.stack == "decoder":
        return True
    return lm.family == "clip" and blk.stack == "text" and lm.config.model_type == "clip"


def reconstruct(lm, *, layer_limit: int = 2) -> list:
    """One record per checked attention call: block, max |Δ| of the weights, what was added back.

    Raises AssertionError when a block's module cannot be found or returns no weights.
    """
    model = lm.model.float().eval()
    if lm.spec.hf:
        model.set_attn_implementation("eager")
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family=lm.family)
    blocks = [b for b in cat.attention_blocks() if b.q is not None and b.k is not None]
    blocks = [b for b in blocks if b.layer is None or b.layer < layer_limit]
    calls: dict = {}
    handles = []
    for b in blocks:
        path = _module_path(b.q.parent or b.q.name)
        try:
            mod = model.get_submodule(path)
        except AttributeError:  # file names differ from module names (transformers renames on load): find by data
            path = _module_path(_param_named_like(model, store.get(b.q.parent or b.q.name)))
            mod = model.get_submodule(path)
        rec = calls.setdefault(path, {"mod": mod, "calls": [], "blocks": []})
        rec["blocks"].append(b)
        if len(rec["blocks"]) == 1:
            def hook(m, args, kwargs, out, rec=rec):
                rec["calls"].append((args, dict(kwargs), out))
            if isinstance(mod, torch.nn.MultiheadAttention):
                def pre(m, args, kwargs, rec=rec):
                    rec["calls"].append((args, dict(kwargs), None))
                handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
            else:
                handles.append(mod.register_forward_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            inputs = model_inputs(lm)
            if lm.spec.hf:
                model(**inputs, output_attentions=True)
            else:
                if "input_ids" in inputs:
                    model.encode_text(inputs["input_ids"])
                model.encode_image(inputs["pixel_values"])
    finally:
        for h in handles:
            h.remove()
    records = []
    for path, rec in calls.items():
        assert rec["calls"], f"{lm.name}: attention module {path} was never called"
        b = rec["blocks"][0]
        for args, kwargs, out in rec["calls"]:
            records.append(_check(lm, cat, store, b, rec["mod"], args, kwargs, out))
    return records


def _check(lm, cat, store, b, mod, args, kwargs, out) -> dict:
    added: list = []
    if isinstance(mod, torch.nn.MultiheadAttention):  # open_clip: the module's own weights on the same input
        x = args[0] if args else kwargs["query"]
        ref = mod(x, x, x, need_weights=True, average_attn_weights=False, attn_mask=kwargs.get("attn_mask"))[1]
        if not mod.batch_first:
            x = x.transpose(0, 1)
        xk = x
        mask_add = kwargs.get("attn_mask")
        if mask_add is not None:
            added.append("causal mask (text tower)")
    else:
        x = args[0] if args else kwargs["hidden_states"]
        xk = kwargs.get("key_value_states")
        if xk is None:
            xk = kwargs.get("encoder_hidden_states")
        if xk is None:
            xk = x
        ref = _out_weights(out, b.n_heads)
        mask_add = None
    assert ref is not None, f"{lm.name}: {b.stack}/{b.attn} layer {b.layer}: the module returned no attention weights"
    Wq = b.weight(store, "q", fold_qk_norm=True)
    Wk = b.weight(store, "k", fold_qk_norm=True)
    Q = x @ Wq.T
    K = xk @ Wk.T
    for role, T in (("q", Q), ("k", K)):
        if role in b.biases:
            bias = store.get(b.biases[role])
            g = b.qk_gain(store, role) if role in b.qk_norm else None
            if g is not None:
                bias = bias * (g.repeat(bias.numel() // g.numel()))
            T += bias
    B, S, _ = Q.shape
    Sk = K.shape[1]
    q = Q.view(B, S, -1, b.head_dim)
    k = K.view(B, Sk, -1, b.head_dim)
    if b.qk_norm:  # the per-token 1/rms left out of the bilinear form (gains are folded in W_q, W_k)
        Qraw, Kraw = x @ b.weight(store, "q").T, xk @ b.weight(store, "k").T
        for role, raw, t in (("q", Qraw, q), ("k", Kraw, k)):
            nm = getattr(mod, f"{role}_norm")
            eps = getattr(nm, "variance_epsilon", None) or getattr(nm, "eps", 1e-6)
            if role in b.biases:
                raw = raw + store.get(b.biases[role])
            if b.qk_gain(store, role).numel() == raw.shape[-1]:  # OLMo 2: one norm over the whole projection
                t *= _rms(raw, eps).unsqueeze(-1)
            else:
                t *= _rms(raw.view(t.shape), eps)
        added.append("per-token 1/rms of the q/k norm (gains folded into W_q, W_k)")
    q, k = q.transpose(1, 2), k.transpose(1, 2)  # (B, H, S, hd)
    k = k.repeat_interleave(b.group, dim=1)
    q, k = _positions(lm, mod, kwargs, q, k, added)
    scores = b.scale * q @ k.transpose(-1, -2)
    scores = _bias_terms(lm, cat, mod, b, kwargs, out, q, k, scores, added)
    if mask_add is not None:
        scores = scores + mask_add
    elif lm.family == "falcon":
        # transformers' Falcon eager path adds its boolean causal mask as +1 / +0 (so its eager weights are not
        # causal; the SDPA path the loader uses is): the test applies the mask the way the module did
        scores = scores + kwargs["attention_mask"].to(scores.dtype)
        added.append("Falcon's boolean mask added as the module adds it (+1 / +0)")
    elif _causal(lm, b):
        scores = scores.masked_fill(torch.ones(S, Sk, dtype=torch.bool).triu(1), float("-inf"))
        added.append("causal mask")
    P = torch.softmax(scores, dim=-1)
    return {"block": (b.stack, b.attn, b.layer), "max_abs": float((P - ref.float()).abs().max().detach()), "added": added,
            "shape": tuple(P.shape)}


def _positions(lm, mod, kwargs, q, k, added):
    pe = kwargs.get("position_embeddings")
    if pe is not None:  # RoPE through the model's own function
        fn = getattr(sys.modules[type(mod).__module__], "apply_rotary_pos_emb")
        q, k = fn(q, k, pe[0], pe[1])[:2]
        added.append("RoPE (the model's apply_rotary_pos_emb)")
    elif hasattr(mod, "embed_positions") and hasattr(mod, "rotary_dim"):  # GPT-J: rotary from its own table
        mm = sys.modules[type(mod).__module__]
        pos = kwargs.get("position_ids")
        S = q.shape[2]
        pos = torch.arange(S)[None].expand(q.shape[0], S) if pos is None else pos
        ep = mod._get_embed_positions(pos)
        sincos = torch.gather(ep, 1, pos.unsqueeze(-1).repeat(1, 1, ep.shape[-1])).to(q.dtype)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        r = mod.rotary_dim or q.shape[-1]
        qt, kt = q.transpose(1, 2), k.transpose(1, 2)  # (B, S, H, hd) as GPT-J rotates
        qt = torch.cat([mm.apply_rotary_pos_emb(qt[..., :r], sin, cos), qt[..., r:]], -1)
        kt = torch.cat([mm.apply_rotary_pos_emb(kt[..., :r], sin, cos), kt[..., r:]], -1)
        q, k = qt.transpose(1, 2), kt.transpose(1, 2)
        added.append("RoPE (GPT-J's embed_positions, rotate_every_two)")
    return q, k


def _bias_terms(lm, cat, mod, b, kwargs, out, q, k, scores, added):
    B, H, S, Sk = scores.shape
    if kwargs.get("alibi") is not None:  # BLOOM: beta * alibi + alpha * q.k (beta = 1)
        scores = scores + kwargs["alibi"].view(B, H, 1, Sk)
        added.append("ALiBi (the model's alibi tensor)")
    if lm.family in ("t5", "t5_v1_1") and isinstance(out, tuple) and len(out) == 3:
        pb = out[1]  # the relative position bias (with the mask) the module used and returns
        scores = scores + pb[:, :, -S:, :]
        added.append("T5 relative position bias (+ mask) returned by the module")
    elif lm.family in ("t5", "t5_v1_1"):  # UMT5: every layer has its own bias, not returned
        if mod.has_relative_attention_bias:
            scores = scores + mod.compute_bias(S, Sk)
            added.append("UMT5 relative position bias (the module's compute_bias)")
    if lm.family == "mpnet":  # one table the encoder turns into a (B, H, S, S) bias once and passes to every layer
        scores = scores + families.hf.base(lm.model).encoder.compute_position_bias(q.new_zeros(B, S, 1))
        added.append("MPNet relative position bias (the encoder's compute_position_bias)")
    if lm.family == "deberta_v2" and lm.config.relative_attention:
        sf = deberta_adapter.scale_factor(cat.config)
        ql, kl = q.reshape(B * H, S, -1), k.reshape(B * H, Sk, -1)
        rel = mod.disentangled_attention_bias(ql, kl, kwargs.get("relative_pos"), kwargs.get("rel_embeddings"), sf)
        scores = scores + rel.view(B, H, S, Sk)
        added.append("DeBERTa relative c2p + p2c terms (the module's disentangled_attention_bias on our q, k)")
    cap = getattr(lm.config, "attn_logit_softcapping", None)
    if cap:
        scores = torch.tanh(scores / cap) * cap
        added.append(f"logit soft-capping at {cap}")
    return scores


# ---------------------------------------------------------------------------------------------- tests
def test_the_registry_covers_40_model_types_each_with_a_tiny_config():
    types = {mt for s in families.REGISTRY.values() for mt in s.model_types}
    assert len(types) >= 40, sorted(types)
    for name, s in families.REGISTRY.items():
        assert set(s.tiny_configs()) == set(s.model_types), f"{name}: a model_type without a tiny config"
        assert s.qk_statement, f"{name}: no QK statement"
    assert {mt for _, mt, _ in CASES} == types


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request):
    """(family, model_type, its tiny model): module-scoped, so both tests of one model_type run together."""
    fam, mt, cfg = request.param
    return fam, mt, tiny(fam, mt, cfg)


def test_notebook_calls_on_a_tiny_model_of_each_model_type(case):
    """What 01 and 06 call (02's battery runs in the ``families`` notebook test): every stack, no
    unclassified weight, the twin named like the files, one QK group per attention kind."""
    fam, mt, lm = case
    s = lm.spec
    # a Qwen3.5 (vision-language) config loads through AutoModelForCausalLM as its text model
    assert lm.family == fam and (not s.hf or lm.config.model_type in (mt, f"{mt}_text"))
    E = lm.input_embeddings()
    assert E.ndim == 2 and E.shape[0] > 1 and torch.isfinite(E).all()
    sizes = s.sizes_of(lm.config)
    for stack in lm.stacks:
        x = probes.synthetic_images(2, lm.image_size, seed=0) if stack == "vision" else probes.SENTENCES[:3]
        if stack not in lm.probe_stacks:  # an audio encoder (Whisper): texts are refused in one line (not read)
            with pytest.raises(ValueError, match="log-mel"):
                lm.hidden_states(x, stack=stack)
            continue
        hs = lm.hidden_states(x, stack=stack)
        assert len(hs.layers) >= 2 and all(torch.isfinite(h).all() for h in hs.layers)
        if stack == lm.stacks[0]:
            assert hs.layers[-1].shape[-1] == sizes.d_model
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnclassifiedWeightsWarning)
        cat = catalog(TensorStore(lm.weights_dir), config=lm.config, family=fam)
        twin = catalog(lm.random_init_weights(), config=lm.config, family=fam)
    blocks = cat.attention_blocks()
    assert blocks and cat.mlp_blocks()
    assert catalog_digest(cat) == json.loads(DIGESTS.read_text(encoding="utf-8"))[f"{fam}-{mt}"], \
        f"the catalog of {fam}-{mt} changed (see DIGESTS)"
    first = [b for b in blocks if b.stack == (lm.stacks[0] if fam != "open_clip" else "text")][0]
    assert (first.n_heads, first.head_dim, first.n_kv_heads, first.d_model) == \
        (sizes.n_heads, sizes.head_dim, sizes.n_kv_heads, sizes.d_model)
    assert {e.key: e.shape for e in twin} == {e.key: e.shape for e in cat}, "the twin must be named like the files"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = operators.measure_model(lm, top_k=2)
    assert set(ops) == {f"{b.stack}.{b.attn}" for b in blocks}
    if s.shared_layers:  # ALBERT: one stored layer for every depth
        assert len({b.layer for b in blocks}) < sizes.n_layers


def test_attention_is_rebuilt_from_the_extracted_qk(case):
    """W_Q, W_K (with biases, scale, heads, fused splits, folded q/k-norm gains) give the module's own
    attention weights to 1e-5 in float32, with what the bilinear form leaves out added back."""
    fam, mt, lm = case
    records = reconstruct(lm)
    kinds = {(r["block"][0], r["block"][1]) for r in records}
    cat_kinds = {(b.stack, b.attn) for b in catalog(lm).attention_blocks()}
    assert kinds == cat_kinds, f"attention kinds checked {kinds} != catalog {cat_kinds}"
    worst = max(records, key=lambda r: r["max_abs"])
    assert worst["max_abs"] <= 1e-5, f"{fam}/{mt}: {worst}"
    added = {_SHORT[a.split(" ")[0]] for r in records for a in r["added"] if _SHORT.get(a.split(" ")[0])}
    assert added == set(lm.spec.left_out_of(mt)), \
        f"{fam}/{mt}: added back {sorted(added)}, the spec says the form leaves out {lm.spec.left_out_of(mt)}"


#: first word of a reconstruction's "added" label -> the short name in ``FamilySpec.left_out`` (None: a mask)
_SHORT = {"RoPE": "RoPE", "ALiBi": "ALiBi", "T5": "relative bias", "UMT5": "relative bias", "MPNet": "relative bias",
          "DeBERTa": "relative c2p/p2c", "per-token": "q/k rms", "logit": "soft-cap", "causal": None, "Falcon's": None}


def test_an_unknown_model_type_gets_embeddings_and_the_matrix_battery():
    """Family any (§3): GPT-Neo, which no family knows: 01's embeddings and hidden states, 02's battery over
    every 2-D weight (spectra, sparsity, norms, cross-layer by module name), no attention block; the
    attention sections' line names the adapter that would enable them."""
    from geolip_lib.weights import run_battery

    lm = models.load("tiny-any")
    assert families.family_of_config(lm.config) is None and lm.config.model_type == "gpt_neo"
    E = lm.input_embeddings()
    assert E.shape == (len(lm.tokenizer), 32)
    assert len(lm.hidden_states(probes.SENTENCES[:2]).layers) == 3
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family="any")
    assert cat.attention_blocks() == [] and cat.mlp_blocks()
    res = run_battery(store, cat=cat)
    two_d = [e for e in cat.stored() if len(e.shape) == 2]
    assert set(res.svd["role"]) >= {"q", "k", "v", "o", "mlp_in", "mlp_out"}
    assert len(res.svd) == sum(e.role in ("q", "k", "v", "o", "mlp_in", "mlp_out", "embed") for e in two_d)
    assert res.cross and res.qk["layers"].empty
    assert operators.measure_model(lm) == {}
    line = families.attention_skipped(lm, "QK manifold")
    assert "\n" not in line and "'gpt_neo'" in line and "geolip_lib/families/<family>.py" in line and "skipped" in line
    bert = families.attention_skipped(type("L", (), {"family": "bert", "name": "m", "config": {}})(), "QK manifold")
    assert "adapter" not in bert and "skipped" in bert


@pytest.mark.parametrize("fam,mt", [("gpt2", "gpt2"), ("gpt_neox", "gpt_neox"), ("distilbert", "distilbert")])
def test_a_local_save_pretrained_model_runs_from_a_params_file(fam, mt, tmp_path):
    """A researcher's own GPT-2 / Pythia-style GPT-NeoX / DistilBERT written with save_pretrained (the
    stored layout: Conv1D, interleaved QKV) runs from a params file alone: source local, the canonical
    copy written by the loader, the attention rebuilt from its W_Q, W_K."""
    from transformers import AutoConfig

    from geolip_lib.models.tokenizers import load_tokenizer

    s = families.spec(fam)
    cfg = dict(s.tiny_configs()[mt])
    torch.manual_seed(3)
    model = s.model_class().from_config(AutoConfig.for_model(cfg.pop("model_type"), vocab_size=30522, **cfg))
    model.save_pretrained(tmp_path / "mine")
    load_tokenizer("minilm").save_pretrained(tmp_path / "mine")
    lm = models.load({"name": f"my-{mt}", "family": fam, "source": "local", "local_dir": str(tmp_path / "mine")})
    assert lm.weights_dir != tmp_path / "mine" or s.canonical_tensor is None  # the canonical copy where needed
    records = reconstruct(lm)
    assert records and max(r["max_abs"] for r in records) <= 1e-5
    E = lm.input_embeddings()
    assert torch.equal(E, model.get_input_embeddings().weight.detach())


@pytest.mark.parametrize("name", ["tiny-type-mixtral", "tiny-type-qwen2_moe"])
def test_the_battery_runs_per_expert_and_pools_over_experts(name):
    """Mixtral / Qwen2-MoE: one MLP block and one SVD row per expert, labelled with its index; the
    role tables pool them; cross-layer correlation leaves experts out (no pairing across layers)."""
    from geolip_lib.weights import run_battery

    lm = models.load(name)
    n_exp = int(getattr(lm.config, "num_local_experts", None) or lm.config.num_experts)
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family=lm.family)
    experts = [b for b in cat.mlp_blocks() if b.expert is not None]
    assert len(experts) == n_exp * lm.config.num_hidden_layers
    res = run_battery(store, cat=cat)
    rows = res.svd[res.svd["expert"].notna()]
    assert sorted(set(rows["expert"].astype(int))) == list(range(n_exp))
    assert set(res.mlp["layers"]["expert"].dropna().astype(int)) == set(range(n_exp))
    assert all(("mlp" not in k[2]) or lm.config.model_type == "qwen2_moe" for k in res.cross)  # shared expert only


def test_a_model_without_attention_under_any_says_what_is_not_analysed():
    """Family any on a tiny Mamba: 01's embeddings and hidden states run; the catalog has no
    attention (Mamba's ``mixer.out_proj`` is not an ``o``), every mixer tensor is catalogued with its layer;
    02's battery leaves the mixer out of the spectra by role and the cross-layer correlation and counts it in
    sparsity; the attention sections' line says the model has no attention."""
    from geolip_lib.checkpoints import NotAnalysedWarning
    from geolip_lib.weights import run_battery

    lm = models.load("tiny-mamba")
    assert lm.family == "any" and lm.config.model_type == "mamba"
    assert len(lm.hidden_states(probes.SENTENCES[:2]).layers) == 3
    store = TensorStore(lm.weights_dir)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cat = catalog(store, config=lm.config, family="any")
    assert not [w for w in rec if issubclass(w.category, UnclassifiedWeightsWarning)]
    assert [str(w.message) for w in rec if issubclass(w.category, NotAnalysedWarning)] in ([], [cat.not_analysed()])
    assert not cat.has_attention and not [e for e in cat.entries if e.role in ("q", "k", "v", "o", "qkv")]
    mixers = {e.name for e in cat.mixers()}
    assert mixers == {n for n in store.infos() if ".mixer." in n} and all(e.layer in (0, 1) for e in cat.mixers())
    res = run_battery(store, cat=cat)
    assert not set(res.svd["name"]) & mixers and res.cross == {} and res.qk["layers"].empty
    assert mixers <= set(res.sparsity["per_tensor"]["name"])
    line = families.attention_skipped(lm, "QK manifold")
    assert "\n" not in line and "'mamba' has no attention" in line and "out_proj" in line
    assert operators.measure_model(lm) == {}


if __name__ == "__main__" and "--write-catalog-digests" in sys.argv:
    out = {}
    for fam, mt, cfg in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lm = tiny(fam, mt, cfg)
            out[f"{fam}-{mt}"] = catalog_digest(catalog(TensorStore(lm.weights_dir), config=lm.config, family=fam))
        print(f"{fam}-{mt}", out[f"{fam}-{mt}"]["sha256"][:12], flush=True)
    DIGESTS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
