"""The training step as a GPU wants it: batches unpadded in the loader, a model that never reads a tensor on
the host, forward and backward compiled as one graph that a run over real shards reuses.

Compilation here uses the `aot_eager` backend: it traces forward and backward exactly as inductor receives
them (a graph break or a recompilation is decided there), without generating C++."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch.utils._python_dispatch import TorchDispatchMode

from corpusprep.mask.examples import list_parts
from tests.trainer.conftest import build_shards, padded_rows
from trainer.batch import MODEL_INPUTS, TOKEN_MULTIPLE, collate, forward_loss
from trainer.config import MODERN, DataConfig, preset
from trainer.data import ShardStream
from trainer.model import BertForPreTraining, compile_model, unpad
from trainer.shards import open_shards


@pytest.fixture(scope="module")
def shards_of(tiny_shards, demo_text, tmp_path_factory):
    """Shards of each objective: nsp (the session's), sop, and none packed (rows of several pieces); the two
    others from a third of the demo text (~1,000 rows a shard, built in a few seconds)."""
    made = {"nsp": tiny_shards}
    lines = demo_text.read_text().splitlines(keepends=True)
    text = tmp_path_factory.mktemp("third") / "demo.jsonl"
    text.write_text("".join(lines[: len(lines) // 3]))

    def get(name: str):
        if name not in made:
            out = tmp_path_factory.mktemp(f"{name}_shards")
            made[name] = build_shards(out, text, objective=name, num_shards=2)
        return made[name]

    return get


def first_table(shards_dir, rows: int = 24):
    return pq.read_table(sorted((shards_dir / "train").glob("*.parquet"))[0]).slice(0, rows)


@pytest.mark.parametrize("name", ["nsp", "none"])
def test_a_batch_is_its_rows_unpadded(shards_of, name):
    """collate's layout, against the shard rows themselves: the real tokens concatenated, then [PAD] up to a
    multiple of TOKEN_MULTIPLE; one sequence per row (per piece of a packed row), positions restarting in
    each, the padding in sequences no longer than a row; rows and slots inverse to each other."""
    shards = open_shards(shards_of(name))
    table = first_table(shards.directory)
    b = collate(table, shards.vocab.pad_id, 8, shards.objective)
    offsets, ids = list_parts(table["input_ids"])
    n, T, (R, L) = len(ids), len(b["input_ids"]), b["rows"].shape
    lengths = np.diff(offsets)
    assert b["num_tokens"] == n and T % TOKEN_MULTIPLE == 0 and n < T <= n + TOKEN_MULTIPLE
    assert b["input_ids"][:n].tolist() == ids.tolist() and (b["input_ids"][n:] == shards.vocab.pad_id).all()
    assert table.num_rows == R and L % 8 == 0 and L - 8 < lengths.max() <= L
    cu = b["cu_seqlens"]
    sequences = np.diff(cu.numpy())
    assert cu.dtype == torch.int32 and cu[0] == 0 and cu[-1] == T and (sequences >= 1).all()
    assert (sequences <= L).all()  # flash attention's max_seqlen is L
    if name == "none":
        starts, pieces = list_parts(table["document_starts"])
        assert len(pieces) > R  # packed: more pieces than rows
        expected = np.concatenate([np.diff([*p, n_]) for p, n_ in zip(
            np.split(pieces, starts[1:-1]), lengths, strict=True)])
    else:
        expected = lengths
    assert sequences[: len(expected)].tolist() == expected.tolist() and cu[len(expected)] == n
    seq = np.repeat(np.arange(len(sequences)), sequences)
    assert (b["position_ids"][:n].numpy() == np.arange(n) - cu.numpy()[seq[:n]]).all()
    flat_rows = b["rows"].reshape(-1)
    assert (flat_rows[b["slots"][:n]] == torch.arange(n)).all()  # slots then rows: back to each token
    assert int((flat_rows < n).sum()) == n and (flat_rows[flat_rows >= n] == n).all()  # past the end: padding
    pos_offsets, positions = list_parts(table["masked_lm_positions"])
    row = np.repeat(np.arange(R), np.diff(pos_offsets))
    assert b["mlm_positions"].tolist() == (offsets[row] + positions).tolist()
    assert b["mlm_labels"].tolist() == list_parts(table["masked_lm_ids"])[1].tolist()
    assert ("sentence_labels" in b) == (name != "none")


@pytest.mark.parametrize("name", ["nsp", "none"])
def test_padded_rows_unpad_to_the_loaders_layout(shards_of, name):
    """model.unpad (for Hugging Face's padded calling convention) lays rows out as the loader does."""
    shards = open_shards(shards_of(name))
    b = collate(first_table(shards.directory), shards.vocab.pad_id, 8, shards.objective)
    p, n = padded_rows(b), b["num_tokens"]
    pieces = torch.diff(b["cu_seqlens"]).long()[: int((b["cu_seqlens"] < n).sum())]
    flat = unpad(p["input_ids"], p["token_type_ids"], p["attention_mask"], p["position_ids"],
                 pieces if name == "none" else None)
    for key in ("input_ids", "token_type_ids", "position_ids", "slots"):
        assert torch.equal(flat[key][:n], b[key][:n]), key
    assert torch.equal(flat["rows"], b["rows"]) and len(flat["input_ids"]) == n + 1
    assert torch.equal(flat["cu_seqlens"][:-1], b["cu_seqlens"][: len(pieces) + 1])


def test_each_piece_of_a_packed_loader_batch_gets_its_own_logits(shards_of):
    """Packed rows (objective none) as the loader hands them: every piece's MLM logits are those the piece
    gets alone, as a row of its own (attention and position ids stay inside it)."""
    shards = open_shards(shards_of("none"))
    b = collate(first_table(shards.directory, 6), shards.vocab.pad_id, 8, shards.objective)
    torch.manual_seed(0)
    model = BertForPreTraining(preset("tiny", vocab_size=shards.vocab.size, objective="none")).eval()
    cu, n = b["cu_seqlens"].tolist(), b["num_tokens"]
    pieces = [(start, end) for start, end in itertools.pairwise(cu) if end <= n]
    assert len(pieces) > 6  # rows of several pieces
    with torch.no_grad():
        logits, _ = model(**{k: b[k] for k in MODEL_INPUTS if k != "mlm_positions"})  # [T, V]: every token
        for start, end in pieces:
            alone, _ = model.padded(b["input_ids"][None, start:end], b["token_type_ids"][None, start:end])
            torch.testing.assert_close(logits[start:end], alone[0], atol=1e-5, rtol=1e-5)


class HostReads(TorchDispatchMode):
    """Records the operators that make the host wait for the device: a value read (`.item()`, `bool()`,
    `int()`), or a shape that depends on data (`nonzero`, masked selection, `unique`, ...)."""

    SYNCS = {"_local_scalar_dense", "nonzero", "masked_select", "is_nonzero", "equal", "unique_dim",
             "_unique2", "unique_consecutive", "repeat_interleave"}

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in self.SYNCS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


# (objective, model options): each objective with BERT, and packed rows (none) with ModernBERT's options
STEPS = {"nsp": ("nsp", {}), "sop": ("sop", {}), "none": ("none", {}), "modern": ("none", MODERN)}


@pytest.mark.parametrize("case", list(STEPS))
def test_a_training_step_never_reads_the_device_on_the_host(shards_of, case):
    """Forward, loss and backward of a loader batch, dropout on: no operator that syncs with the device
    (the step before this change called nonzero and read the mask with bool() in every forward)."""
    name, options = STEPS[case]
    shards = open_shards(shards_of(name))
    batch = next(iter(ShardStream(shards, "train", DataConfig(batch_size=16), seed=1)))
    torch.manual_seed(0)
    config = preset("tiny", vocab_size=shards.vocab.size, objective=name, **options)
    model = BertForPreTraining(config).train()
    with HostReads() as reads:
        forward_loss(model, batch, contextlib.nullcontext)[2].backward()
    assert reads.seen == []
    with HostReads() as reads:  # the recorder sees them: Hugging Face's padded convention does sync
        model.padded(**{k: v for k, v in padded_rows(batch).items() if k in ("input_ids", "token_type_ids",
                                                                            "attention_mask")})
    assert any("nonzero" in op for op in reads.seen)


@pytest.fixture
def fresh_compiler():
    """Compiled code is cached per function, not per model: each test starts with none."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def small_model(vocab_size: int, objective: str, **options) -> BertForPreTraining:
    torch.manual_seed(0)
    config = preset("tiny", vocab_size=vocab_size, objective=objective, num_layers=1, hidden_size=32,
                    num_heads=2, dropout=0.0, attention_dropout=0.0, **options)
    return BertForPreTraining(config).train()


def compiled_graphs(counter: CompileCounterWithBackend) -> int:
    return len([g for g in counter.graphs if len(g.graph.nodes)])  # (an empty frame is no graph)


@pytest.mark.slow  # ~8 s idle (all cases): torch.compile
@pytest.mark.parametrize("case", list(STEPS))
def test_forward_and_backward_compile_as_one_graph(shards_of, case, fresh_compiler):
    """fullgraph=True, so any graph break raises: the forward and backward of each objective's step (and of
    ModernBERT's options: rotary, gated MLP, no biases, the embedding norm) compile as one graph (traced by
    AOTAutograd, as inductor would take it) that gives eager's loss and gradients."""
    name, options = STEPS[case]
    shards = open_shards(shards_of(name))
    batch = next(iter(ShardStream(shards, "train", DataConfig(batch_size=16), seed=3)))
    eager, model = (small_model(shards.vocab.size, name, **options) for _ in range(2))
    graphs = CompileCounterWithBackend("aot_eager")
    compile_model(model, backend=graphs)
    losses = [forward_loss(m, batch, contextlib.nullcontext)[2] for m in (eager, model)]
    for loss in losses:
        loss.backward()
    assert compiled_graphs(graphs) == 1
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-6, atol=1e-6)
    for (key, a), b in zip(eager.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6, msg=key)


def varying_batches(shards_dir, spec, pad_id: int, count: int, seed: int = 0) -> Iterator[dict]:
    """`count` loader batches of one shard's rows in which every size varies: 2-24 rows, none longer than
    the length of a row drawn at random (so the row length L varies too), hence the token, sequence and
    prediction counts."""
    table = pq.read_table(sorted((shards_dir / "train").glob("*.parquet"))[0])
    lengths = np.diff(list_parts(table["input_ids"])[0])
    rng = np.random.default_rng(seed)
    for _ in range(count):
        # at least two rows fit: a one-row batch is the stated extra compilation, not what this measures
        fitting = np.flatnonzero(lengths <= max(rng.choice(lengths), np.partition(lengths, 1)[1]))
        chosen = rng.choice(fitting, min(int(rng.integers(2, 25)), len(fitting)), replace=False)
        yield collate(table.take(chosen), pad_id, 8, spec)


@pytest.mark.slow  # ~15-20 s of CPU each: 300 training steps through the compiled graph, one compilation
@pytest.mark.parametrize("case", ["nsp", "none", "modern"])  # sop's graph is nsp's: another label
def test_batches_of_varying_lengths_reuse_one_graph(shards_of, case, fresh_compiler):
    """Every size of the batch is symbolic (compile_model's dynamic=True): 300 training batches of real
    shard rows, of varying rows, row length, tokens, sequences and predictions, reuse the graph the first
    compiled, a recompilation being a failure; evaluation (eval mode, no grad: a graph of its own) compiles
    once more. So a run compiles twice. (A batch of a single row would compile once more: torch specialises
    sizes 0 and 1.) Rotary positions add no symbol of their own: their angles follow the token count."""
    name, options = STEPS[case]
    shards = open_shards(shards_of(name))
    model = small_model(shards.vocab.size, name, **options)
    graphs = CompileCounterWithBackend("aot_eager")
    compile_model(model, backend=graphs)
    shapes = set()
    with torch._dynamo.config.patch(recompile_limit=1, fail_on_recompile_limit_hit=True):
        for batch in varying_batches(shards.directory, shards.objective, shards.vocab.pad_id, 300):
            shapes.add(tuple(tuple(batch[k].shape) for k in MODEL_INPUTS))
            forward_loss(model, batch, contextlib.nullcontext)[2].backward()
    assert len(shapes) > 200 and len({s[4][1] for s in shapes}) > 1, len(shapes)  # rows' length L varies
    assert compiled_graphs(graphs) == 1
    model.eval()
    with torch.no_grad():
        for batch in ShardStream(shards, "validation", DataConfig(batch_size=40), shuffle=False, loop=False):
            forward_loss(model, batch, contextlib.nullcontext)
    assert compiled_graphs(graphs) == 2
