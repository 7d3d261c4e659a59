"""Our BERT is Hugging Face's `BertForPreTraining` (pre-LN: `MegatronBertForPreTraining`; the modern-*
presets: `ModernBertForMaskedLM`): the exported model computes the same logits, and 50 training steps of our
model + optimizer and of transformers' model give the same losses."""

from __future__ import annotations

import contextlib
import itertools
import json

import pytest
import torch

from tests.interop.helpers import (
    complaints,
    load_with_log,
    one_thread,
    random_model,
    write_checkpoint,
    write_vocab,
)
from tests.trainer.conftest import padded_rows
from trainer.batch import forward_loss
from trainer.config import MODERN, DataConfig, OptimConfig, ScheduleConfig, preset
from trainer.data import ShardStream
from trainer.export import export
from trainer.hf_families import key_names
from trainer.model import BertForPreTraining
from trainer.optim import build_optimizer, build_scheduler
from trainer.shards import open_shards

transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def exported_pair(model: BertForPreTraining, tmp_path, attn: str = "sdpa"):
    """(our model, transformers' model loaded from our export as the class its config.json names), both
    eval mode."""
    checkpoint = write_checkpoint(tmp_path / "checkpoint", model)
    vocab = write_vocab(tmp_path / "vocab", model.config.vocab_size)
    out = export(checkpoint, tmp_path / "hf", vocab)
    cls = getattr(transformers, json.loads((out / "config.json").read_text())["architectures"][0])
    hf, info, messages = load_with_log(cls, out, attn_implementation=attn)
    assert not info["missing_keys"] and not info["unexpected_keys"] and complaints(messages) == []
    return model.eval(), hf.eval()


# Each family's class (trainer/hf_families.py), in the attention implementations transformers has for it on
# a CPU (Megatron-BERT: eager only); ModernBERT with each gated MLP and with and without biases
FAMILIES = {
    "bert": ({}, ("sdpa", "eager")),
    "megatron-bert": ({"pre_ln": True}, ("eager",)),
    "megatron-bert-mlm": ({"pre_ln": True, "objective": "none"}, ("eager",)),
    "modernbert": ({**MODERN, "objective": "none"}, ("sdpa", "eager")),
    "modernbert-swiglu-biases": ({**MODERN, "objective": "none", "mlp": "swiglu", "bias": True}, ("sdpa",)),
}
CASES = [(family, attn) for family, (_, attns) in FAMILIES.items() for attn in attns]


def random_rows(vocab_size: int, B: int, L: int, padded: bool, seed: int = 7) -> tuple[torch.Tensor, ...]:
    """Padded rows as transformers takes them: (input_ids, token_type_ids, attention_mask [B, L], and the flat
    positions b * L + i of ~15% of the real tokens); with `padded`, rows of random lengths (first full)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab_size, (B, L), generator=g)
    lengths = torch.randint(L // 3, L + 1, (B,), generator=g) if padded else torch.full((B,), L)
    lengths[0] = L
    mask = torch.arange(L)[None, :] < lengths[:, None]
    split = (torch.rand(B, generator=g) * lengths * 0.8).long() + 1  # first token of segment B
    types = ((torch.arange(L)[None, :] >= split[:, None]) & mask).long()
    ids[~mask] = 0
    chosen = (torch.rand(B, L, generator=g) < 0.15) & mask
    return ids, types, mask, chosen.reshape(-1).nonzero().squeeze(1)


def their_logits(hf, ids, types, mask, config) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' MLM logits [B, L, V] and sentence logits (None without a sentence head), given segments
    where the model has them (ModernBERT has none)."""
    segments = {"token_type_ids": types} if config.type_vocab_size else {}
    out = hf(input_ids=ids, attention_mask=mask.long(), **segments)
    if config.sentence_head:
        return out.prediction_logits, out.seq_relationship_logits
    return out.logits, None


@pytest.mark.parametrize("family, attn", CASES, ids=[f"{f}-{a}" for f, a in CASES])
@pytest.mark.parametrize("padded", [False, True], ids=["no-padding", "padding"])
def test_logits_equal_transformers(tmp_path, padded, family, attn):
    """fp32 logits of every real position within 1e-5 of the exported model's, rows padded or not."""
    config = preset("tiny", vocab_size=700, hidden_size=64, num_heads=4, num_layers=3, **FAMILIES[family][0])
    ours, hf = exported_pair(random_model(config, seed=3), tmp_path, attn)
    B, L = 8, 48
    ids, types, mask, positions = random_rows(config.vocab_size, B, L, padded)
    with torch.no_grad():
        mlm, nsp = ours.padded(ids, types, mask if padded else None, positions)
        their_mlm, their_nsp = their_logits(hf, ids, types, mask, config)
    mlm_diff = float((mlm - their_mlm.reshape(B * L, -1)[positions]).abs().max())
    nsp_diff = float((nsp - their_nsp).abs().max()) if config.sentence_head else 0.0
    print(f"{family} {attn} padded={padded}: max |MLM logit diff| {mlm_diff:.2e}, max |NSP| {nsp_diff:.2e}")
    assert len(positions) > 20 and float(mlm.abs().max()) > 0.5  # a real comparison, not of zeros
    assert mlm_diff < 1e-5 and nsp_diff < 1e-5


def hf_names(model: BertForPreTraining, names: set[str]) -> set[str]:
    """Transformers' names of our parameters `names` (BERT's fused qkv is three of theirs)."""
    theirs = [key_names(model.config)[name] for name in names]
    return {n for hf in theirs for n in ((hf,) if isinstance(hf, str) else hf)}


def decayed(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> set[str]:
    by_id = {id(p): n for n, p in model.named_parameters()}
    return {by_id[id(p)] for g in optimizer.param_groups if g["weight_decay"] > 0 for p in g["params"]}


@pytest.mark.slow
def test_fifty_training_steps_match_transformers(tiny_shards, tmp_path):
    steps = 50
    shards = open_shards(tiny_shards)
    batches = list(itertools.islice(ShardStream(shards, "train", DataConfig(batch_size=16), seed=1), steps))
    rows = [padded_rows(b) for b in batches]  # the same batches as transformers takes them
    assert any(not bool(r["attention_mask"].all()) for r in rows)  # padding is exercised
    torch.manual_seed(0)
    config = preset("tiny", vocab_size=shards.vocab.size, dropout=0.0, attention_dropout=0.0)
    ours, hf = exported_pair(BertForPreTraining(config), tmp_path)
    assert hf.config.hidden_dropout_prob == hf.config.attention_probs_dropout_prob == 0.0
    ours.train()
    hf.train()

    optim = OptimConfig(lr=1e-3, weight_decay=0.01, eps=1e-6, grad_clip=1.0)
    schedule = ScheduleConfig(steps=steps, warmup_steps=5)
    # the trainer's own optimizer and schedule for both models; the decayed sets must be the same weights
    opt_ours, opt_hf = build_optimizer(ours, optim, fused=False), build_optimizer(hf, optim, fused=False)
    assert hf_names(ours, decayed(ours, opt_ours)) == decayed(hf, opt_hf)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in hf.parameters())
    runs = [(m, o, build_scheduler(o, schedule)) for m, o in ((ours, opt_ours), (hf, opt_hf))]

    diffs = []
    for batch, padded in zip(batches, rows, strict=True):
        _, _, loss_ours, _, _ = forward_loss(ours, batch, contextlib.nullcontext)
        loss_hf = hf(
            input_ids=padded["input_ids"],
            token_type_ids=padded["token_type_ids"],
            attention_mask=padded["attention_mask"].long(),
            labels=padded["labels"],
            next_sentence_label=batch["sentence_labels"],
        ).loss
        for loss, (model, optimizer, scheduler) in zip((loss_ours, loss_hf), runs, strict=True):
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
        diffs.append(abs(loss_ours.item() - loss_hf.item()))
        if len(diffs) == 1:
            first = loss_ours.item()
    print(
        f"per-step |loss diff|: max {max(diffs):.2e}, mean {sum(diffs) / steps:.2e}; "
        f"loss {first:.3f} -> {loss_ours.item():.3f}"
    )
    assert loss_ours.item() < first - 0.5  # it trained: the comparison covers moving weights
    assert max(diffs) < 1e-4, [f"{d:.1e}" for d in diffs]
