"""Random-init twins run one block at a time (geolip_lib.models.layered): the hidden states of a
layered twin are those of the whole model built from the same generated tensors, one block is
materialised at a time, and at or below the threshold the twin is ``lm.random_init`` itself."""
from __future__ import annotations

import pytest
import torch

from geolip_lib import models
from geolip_lib.models import layered
from geolip_lib.probes import contextual as C
from geolip_lib.probes import random_init as R

TINY = ("tiny-qwen", "tiny-bert", "tiny-t5", "tiny-t5-v1_1", "tiny-open-clip")
TEXTS = ["The cat sat on the mat.", "A second, longer sentence about the river bank."]


@pytest.fixture(scope="module")
def lms():
    return {n: models.load(n) for n in TINY}


def _inputs(lm):
    stack = lm.stacks[0]
    if stack == "vision":
        return stack, torch.randn(2, 3, lm.image_size, lm.image_size, generator=torch.Generator().manual_seed(0))
    return stack, TEXTS


@pytest.mark.parametrize("name", TINY)
def test_layered_twin_equals_the_whole_model_of_the_same_tensors(lms, name):
    lm = lms[name]
    tw = layered.random_init_model(lm, 5, max_params=0)  # threshold lowered: a tiny model is run block by block
    store = lm.random_init_weights(5, max_params=0)
    ref = lm.random_init(5)  # the slow reference: the whole architecture, loaded with the store's tensors
    sd = ref.model.state_dict()
    assert all(k in store for k in sd)
    ref.model.load_state_dict({k: store.get(k, dtype=v.dtype) for k, v in sd.items()})
    stack, x = _inputs(lm)
    a, b = tw.hidden_states(x, stack=stack), ref.hidden_states(x, stack=stack)
    assert len(a.layers) == len(b.layers) and torch.equal(a.mask, b.mask)
    for i, (u, v) in enumerate(zip(a.layers, b.layers)):
        assert torch.equal(u, v), f"{name} layer {i}"
    assert tw.name.endswith("@random5") and tw.params.seed == 5 and tw.device == torch.device("cpu")


@pytest.mark.parametrize("name", TINY)
def test_one_block_is_materialised_at_a_time(lms, name):
    lm = lms[name]
    tw = layered.random_init_model(lm, 3, max_params=0)
    acc = tw.model.geolip_blocks
    n_block = sum(p.numel() for _, b in layered._blocks(tw.model) for p in b.parameters())
    assert acc.n_blocks >= 2 and acc.peak_bytes == 0
    assert sum(p.numel() for p in lm.model.parameters()) == n_block + acc.kept_bytes // 4  # float32: all accounted
    assert all(p.is_meta for _, b in layered._blocks(tw.model) for p in b.parameters())
    stack, x = _inputs(lm)
    tw.hidden_states(x, stack=stack)
    sizes = {sum(p.numel() * p.element_size() for p in b.parameters()) for _, b in layered._blocks(tw.model)}
    assert acc.peak_bytes in sizes  # one block's bytes (of the stack run), never two blocks at once
    assert acc.live_bytes == 0 and all(p.is_meta for _, b in layered._blocks(tw.model) for p in b.parameters())


def test_at_or_below_the_threshold_the_twin_is_the_whole_random_init(lms):
    lm = lms["tiny-qwen"]
    tw, ref = layered.random_init_model(lm, 9), lm.random_init(9)
    assert not hasattr(tw.model, "geolip_blocks")
    for k, v in ref.model.state_dict().items():
        assert torch.equal(tw.model.state_dict()[k], v), k


def test_contextual_null_runs_the_layered_twin_above_the_threshold(lms, monkeypatch):
    """16's random-init null above the threshold: the layered twin's states, measured as before."""
    lm = lms["tiny-bert"]
    ctx = C.Contexts(words=["a", "b", "c"], sentences=["a cat", "a dog", "b cat", "b dog", "c cat", "c dog"],
                     word_of=torch.tensor([0, 0, 1, 1, 2, 2]).numpy(), spans=[(0, 1)] * 6)
    layers, kept = C.occurrence_states(lm, ctx)
    small = C.null_measurements(lm, ctx, layers, ctx.word_of[kept], gaussian_seeds=2, random_init_seeds=1,
                                n_pairs=20, n_boot=20)
    monkeypatch.setattr(models.twin, "TWIN_MAX_PARAMS", 0)
    big = C.null_measurements(lm, ctx, layers, ctx.word_of[kept], gaussian_seeds=2, random_init_seeds=1,
                              n_pairs=20, n_boot=20)
    assert big[0]["gaussian"] == small[0]["gaussian"]  # the Gaussian null does not depend on the twin
    t_layers, t_kept = C.occurrence_states(layered.random_init_model(lm, lm.params.seed + 1, max_params=0), ctx)
    want = C.claim_values(C.analyse(t_layers, ctx.word_of[t_kept], n_pairs=20, seed=0, n_boot=20))
    assert big[0]["random_init"] == [want]


@pytest.mark.parametrize("name", ["tiny-qwen", "tiny-t5"])
def test_01_null_is_unchanged_at_or_below_the_threshold_and_tables_alone_above(lms, name):
    lm = lms[name]
    null = R.RandomInitNull(lm)
    assert null.whole and torch.equal(null.table0, lm.random_init().input_embeddings())  # the whole twin, as before
    ref = R.random_init_tables(lm, lm.random_init())
    for k in range(3):
        assert torch.equal(null.table(k), ref(k)), k
    assert null.drivers(5) == R.random_init_drivers(lm, 5) and null.model() is null.twin
    big = R.RandomInitNull(lm, max_params=0)  # above the threshold: no whole twin
    assert big.twin is None and not big.whole
    assert torch.equal(big.table0, R.random_init_table(lm, lm.params.seed + 1)) and big.table(0) is big.table0
    assert torch.equal(big.table(2), ref(2))  # seeds >= 1 were always the table alone
    d = big.drivers(5)
    assert d["tables_only"] == 5 and "every seed" in d["method"] and d["init_seeds"] == ref_seeds(lm, 5)
    assert torch.equal(big.model().input_embeddings(), big.table0)  # the run twin's table is the one measured
    first = big.table0
    big.release()  # dropped once read; drawn again on demand: the same values
    assert big._table0 is None and torch.equal(big.table0, first)
    null.release()  # at or below the threshold the twin's table stays
    assert null._table0 is not None and torch.equal(null.table0, lm.random_init().input_embeddings())


def ref_seeds(lm, n):
    return [lm.params.seed + 1 + k for k in range(n)]


def test_an_untied_head_is_materialised_only_when_called(lms):
    """Hidden states never call the output head: an untied one (T5 v1.1) stays on the meta device,
    and a call materialises it with the store's values, then puts it back."""
    lm = lms["tiny-t5-v1_1"]
    tw = layered.random_init_model(lm, 4, max_params=0)
    head = tw.model.get_output_embeddings()
    assert head.weight is not tw.model.get_input_embeddings().weight
    assert (next(n for n, m in tw.model.named_modules() if m is head), head) in layered._blocks(tw.model)
    tw.hidden_states(TEXTS, stack=tw.stacks[0])
    assert head.weight.is_meta
    store = lm.random_init_weights(4, max_params=0)
    x = torch.randn(2, head.in_features, generator=torch.Generator().manual_seed(1))
    y = head(x)
    assert head.weight.is_meta and tw.model.geolip_blocks.live_bytes == 0
    assert torch.equal(y, torch.nn.functional.linear(x, store.get("lm_head.weight", dtype=torch.float32)))
    tied = layered.random_init_model(lms["tiny-qwen"], 4, max_params=0).model
    if tied.get_output_embeddings().weight is tied.get_input_embeddings().weight:  # a tied head is kept
        assert all(m is not tied.get_output_embeddings() for _, m in layered._blocks(tied))
