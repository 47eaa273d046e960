"""Modulators on tiny models: hooks, exact identity at alpha = 0, clean removal, frozen base,
gradients only in the modulator, and a few training steps reducing a tiny task's loss."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import models
from geolip_lib.modulators import (
    FieldModulatorConfig, GeometricFieldModulator, GeometricResidualModulator, ModulatorTrainer, attach,
    compare_generations, encode_mean_pooled, freeze, greedy_generate, locate_blocks, seq2seq_loss,
    embedding_regression_loss, causal_completion_loss, state_hash,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def t5():
    return models.load("tiny-t5")


@pytest.fixture(scope="module")
def batch(t5):
    return t5.tokenizer(["summarize: a small domesticated carnivorous mammal", "summarize: a cat"],
                        return_tensors="pt", padding=True, return_token_type_ids=False)


def _residual(model, seed=0, alpha=0.2):
    cfg = model.config
    m = GeometricResidualModulator(cfg.d_model, cfg.vocab_size, n_geometric_dims=8, n_layers=cfg.num_layers,
                                   initial_alpha=alpha, seed=seed, proj_std=1.0)
    return m


def _field(model, **kw):
    cfg = model.config
    return GeometricFieldModulator(FieldModulatorConfig(d_model=cfg.d_model, n_layers=cfg.num_layers, **kw))


def _no_hooks(module: torch.nn.Module) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in module.modules())


@pytest.mark.parametrize("where", ["pre", "post"])
@pytest.mark.parametrize("kind", ["residual", "field"])
def test_t5_alpha_zero_is_identity_and_hooks_removed(t5, batch, where, kind):
    m = t5.model
    h0 = state_hash(m)
    with torch.no_grad():
        ref = m(**batch, decoder_input_ids=batch["input_ids"][:, :4]).logits
        mod = _residual(m) if kind == "residual" else _field(m, alpha_min=0.0, initial_alpha=0.3)
        mod.set_alpha(0.0)
        with attach(t5, mod, where=where) as h:
            assert len(h.layers) == m.config.num_layers
            out = m(**batch, decoder_input_ids=batch["input_ids"][:, :4]).logits
        assert torch.allclose(out, ref, atol=1e-6, rtol=0)
        mod.set_alpha(0.3)
        with attach(t5, mod, where=where):
            moved = m(**batch, decoder_input_ids=batch["input_ids"][:, :4]).logits
        assert not torch.allclose(moved, ref, atol=1e-4)
        after = m(**batch, decoder_input_ids=batch["input_ids"][:, :4]).logits
    assert torch.equal(after, ref)  # hooks gone: the model is unchanged
    assert _no_hooks(m) and state_hash(m) == h0


def test_hooks_removed_on_exception(t5, batch):
    mod = _residual(t5.model)
    with pytest.raises(RuntimeError, match="boom"):
        with attach(t5.model, mod):
            raise RuntimeError("boom")
    assert _no_hooks(t5.model)


def test_pre_hook_matches_manual_lerp_at_layer0(t5, batch):
    """Modulating only block 0's input equals running the encoder on LERPed embeddings."""
    m = t5.model
    mod = _residual(m, alpha=0.4)
    with torch.no_grad():
        emb = m.get_encoder().embed_tokens(batch["input_ids"])
        manual = m.get_encoder()(inputs_embeds=mod(emb, batch["input_ids"], 0),
                                 attention_mask=batch["attention_mask"]).last_hidden_state
        with attach(m, mod, layers=[0]):
            hooked = m.get_encoder()(**batch).last_hidden_state
    assert torch.allclose(hooked, manual, atol=1e-6)


def test_decoder_stack_and_generation(t5):
    m, tok = t5.model, t5.tokenizer
    prompts = ["summarize: a cat", "summarize: a large wild canine"]
    base = greedy_generate(m, tok, prompts, max_new_tokens=6)
    mod = _residual(m, alpha=0.0)
    with attach(m, mod, stack="decoder"):
        same = greedy_generate(m, tok, prompts, max_new_tokens=6)
    rows = compare_generations(base, same)
    assert all(r["identical"] and r["token_diffs"] == 0 for r in rows)
    mod.set_alpha(0.9)
    with attach(m, mod):
        other = greedy_generate(m, tok, prompts, max_new_tokens=6)
    assert [r["ids"] for r in greedy_generate(m, tok, prompts, max_new_tokens=6)] == [r["ids"] for r in base]
    assert len(compare_generations(base, other)) == 2


def test_gradients_reach_only_the_modulator_and_training_reduces_loss(t5):
    m, tok = t5.model, t5.tokenizer
    freeze(m)
    h0 = state_hash(m)
    inputs = ["summarize: a small domesticated carnivorous mammal", "summarize: a large wild canine",
              "summarize: a polygon with three edges", "summarize: the number after six"]
    targets = ["cat", "wolf", "triangle", "seven"]
    mod = _residual(m, alpha=0.3)
    trainer = ModulatorTrainer(mod, lr=3e-2)
    with attach(m, mod):
        loss = seq2seq_loss(m, tok, inputs, targets)
        loss.backward()
        assert all(p.grad is None for p in m.parameters())
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mod.parameters())
        trainer.optimizer.zero_grad()
        with torch.no_grad():
            first = float(seq2seq_loss(m, tok, inputs, targets))
        for _ in range(10):
            trainer.step(seq2seq_loss(m, tok, inputs, targets))
        with torch.no_grad():
            last = float(seq2seq_loss(m, tok, inputs, targets))
    assert last < first - 0.1
    assert state_hash(m) == h0  # no base weight changed
    assert len(trainer.alpha_history) == 11


def test_field_trainer_on_t5_task(t5):
    m, tok = t5.model, t5.tokenizer
    freeze(m)
    h0 = state_hash(m)
    mod = _field(m, initial_alpha=0.3, alpha_max=0.9)
    trainer = ModulatorTrainer(mod, lr=5e-2)
    inputs, targets = ["summarize: a cat", "summarize: a dog"], ["cat", "dog"]
    with attach(m, mod) as h:
        with torch.no_grad():
            first = float(seq2seq_loss(m, tok, inputs, targets))
        for _ in range(8):
            trainer.step(seq2seq_loss(m, tok, inputs, targets))
        with torch.no_grad():
            last = float(seq2seq_loss(m, tok, inputs, targets))
        reps = encode_mean_pooled(m, tok, ["a cat", "a dog", "a wolf", "a tree", "a stone", "a lake"])
    assert last < first
    assert reps.shape == (6, m.config.d_model)
    assert state_hash(m) == h0
    rep = mod.health_report()
    assert 0 <= rep["validity_mean"] <= 1
    trainer.check_cv(torch.as_tensor(reps), n_simplices=50)
    assert len(trainer.cv_history) == 1


def test_bert_hooks_identity_and_objective():
    lm = models.load("tiny-bert")
    m, tok = lm.model, lm.tokenizer
    stack, blocks = locate_blocks(lm)
    assert len(blocks) == m.config.num_hidden_layers
    b = tok(["a cat", "a large dog"], return_tensors="pt", padding=True)
    cfg = m.config
    mod = GeometricResidualModulator(cfg.hidden_size, cfg.vocab_size, 4, n_layers=cfg.num_hidden_layers,
                                     proj_std=1.0)
    with torch.no_grad():
        ref = m(**b).last_hidden_state
        mod.set_alpha(0.0)
        with attach(lm, mod):
            assert torch.allclose(m(**b).last_hidden_state, ref, atol=1e-6)
        mod.set_alpha(0.5)
        with attach(lm, mod, where="post"):
            assert not torch.allclose(m(**b).last_hidden_state, ref, atol=1e-4)
    freeze(m)
    with attach(lm, mod):
        loss = embedding_regression_loss(m, tok, ["a cat", "a dog"], [5, 6])
        loss.backward()
    assert all(p.grad is None for p in m.parameters()) and mod.proj.weight.grad is not None
    assert _no_hooks(m)


def test_decoder_lm_hooks_generation_and_objective():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    m = Qwen2ForCausalLM(cfg).eval()
    ids = torch.randint(3, 64, (2, 7))
    mod = GeometricResidualModulator(16, 64, 4, n_layers=2, proj_std=1.0)
    with torch.no_grad():
        ref = m(input_ids=ids).logits
        gen_ref = m.generate(input_ids=ids, max_new_tokens=4, do_sample=False)
        mod.set_alpha(0.0)
        with attach(m, mod):  # stack "encoder" maps to the decoder stack of an LM
            assert torch.allclose(m(input_ids=ids).logits, ref, atol=1e-6)
            assert torch.equal(m.generate(input_ids=ids, max_new_tokens=4, do_sample=False), gen_ref)
        mod.set_alpha(0.5)
        with attach(m, mod):  # the KV-cached steps see one new token: ids must follow
            assert m.generate(input_ids=ids, max_new_tokens=4, do_sample=False).shape == gen_ref.shape

    class Tok:  # a minimal tokenizer for the completion objective
        pad_token_id = 0

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [3 + (ord(c) % 60) for c in text]}

    freeze(m)
    with attach(m, mod):
        loss = causal_completion_loss(m, Tok(), ["a cat", "a dog"], ["cat", "dog"])
        loss.backward()
    assert all(p.grad is None for p in m.parameters()) and mod.alpha.grad is not None
    assert _no_hooks(m)


def test_bad_inputs_are_one_line_errors(t5):
    mod = _residual(t5.model)
    with pytest.raises(ValueError, match="layers"):
        attach(t5.model, mod, layers=[5])
    with pytest.raises(ValueError, match="where"):
        attach(t5.model, mod, where="middle")
    with pytest.raises(ValueError, match="stack"):
        attach(t5.model, mod, stack="vision")
    assert _no_hooks(t5.model)


# ------------------------------------------------------------------ §7 quick test and the phase sweep
def test_modulator_impact_quick_test_on_t5(t5):
    from geolip_lib.modulators import SEED_QUICK_TEST_SENTENCES, modulator_impact

    assert len(SEED_QUICK_TEST_SENTENCES) == 5
    mod = _residual(t5.model, alpha=0.0)
    zero = modulator_impact(t5, mod, SEED_QUICK_TEST_SENTENCES[:2])
    assert np.allclose(zero["cos"], 1, atol=1e-6) and np.allclose(zero["norm_ratio"], 1, atol=1e-5)
    assert np.allclose(zero["pairwise_shift"], 0, atol=1e-6)
    n_tok = [len(t5.tokenizer(s)["input_ids"]) for s in SEED_QUICK_TEST_SENTENCES[:2]]
    assert zero["n_tokens"] == sum(n_tok) and zero["n_pairs"] == sum(n * (n - 1) // 2 for n in n_tok)
    mod.set_alpha(0.5)
    half = modulator_impact(t5, mod, SEED_QUICK_TEST_SENTENCES[:2])
    assert half["cos_mean"] < 1 - 1e-4 and half["cos_std"] > 0
    assert half["per_sentence"][0]["n_tokens"] == n_tok[0]
    assert _no_hooks(t5.model)


def test_phase_sweep_identity_at_zero_and_seed_sample(t5):
    from geolip_lib.lexical.matching import match_lemmas
    from geolip_lib.lexical.representations import definition_representations, static_representations
    from geolip_lib.modulators import phase, seed_relational_pairs, wordnet_pair_similarity
    from geolip_lib.modulators.stats import pearson

    matched = match_lemmas(t5.tokenizer)
    matched = matched.subset(np.sort(np.random.default_rng(0).choice(len(matched), 40, replace=False)))
    E = definition_representations(t5, matched.definitions, progress=False)
    S = static_representations(t5, matched.token_ids)
    ph = phase.phase_sweep(t5, matched, E, S, [0.5, 0.0, 0.3], [42, 7], n_entries=30, n_pairs=400, n_anchor=20,
                           n_geo=4)
    assert ph["alphas"].tolist() == [0.0, 0.3, 0.5] and ph["pearson"].shape == (2, 3)
    assert np.allclose(ph["preservation"][:, 0], 1, atol=1e-6)  # alpha = 0 is the unmodulated encoder
    assert ph["n_entries"] == [30, 30]
    # seed 42's Pearson at alpha 0: the unmodulated encoder on the seed's own sample
    i, j, _ = seed_relational_pairs(40, 30, 400, seed=42)
    sim = wordnet_pair_similarity(matched, i, j, "path")
    keep = np.isfinite(sim) & (sim > 0)
    c = np.einsum("nd,nd->n", E[i[keep]], E[j[keep]]) / (np.linalg.norm(E[i[keep]], axis=1) *
                                                       np.linalg.norm(E[j[keep]], axis=1))
    assert ph["pearson"][0, 0] == pytest.approx(float(pearson(sim[keep], c)), abs=1e-5)
    assert ph["n_pairs"][0] == int(keep.sum()) > 10
    assert _no_hooks(t5.model)


def test_seed_section9_loss_is_the_seeds_leaky_objective(t5):
    """Seed mode (§9 as written): the decoder reads the target ids themselves (no start token,
    no shift), so position t sees the token it is scored on; the logits are lm_head of the
    decoder output without T5's d_model ** -0.5. The project's loss feeds the shifted ids."""
    import torch.nn.functional as F

    from geolip_lib.modulators import definition_lemma_loss, seed_section9_loss
    from geolip_lib.lexical.matching import match_lemmas

    m, tok = t5.model, t5.tokenizer
    inputs, targets = ["summarize: a small domesticated carnivorous mammal", "summarize: a cat"], ["cat", "big dog"]
    seen = []
    h = m.get_decoder().register_forward_pre_hook(lambda mod, a, kw: seen.append(kw["input_ids"].clone()),
                                                  with_kwargs=True)
    try:
        with torch.no_grad():
            seed = float(seed_section9_loss(m, tok, inputs, targets))
            proj = float(seq2seq_loss(m, tok, inputs, targets))
    finally:
        h.remove()
    lab = tok(targets, return_tensors="pt", padding=True, return_token_type_ids=False)["input_ids"]
    assert torch.equal(seen[0], lab)  # seed: the answer itself is the decoder input
    assert torch.equal(seen[1][:, 0], torch.full((2,), m.config.decoder_start_token_id))  # project: shifted right
    assert torch.equal(seen[1][:, 1:], lab[:, :-1].masked_fill(lab[:, :-1] == tok.pad_token_id, tok.pad_token_id))
    # the seed cell's computation, written out
    enc = tok(inputs, return_tensors="pt", padding=True, return_token_type_ids=False)
    with torch.no_grad():
        hs = m.encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        d = m.decoder(input_ids=lab, encoder_hidden_states=hs, encoder_attention_mask=enc["attention_mask"])
        logits = m.lm_head(d.last_hidden_state)
    want = F.cross_entropy(logits.view(-1, logits.size(-1)), lab.masked_fill(lab == tok.pad_token_id, -100).view(-1),
                           ignore_index=-100)
    assert seed == pytest.approx(float(want), rel=1e-6) and seed != pytest.approx(proj, rel=1e-3)
    matched = match_lemmas(tok)
    with torch.no_grad():
        assert float(definition_lemma_loss(t5, matched, [0, 1], seed_mode=True)) == pytest.approx(
            float(seed_section9_loss(m, tok, [f"summarize: {matched.definitions[k]}" for k in (0, 1)],
                                     [matched.lemmas[k] for k in (0, 1)])), rel=1e-6)
    bert = models.load("tiny-bert")
    with pytest.raises(ValueError, match="seed §9 trained T5 only"):
        definition_lemma_loss(bert, match_lemmas(bert.tokenizer), [0], seed_mode=True)
