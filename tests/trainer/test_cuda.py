"""The trainer on a CUDA GPU (marked `cuda`; skipped where torch finds none, so CI, on CPUs, skips them all):
bf16 steps of every preset (the modern-* family too), the varlen flash attention against the masked
reference, logits against Hugging Face's on the GPU (BERT, Megatron-BERT, ModernBERT), fused AdamW, a short
run that learns (BERT and modern-tiny), a resume, --compile without a recompilation per batch (mini and
modern-mini), and DDP over NCCL under torchrun.

    python -m pytest -m cuda tests/trainer/test_cuda.py      # on the GPU machine (see BENCHMARKS.md)
    CUDA_TESTS_DEVICE=cpu python -m pytest -m cuda tests/trainer/test_cuda.py   # the tests' own logic on CPU

What a GPU run can promise and what it cannot: flash attention's backward and the embedding's backward
add with atomics, so two GPU runs of the same seed differ in the last bits and drift apart slowly; a resume
continues the loss curve within that drift, not bit for bit (the CPU tests check bit-identity)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from tests.interop.helpers import random_model
from tests.trainer.test_hf_parity import FAMILIES, exported_pair, random_rows, their_logits
from tests.trainer.test_train import REPO, small_run
from tests.trainer.test_unpadded import compiled_graphs, varying_batches
from trainer.batch import forward_loss, to_device
from trainer.config import PRESET_NAMES, DataConfig, OptimConfig, preset
from trainer.data import ShardStream
from trainer.model import BertForPreTraining, Layout, attention, compile_model
from trainer.optim import build_optimizer
from trainer.run import main
from trainer.shards import open_shards

DEVICE = torch.device(os.environ.get("CUDA_TESTS_DEVICE", "cuda"))
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(DEVICE.type == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def bf16():
    return torch.autocast(DEVICE.type, dtype=torch.bfloat16)


def loader_batch(shards_dir, rows: int = 16, seed: int = 1) -> dict:
    stream = ShardStream(open_shards(shards_dir), "train", DataConfig(batch_size=rows), seed=seed)
    return to_device(next(iter(stream)), DEVICE)


def rel_error(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float((x.double() - ref.double()).norm() / ref.double().norm())


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_every_preset_takes_a_bf16_step(tiny_shards, name):
    """Forward and backward of a loader batch in bf16 autocast: a finite loss near ln(vocab) at init, and a
    finite gradient reaching every parameter."""
    shards = open_shards(tiny_shards)
    torch.manual_seed(0)
    model = BertForPreTraining(preset(name, vocab_size=shards.vocab.size)).to(DEVICE).train()
    batch = loader_batch(tiny_shards)
    _, _, loss, mlm, _ = forward_loss(model, batch, bf16)
    loss.backward()
    assert abs(float(mlm.detach()) - math.log(shards.vocab.size)) < 1.0, float(mlm.detach())
    for key, p in model.named_parameters():
        assert p.grad is not None and bool(p.grad.isfinite().all()), key
    assert sum(float(p.grad.abs().sum()) > 0 for p in model.parameters()) == len(list(model.parameters()))


def test_flash_attention_equals_the_masked_reference(tiny_shards):
    """The kernel `attention` picks for bf16 on CUDA (varlen flash over cu_seqlens) against SDPA on the
    padded grid with a per-sequence mask in fp32, forward and backward, on a real loader layout: relative
    errors at bf16's rounding (8 bits of mantissa: ~4e-3 per rounding; 2e-2 leaves room for the sums)."""
    batch = loader_batch(tiny_shards, rows=24)
    layout = Layout(batch["cu_seqlens"], batch["rows"], batch["slots"])
    T, heads, dim = len(batch["input_ids"]), 4, 64
    g = torch.Generator(device=DEVICE).manual_seed(0)
    q, k, v = (torch.randn(T, heads, dim, device=DEVICE, generator=g) for _ in range(3))
    grad = torch.randn(T, heads, dim, device=DEVICE, generator=g)
    real = batch["num_tokens"]  # the padding at the end is a sequence of its own: compare the real tokens
    grad[real:] = 0  # and no loss reads the padding's outputs (the reference gives them [CLS]'s place)
    outs, grads = [], []
    for dtype in (torch.bfloat16, torch.float32):
        leaves = [x.to(dtype).requires_grad_() for x in (q, k, v)]
        out = attention(*leaves, layout, 0.0)
        out.backward(grad.to(dtype))
        outs.append(out.float())
        grads.append([x.grad.float() for x in leaves])
    assert rel_error(outs[0][:real], outs[1][:real]) < 2e-2
    for fast, ref in zip(grads[0], grads[1], strict=True):
        assert rel_error(fast[:real], ref[:real]) < 2e-2


@pytest.mark.parametrize("family", ["bert", "megatron-bert", "modernbert"])
@pytest.mark.parametrize("padded", [False, True], ids=["no-padding", "padding"])
def test_logits_equal_transformers_on_the_gpu(tmp_path, padded, family):
    """Our model and Hugging Face's class of its family (sdpa where transformers has it: Megatron-BERT is
    eager only) with the same weights, on the GPU: fp32 logits within 1e-4 (TF32 off); in bf16 autocast
    each is compared with the fp32 logits, and ours (flash varlen; rotary in fp32 as theirs) may be off by
    no more than 1.5x Hugging Face's own bf16 error, plus 1e-3: the tolerance is bf16's own, as the peer
    measures it on the same weights and inputs."""
    torch.backends.cuda.matmul.allow_tf32 = False
    options, attns = FAMILIES[family]
    config = preset("tiny", vocab_size=2000, hidden_size=256, num_heads=4, num_layers=4, **options)
    ours, hf = exported_pair(random_model(config, seed=3), tmp_path, attns[0])
    ours, hf = ours.to(DEVICE), hf.to(DEVICE)
    B, L = 16, 128
    ids, types, mask, positions = (x.to(DEVICE) for x in random_rows(config.vocab_size, B, L, padded))
    results = {}
    for precision, context in (("fp32", contextlib.nullcontext), ("bf16", bf16)):
        with torch.no_grad(), context():
            mlm, nsp = ours.padded(ids, types, mask if padded else None, positions)
            their_mlm, their_nsp = their_logits(hf, ids, types, mask, config)
        nsps = (nsp.float(), their_nsp.float()) if config.sentence_head else (torch.zeros(1), torch.zeros(1))
        results[precision] = (mlm.float(), their_mlm.reshape(B * L, -1)[positions].float(), *nsps)
    ours32, hf32, nsp32, hf_nsp32 = results["fp32"]
    assert float((ours32 - hf32).abs().max()) < 1e-4 and float((nsp32 - hf_nsp32).abs().max()) < 1e-4
    ours16, hf16, _, _ = results["bf16"]
    ours_error, hf_error = rel_error(ours16, ours32), rel_error(hf16, hf32)
    print(f"bf16 relative error of the MLM logits: ours {ours_error:.2e}, Hugging Face {hf_error:.2e}")
    assert 0 < ours_error <= 1.5 * hf_error + 1e-3


def test_fused_adamw_steps_as_the_unfused_one(tiny_shards):
    """The trainer's optimizer on CUDA is fused AdamW (one kernel for all tensors): five fp32 steps take
    every weight where the for-each implementation takes it, within fp32 rounding."""
    shards = open_shards(tiny_shards)
    batch = loader_batch(tiny_shards)
    config = preset("mini", vocab_size=shards.vocab.size, dropout=0.0, attention_dropout=0.0)
    models = [random_model(config, seed=1).to(DEVICE).train() for _ in range(2)]
    optim = OptimConfig(lr=1e-3, weight_decay=0.01)
    optimizers = [build_optimizer(m, optim, fused=f) for m, f in zip(models, (True, False), strict=True)]
    assert optimizers[0].defaults["fused"] and not optimizers[1].defaults["fused"]
    for _ in range(5):
        for model, opt in zip(models, optimizers, strict=True):
            forward_loss(model, batch, contextlib.nullcontext)[2].backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    for (key, a), b in zip(models[0].named_parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=key)
    assert not torch.equal(models[0].mlm_head.dense.weight, random_model(config, seed=1).mlm_head.dense.weight
                           .to(DEVICE))


def cuda_run(shards, run_dir, *extra: str) -> list[str]:
    return ["--shards", str(shards), "--run-dir", str(run_dir), "--device", DEVICE.type, "--steps", "60",
            "--warmup-steps", "6", "--batch-size", "32", "--lr", "1e-3", "--log-every", "5",
            "--checkpoint-every", "30", "--set", "eval.every=0", "--set", "data.num_workers=2",
            *extra]


def metric_losses(run_dir) -> dict[int, float]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {r["step"]: r["loss"] for r in map(json.loads, lines) if "loss" in r}


def test_a_short_run_learns_and_a_resume_continues_its_curve(tiny_shards, tmp_path, monkeypatch):
    """`trainer.run` on the GPU (bf16, fused AdamW, pinned loader workers): 60 steps lower the loss by more
    than 1 nat. The same run stopped after its step-30 checkpoint and resumed ends on the same curve: each
    later logged loss within 0.05 of the uninterrupted run's (atomics make GPU runs differ in the last
    bits, so not bit for bit; two uninterrupted runs differ as much, as the print shows)."""
    whole = tmp_path / "whole"
    assert main(cuda_run(tiny_shards, whole)) == 0
    losses = metric_losses(whole)
    assert losses[60] < losses[5] - 1.0, losses  # ~8.3 at init; the unigram plateau is ~1.4 lower
    again = tmp_path / "again"
    assert main(cuda_run(tiny_shards, again)) == 0
    from trainer import train as train_module

    real_step = train_module.Trainer.train_step

    def stop_after_30(self):
        if self.step == 30:
            raise KeyboardInterrupt  # as a kill would, after the step-30 checkpoint was written
        return real_step(self)

    stopped = tmp_path / "stopped"
    monkeypatch.setattr(train_module.Trainer, "train_step", stop_after_30)
    assert main(cuda_run(tiny_shards, stopped)) != 0
    monkeypatch.setattr(train_module.Trainer, "train_step", real_step)
    assert main(cuda_run(tiny_shards, stopped, "--resume")) == 0
    resumed, twice = metric_losses(stopped), metric_losses(again)
    late = [s for s in losses if s > 30]
    drift = max(abs(twice[s] - losses[s]) for s in late)
    gap = max(abs(resumed[s] - losses[s]) for s in late)
    print(f"largest |loss difference| after step 30: resumed {gap:.4f}, a second whole run {drift:.4f}")
    assert gap < 0.05


@pytest.mark.parametrize("name", ["mini", "modern-mini"])
def test_compile_reuses_one_graph_for_batches_of_every_length(tiny_shards, name):
    """--compile on the GPU (inductor, bf16, flash varlen inside the graph, rotary's fp32 angles too):
    40 training batches whose row count, row length, token and prediction counts all vary compile at most
    twice, as `compile_model` says (inductor's first graph bounds the token count by rows x row length; the
    first batch whose tokens fill every row compiles once more); a third compilation fails the test
    (recompile_limit=2)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    shards = open_shards(tiny_shards)
    torch.manual_seed(0)
    model = BertForPreTraining(preset(name, vocab_size=shards.vocab.size)).to(DEVICE).train()
    graphs = CompileCounterWithBackend("inductor" if DEVICE.type == "cuda" else "aot_eager")
    compile_model(model, backend=graphs)
    lengths = set()
    with torch._dynamo.config.patch(recompile_limit=2, fail_on_recompile_limit_hit=True):
        for batch in varying_batches(shards.directory, shards.objective, shards.vocab.pad_id, 40):
            lengths.add(tuple(batch["rows"].shape))
            loss = forward_loss(model, to_device(batch, DEVICE), bf16)[2]
            loss.backward()
            assert bool(loss.isfinite())
    print(f"{len(lengths)} batch shapes, {compiled_graphs(graphs)} compilation(s)")
    assert len(lengths) > 20 and compiled_graphs(graphs) <= 2
    torch._dynamo.reset()


def test_the_modern_preset_learns_in_a_short_run(tiny_shards, tmp_path):
    """`trainer.run --preset modern-tiny` on the GPU (bf16, flash varlen with rotary positions, fused AdamW):
    60 steps lower the loss by more than 1 nat, as BERT's do."""
    run_dir = tmp_path / "modern"
    assert main(cuda_run(tiny_shards, run_dir, "--preset", "modern-tiny")) == 0
    losses = metric_losses(run_dir)
    assert losses[60] < losses[5] - 1.0, losses
    saved = json.loads((run_dir / "checkpoints" / "step-0000060" / "config.json").read_text())
    assert saved["model"]["position"] == "rotary"


def test_one_torchrun_process_trains_through_ddp_over_nccl(tiny_shards, tmp_path):
    """torchrun --nproc-per-node 1 on the GPU: the process joins an NCCL group, trains through DDP, and
    ends cleanly (no abort at shutdown)."""
    if DEVICE.type != "cuda":
        pytest.skip("NCCL needs CUDA")
    run_dir = tmp_path / "ddp"
    args = small_run(tiny_shards, run_dir, "schedule.steps=6", "checkpoint.every=6", "eval.every=6",
                     'device="cuda"')
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
               str(REPO / "tests" / "trainer" / "ddp_worker.py"), *args]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "1 rank(s) on cuda:0 (DDP over nccl)" in done.stdout, done.stdout[-2000:]
    summary = json.loads((run_dir / "summary-rank0.json").read_text())
    assert summary["steps"] == 6 and math.isfinite(summary["loss"])
