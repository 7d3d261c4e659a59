from __future__ import annotations

import json
from dataclasses import asdict

import pytest
import torch

from tests.interop.helpers import random_model, write_checkpoint
from trainer.checkpoint import load_checkpoint
from trainer.checkpoint_checks import check_state
from trainer.config import MODERN, PRESET_NAMES, PRESETS, parameter_count, preset
from trainer.model import (
    BertForPreTraining,
    Layout,
    flops_per_token,
    pretraining_loss,
    unpad,
)

V = 300

# Each option since BERT on its own, and all of them as ModernBERT combines them (the `modern-*` presets)
VARIANTS = {
    "bert": {},
    "pre_ln": {"pre_ln": True},
    "geglu": {"mlp": "geglu"},
    "swiglu": {"mlp": "swiglu"},
    "no-bias": {"bias": False},
    "rotary": {"position": "rotary"},
    "no-segments": {"type_vocab_size": 0},
    "modern": MODERN,
}


def tiny(**overrides) -> BertForPreTraining:
    torch.manual_seed(0)
    return BertForPreTraining(
        preset("tiny", vocab_size=V, dropout=0.0, attention_dropout=0.0, **overrides)
    ).eval()


def batch(lengths: list[int], L: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    ids = torch.randint(5, V, (B, L), generator=g)
    types = torch.zeros(B, L, dtype=torch.long)
    types[:, L // 2 :] = 1
    mask = torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]
    return ids, types, mask


def test_presets_and_overrides():
    c = preset("base")
    assert (c.num_layers, c.hidden_size, c.num_heads, c.intermediate_size) == (12, 768, 12, 3072)
    assert preset("mini", intermediate_size=100).intermediate_size == 100
    assert set(PRESETS) == {"tiny", "mini", "small", "medium", "base", "large"}
    with pytest.raises(ValueError, match="unknown model option"):
        preset("tiny", hiden_size=3)
    with pytest.raises(ValueError, match="divisible"):
        preset("tiny", num_heads=3)
    # the modern family: each size with ModernBERT's options, the gated MLP as wide as keeps BERT's weights
    assert {f"modern-{size}" for size in PRESETS} < set(PRESET_NAMES)
    m = preset("modern-base")
    assert (m.num_layers, m.hidden_size, m.num_heads, m.intermediate_size) == (12, 768, 12, 2048)
    assert asdict(m).items() >= MODERN.items() and preset("modern-mini", bias=True).bias
    with pytest.raises(ValueError, match="unknown model preset 'modern-huge'"):
        preset("modern-huge")


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_option_shapes_the_weights_as_documented(name):
    """The state dict of each option (model.py's docstring): no bias but the decoder's vocab bias without
    biases, no position table with rotary, no segment table with type_vocab_size 0, a gated fc1 twice as
    wide; every layer with the same names (checkpoint.weight_shapes repeats layer 0). config.parameter_count
    (the size check before a model is built) within 3% of the real count; a gated MLP of the default width
    within 1% of BERT's weights."""
    model = tiny(**VARIANTS[name])
    c, state = model.config, model.state_dict()
    biases = [k for k in state if k.endswith(".bias")]
    assert biases == ["mlm_head.bias"] if not c.bias else len(biases) > 10
    assert ("embeddings.position_embeddings.weight" in state) == (c.position == "learned")
    assert ("embeddings.token_type_embeddings.weight" in state) == (c.type_vocab_size > 0)
    assert ("embeddings.norm.weight" in state) != c.pre_ln and ("final_norm.weight" in state) == c.pre_ln
    assert state["layers.0.mlp.fc1.weight"].shape == ((2 if c.gated else 1) * c.intermediate_size, 128)
    layer = [{k.split(".", 2)[2] for k in state if k.startswith(f"layers.{i}.")} for i in range(c.num_layers)]
    assert all(names == layer[0] for names in layer)
    total = model.num_params(non_embedding=False)
    assert abs(parameter_count(asdict(c)) - total) < 0.03 * total
    mlp = sum(state[f"layers.0.mlp.fc{i}.weight"].numel() for i in (1, 2))
    assert abs(mlp - 2 * 128 * 512) < 0.01 * 2 * 128 * 512


@pytest.mark.parametrize("learned", [True, False], ids=["learned", "rotary"])
def test_rotary_positions_see_only_distances(learned):
    """Shifting every position by 7 changes nothing with rotary positions (attention sees q_i . k_j turned by
    the angle of i - j only) and everything with a learned table: rotary is on, and relative."""
    model = tiny(**({} if learned else {"position": "rotary"}))
    ids, types, mask = batch([20, 13], 20)
    at = torch.arange(20).expand(2, -1)
    with torch.no_grad():
        base, _ = model.padded(ids, types, mask, None, at)
        shifted, _ = model.padded(ids, types, mask, None, at + 7)
    real = mask[..., None].expand_as(base)
    diff = float((base - shifted)[real].abs().max())
    assert (diff > 1e-2) if learned else (diff < 1e-5), diff


def test_checkpoints_saved_before_the_options_load_as_the_model_they_were(tmp_path):
    """A checkpoint whose config.json has none of the new fields (every run before them): BERT's defaults,
    the same weights, the same logits; a pre-LN one stays pre-LN without an embedding norm."""
    new = {"mlp", "bias", "position", "rotary_theta", "embedding_norm"}
    ids, types, mask = batch([12, 9], 12)
    for pre_ln in (False, True):
        model = random_model(preset("tiny", vocab_size=V, pre_ln=pre_ln))
        ckpt = write_checkpoint(tmp_path / f"pre_ln-{pre_ln}", model)
        record = json.loads((ckpt / "config.json").read_text())
        record["model"] = {k: v for k, v in record["model"].items() if k not in new}
        (ckpt / "config.json").write_text(json.dumps(record))
        config, state, _ = load_checkpoint(ckpt)
        check_state(state, config, ckpt)
        assert asdict(config) == asdict(model.config) and config.pre_ln == pre_ln
        loaded = BertForPreTraining(config).eval()
        loaded.load_state_dict(state)
        with torch.no_grad():
            torch.testing.assert_close(loaded.padded(ids, types, mask)[0], model.padded(ids, types, mask)[0])


def test_shapes_and_tied_decoder():
    model = tiny()
    ids, types, mask = batch([16, 9, 12], 16)
    mlm, nsp = model.padded(ids, types, mask)
    assert mlm.shape == (3, 16, V) and nsp.shape == (3, 2)
    positions = torch.tensor([1, 16 + 3, 32 + 11])
    mlm_at, _ = model.padded(ids, types, mask, positions)
    assert mlm_at.shape == (3, V)
    torch.testing.assert_close(mlm_at, mlm.reshape(48, V)[positions])
    # tied: the decoder is the word embedding, so the state dict has no separate decoder weight
    names = set(model.state_dict())
    assert "embeddings.word_embeddings.weight" in names and not any("decoder" in n for n in names)
    assert "final_norm.weight" not in names and "final_norm.weight" in tiny(pre_ln=True).state_dict()
    assert model.num_params(non_embedding=False) - model.num_params() == (V + 512 + 2) * 128


@pytest.mark.parametrize("name", list(VARIANTS))
def test_padding_never_changes_real_tokens(name):
    """A row's outputs are the same alone, padded beside longer rows, or with garbage in its padding."""
    for pre_ln in (False, True):
        model = tiny(**({"pre_ln": pre_ln} | VARIANTS[name]))
        ids, types, mask = batch([7, 24], 24)
        alone_mlm, alone_nsp = model.padded(ids[:1, :7], types[:1, :7])  # no padding at all
        garbage = ids.clone()
        garbage[0, 7:] = torch.randint(5, V, (17,))
        for padded_ids in (ids, garbage):
            mlm, nsp = model.padded(padded_ids, types, mask)
            torch.testing.assert_close(mlm[0, :7], alone_mlm[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(nsp[0], alone_nsp[0], atol=1e-5, rtol=1e-5)


def test_only_masked_positions_get_gradient():
    """The MLM loss depends on the hidden state of masked positions only (and on no padding)."""
    model = tiny()
    ids, types, mask = batch([10, 14], 16)
    flat = unpad(ids, types, mask)
    x = model.encode(flat["input_ids"], flat["token_type_ids"], flat["position_ids"], Layout(
        flat["cu_seqlens"], flat["rows"], flat["slots"]))
    x.retain_grad()
    positions = torch.tensor([2, 10 + 5])  # flat: the second row starts at token 10
    logits = model.mlm_head(x[positions])
    torch.nn.functional.cross_entropy(logits, torch.tensor([7, 9])).backward()
    rows_with_grad = (x.grad.abs().sum(1) > 0).nonzero().squeeze(1).tolist()
    assert x.shape[0] == 25  # 10 + 14 real tokens and one of padding, not 2 x 16
    assert rows_with_grad == [2, 10 + 5]


def test_loss_is_mean_over_masked_tokens_and_pairs():
    mlm_logits = torch.randn(5, V)
    labels = torch.randint(0, V, (5,))
    nsp_logits, nsp_labels = torch.randn(3, 2), torch.tensor([0, 1, 1])
    total, mlm, nsp = pretraining_loss(mlm_logits, labels, nsp_logits, nsp_labels)
    expected = -torch.log_softmax(mlm_logits, -1)[torch.arange(5), labels].mean()
    torch.testing.assert_close(mlm, expected)
    torch.testing.assert_close(total, mlm + nsp)


@pytest.mark.slow  # ~1.1 s idle: trains a model
def test_learns_one_batch():
    """A sanity check on the whole forward/backward: the tiny model memorises one batch."""
    torch.manual_seed(0)
    model = BertForPreTraining(preset("tiny", vocab_size=V)).train()
    ids, types, mask = batch([16, 11, 13, 8], 16)
    positions = torch.tensor([1, 3, 16 + 2, 32 + 5, 48 + 4])
    labels, nsp_labels = torch.tensor([5, 6, 7, 8, 9]), torch.tensor([0, 1, 0, 1])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(60):
        mlm_logits, nsp_logits = model.padded(ids, types, mask, positions)
        loss = pretraining_loss(mlm_logits, labels, nsp_logits, nsp_labels)[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.2


@pytest.mark.parametrize("name", ["mini", "modern-mini"])
def test_flops_per_token_matches_parameter_count(name):
    c = preset(name, vocab_size=1000)
    model = BertForPreTraining(c)
    # non-embedding params minus biases/LayerNorms/pooler/NSP/MLM head ~= the encoder's matmul weights
    encoder = sum(p.numel() for n, p in model.named_parameters() if n.startswith("layers.") and p.ndim == 2)
    attention, head = 6 * 4 * 2 * 128 * 256, 6 * 0.15 * (256 * 256 + 256 * 1000)
    assert flops_per_token(c, 128) == pytest.approx(6 * encoder + attention + head)


@pytest.mark.parametrize("name", ["bert", "modern"])
def test_a_packed_row_computes_what_its_pieces_compute_as_rows(name):
    """Objective `none`: pieces `[CLS] text [SEP]` packed in one row, attention and positions kept inside
    each piece, give the logits each piece gives alone (and the gradient flows the same way: no piece
    sees another); rotary positions restart in each piece as learned ones do."""
    model = tiny(objective="none", **VARIANTS[name])
    assert not hasattr(model, "nsp_head") and not hasattr(model, "pooler")
    g = torch.Generator().manual_seed(3)
    pieces = [torch.randint(5, V, (n,), generator=g) for n in (9, 14, 5)]  # two rows: [9, 14] and [5]
    L = 24
    ids = torch.zeros(2, L, dtype=torch.long)
    ids[0, :23] = torch.cat(pieces[:2])
    ids[1, :5] = pieces[2]
    mask = torch.arange(L)[None, :] < torch.tensor([[23], [5]])
    positions = torch.zeros(2, L, dtype=torch.long)
    positions[0, :23] = torch.cat([torch.arange(9), torch.arange(14)])
    positions[1, :5] = torch.arange(5)
    types = torch.zeros(2, L, dtype=torch.long)
    packed, sentence = model.padded(ids, types, mask, None, positions, torch.tensor([9, 14, 5]))
    assert sentence is None
    starts = [(0, 0), (0, 9), (1, 0)]
    for piece, (row, start) in zip(pieces, starts, strict=True):
        alone, _ = model.padded(piece[None], torch.zeros(1, len(piece), dtype=torch.long))
        torch.testing.assert_close(packed[row, start : start + len(piece)], alone[0], atol=1e-5, rtol=1e-5)
    # without the piece layout the second piece would attend to the first: the logits would differ
    crossed, _ = model.padded(ids, types, mask, None, positions)
    assert not torch.allclose(crossed[0, 9:23], packed[0, 9:23], atol=1e-3)


def test_mlm_only_loss_has_no_sentence_term():
    logits, labels = torch.randn(5, V), torch.randint(0, V, (5,))
    total, mlm, sentence = pretraining_loss(logits, labels)
    assert sentence is None and torch.equal(total, mlm)
