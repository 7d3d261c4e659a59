"""The training step as a GPU wants it: batches unpadded in the loader, a model that never reads a tensor on
the host, forward and backward compiled as one graph that a run over real shards reuses.

Compilation here uses the `aot_eager` backend: it traces forward and backward exactly as inductor receives
them (a graph break or a recompilation is decided there), without generating C++."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend
from torch.utils._python_dispatch import TorchDispatchMode

from corpusprep.mask.examples import list_parts
from tests.trainer.conftest import build_shards, padded_rows
from trainer.data import TOKEN_MULTIPLE, ShardStream, collate, open_shards
from trainer.model import BertForPreTraining, compile_model, preset, unpad
from trainer.train import MODEL_INPUTS, forward_loss


@pytest.fixture(scope="module")
def shards_of(tiny_shards, demo_text, tmp_path_factory):
    """Shards of each objective: nsp (the session's), sop, and none packed (rows of several pieces)."""
    made = {"nsp": tiny_shards}

    def get(name: str):
        if name not in made:
            out = tmp_path_factory.mktemp(f"{name}_shards")
            made[name] = build_shards(out, demo_text, objective=name, num_shards=2)
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
            np.split(pieces, starts[1:-1]), lengths, strict=True)])  # fmt: skip
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
                 pieces if name == "none" else None)  # fmt: skip
    for key in ("input_ids", "token_type_ids", "position_ids", "slots"):
        assert torch.equal(flat[key][:n], b[key][:n]), key
    assert torch.equal(flat["rows"], b["rows"]) and len(flat["input_ids"]) == n + 1
    assert torch.equal(flat["cu_seqlens"][:-1], b["cu_seqlens"][: len(pieces) + 1])


class HostReads(TorchDispatchMode):
    """Records the operators that make the host wait for the device: a value read (`.item()`, `bool()`,
    `int()`), or a shape that depends on data (`nonzero`, masked selection, `unique`, ...)."""

    SYNCS = {"_local_scalar_dense", "nonzero", "masked_select", "is_nonzero", "equal", "unique_dim",
             "_unique2", "unique_consecutive", "repeat_interleave"}  # fmt: skip

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in self.SYNCS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name", ["nsp", "sop", "none"])
def test_a_training_step_never_reads_the_device_on_the_host(shards_of, name):
    """Forward, loss and backward of a loader batch, dropout on: no operator that syncs with the device
    (the step before this change called nonzero and read the mask with bool() in every forward)."""
    shards = open_shards(shards_of(name))
    batch = next(iter(ShardStream(shards, "train", 16, seed=1)))
    torch.manual_seed(0)
    model = BertForPreTraining(preset("tiny", vocab_size=shards.vocab.size, objective=name)).train()
    with HostReads() as reads:
        forward_loss(model, batch, contextlib.nullcontext)[2].backward()
    assert reads.seen == []
    with HostReads() as reads:  # the recorder sees them: Hugging Face's padded convention does sync
        model.padded(**{k: v for k, v in padded_rows(batch).items() if k in ("input_ids", "token_type_ids",
                                                                            "attention_mask")})  # fmt: skip
    assert any("nonzero" in op for op in reads.seen)


@pytest.fixture
def fresh_compiler():
    """Compiled code is cached per function, not per model: each test starts with none."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def small_model(vocab_size: int, objective: str) -> BertForPreTraining:
    torch.manual_seed(0)
    config = preset("tiny", vocab_size=vocab_size, objective=objective, num_layers=1, hidden_size=32,
                    num_heads=2, dropout=0.0, attention_dropout=0.0)  # fmt: skip
    return BertForPreTraining(config).train()


@pytest.mark.slow  # ~50 s each on 2 busy cores (~20 s idle): one compilation, 300 passes of a 1-layer model
@pytest.mark.parametrize("name", ["nsp", "none"])  # sop's graph is nsp's: the same heads, another label
def test_a_run_over_real_shards_compiles_one_graph(shards_of, name, fresh_compiler):
    """fullgraph=True, so any graph break raises: forward and backward compile as one graph, which gives
    eager's loss and gradients, and which 300 training batches of real shards, of varying token, prediction
    and sequence counts, all reuse; evaluation (eval mode, no grad: a graph of its own) reuses one too, down
    to its short last batch."""
    shards = open_shards(shards_of(name))
    batches = ShardStream(shards, "train", 16, seed=3)
    eager, model = small_model(shards.vocab.size, name), small_model(shards.vocab.size, name)
    graphs = CompileCounterWithBackend("aot_eager")
    compile_model(model, backend=graphs)

    def compiled() -> int:
        return len([g for g in graphs.graphs if len(g.graph.nodes)])

    first = next(iter(batches))
    for m in (eager, model):
        forward_loss(m, first, contextlib.nullcontext)[2].backward()
    for (key, a), b in zip(eager.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6, msg=key)
    shapes = set()
    for batch in itertools.islice(batches, 300):
        shapes.add(tuple(tuple(batch[k].shape) for k in MODEL_INPUTS))
        forward_loss(model, batch, contextlib.nullcontext)
    assert len(shapes) > 20 and compiled() == 1, (len(shapes), compiled())
    model.eval()
    with torch.no_grad():
        for batch in ShardStream(shards, "validation", 40, shuffle=False, loop=False):
            forward_loss(model, batch, contextlib.nullcontext)
    assert compiled() == 2
