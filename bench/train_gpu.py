"""Training throughput on one CUDA GPU, ours beside Hugging Face `BertForPreTraining` (sdpa) on the same
batches, bf16 autocast, fused AdamW, gradient clipping; then the trainer itself on real shards: how long
its step waits for the loader, and where the step's time goes (torch.profiler).

    python bench/train_gpu.py --shards512 S512 --packed512 P512 --trainer-shards S128 --out results.md
    python bench/train_gpu.py --cpu-smoke            # a few steps of the tiny preset on CPU: does it run?

Cases (each prints sequences/s, real tokens/s and MFU, then ours/HF): BERT-base and BERT-large at length
128 on synthetic rows with BERT's length mix (90% full, 10% shorter; bench/step.py), batch 256; BERT-large
at 512 on real rows of an NSP shard directory (`--shards512`: real lengths, where unpadding matters), batch
32; BERT-base at 512 on packed MLM-only rows (`--packed512`, `none --pack`) against the padded NSP rows, in
real tokens/s. Ours runs eager, and compiled (`trainer.model.compile_model`) for `--compile-presets`; HF
eager (and compiled for base at 128 with `--hf-compile`). MFU: `trainer.model.flops_per_token` (6 x
non-embedding parameters, attention, the head at masked positions) over the bf16 matmul rate measured here;
HF gets the same credit. Results and commands: BENCHMARKS.md, "GPU training".

The trainer case (`--trainer-shards`): `Trainer.train_step` on real shards through its DataLoader, then on
the same batches replayed from memory; data wait = 1 - replay time / loader time. A profile of a few steps
counts the host-device syncs (`aten::_local_scalar_dense`, `cudaStreamSynchronize`, ...) and lists the top
kernels. Every case catches its own failure and says so, so one broken case never hides the others.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from step import PAD, VOCAB, hf_model, synthetic_rows  # noqa: E402

from corpusprep.interop.hf import PreTrainingCollator  # noqa: E402
from corpusprep.objectives import objective  # noqa: E402
from trainer.batch import collate, forward_loss, to_device  # noqa: E402
from trainer.config import load_config, preset  # noqa: E402
from trainer.dist import Dist  # noqa: E402
from trainer.model import BertForPreTraining, compile_model, flops_per_token  # noqa: E402
from trainer.train import Trainer  # noqa: E402

# what makes the host wait for the device (a value read back, or a copy to pageable memory)
SYNCS = ("aten::_local_scalar_dense", "aten::item", "aten::nonzero", "cudaStreamSynchronize",
         "cudaDeviceSynchronize", "Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pinned)")
LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def batches_of(tables: list[pa.Table], spec: str) -> tuple[list[dict], list[dict]]:
    """(ours, Hugging Face's): the same rows, unpadded by the trainer's collate and padded by HF's."""
    packed = objective(spec).packs
    hf = PreTrainingCollator(PAD, 8, nsp=not packed, packed=packed)
    ours = [pin(collate(t, PAD, 8, objective(spec))) for t in tables]
    return ours, [pin(hf(t.to_pylist())) for t in tables]


def pin(batch: dict) -> dict:
    """Pinned host memory, as the trainer's DataLoader hands batches over: the copy to the GPU is async."""
    pinned = torch.cuda.is_available()
    return {k: v.pin_memory() if pinned and torch.is_tensor(v) else v for k, v in batch.items()}


def synthetic(n: int, batch_size: int, length: int) -> list[pa.Table]:
    return [synthetic_rows(batch_size, length, packed=False, seed=i) for i in range(n)]


def shard_tables(directory: Path, n: int, batch_size: int, seed: int = 0) -> list[pa.Table]:
    """`n` batches of real rows, drawn at random from a shard directory's training shards."""
    table = pa.concat_tables(pq.read_table(p) for p in sorted((directory / "train").glob("*.parquet")))
    order = np.random.default_rng(seed).permutation(len(table))
    if len(order) < n * batch_size:
        order = np.resize(order, n * batch_size)
    return [table.take(order[i * batch_size : (i + 1) * batch_size]) for i in range(n)]


def ours_step(model, b):
    return forward_loss(model, b, contextlib.nullcontext)[2]  # inside timed()'s autocast


def hf_step(model, b):
    return model(**b).loss


def timed(model, step, batches, warmup: int, device, bf16: bool) -> float:
    """Seconds for the batches after `warmup` steps: the trainer's step (forward, backward, clip, fused
    AdamW), with no host read inside."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)

    def run(b):
        b = to_device(b, device)
        with autocast:
            loss = step(model, b)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for b in batches[:warmup]:
        run(b)
    sync(device)
    start = time.perf_counter()
    for b in batches[warmup:]:
        run(b)
    sync(device)
    return time.perf_counter() - start


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device) -> float:
    """Measured dense bf16 matmul FLOP/s (8192^3, random data), the MFU denominator."""
    if device.type != "cuda":
        return float("nan")
    a, b = (torch.randn(8192, 8192, device=device, dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    sync(device)
    n, start = 20, time.perf_counter()
    for _ in range(n):
        a @ b
    sync(device)
    return n * 2 * 8192**3 / (time.perf_counter() - start)


def case(title: str, name: str, tables: list[pa.Table], spec: str, contenders: list[str], args, env) -> dict:
    """One model size on one set of batches: each contender's seq/s, tokens/s, MFU; returns tokens/s."""
    device, peak = env["device"], env["peak"]
    ours_batches, hf_batches = batches_of(tables, spec)
    timed_batches = ours_batches[args.warmup :]
    seqs = sum(len(b["rows"]) for b in timed_batches)
    tokens = sum(b["num_tokens"] for b in timed_batches)
    config = preset(name, vocab_size=VOCAB, objective=spec)
    flops = flops_per_token(config, round(tokens / seqs))
    say(f"\n{title}: {seqs} timed sequences, {tokens / seqs:.1f} real tokens each")
    rates = {}
    for label in contenders:
        try:
            torch.manual_seed(0)
            hf = label.startswith("HF")
            model = (hf_model(config, packed=objective(spec).packs) if hf else BertForPreTraining(config))
            model = model.to(device).train()
            if "compiled" in label:
                model = torch.compile(model) if hf else compile_model(model)
            started = time.perf_counter()
            seconds = timed(model, hf_step if hf else ours_step, hf_batches if hf else ours_batches,
                            args.warmup, device, env["bf16"])
            rates[label] = tokens / seconds
            say(f"| {title} | {label} | {seqs / seconds:,.0f} | {tokens / seconds:,.0f} | "
                f"{rates[label] * flops / peak:.1%} | {time.perf_counter() - started - seconds:.0f} s |")
        except Exception as error:  # one case's failure is reported, and the others still run
            say(f"| {title} | {label} | failed: {type(error).__name__}: {str(error).splitlines()[0][:150]} |")
            traceback.print_exc()
        finally:
            model = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
    for label in [k for k in rates if not k.startswith("HF")]:
        for peer in [k for k in rates if k.startswith("HF")]:
            say(f"{title}: {label} / {peer} = {rates[label] / rates[peer]:.2f}x")
    return rates


def trainer_case(shards: Path, args, env) -> None:
    """The trainer's own step on real shards: loader vs replay (data wait), and a profile of the step."""
    device = env["device"]
    with tempfile.TemporaryDirectory() as run_dir:
        overrides = [f'data.shards="{shards}"', f'logging.run_dir="{run_dir}"', f'device="{device.type}"',
                     f"data.batch_size={args.trainer_batch}", f'model.preset="{args.trainer_preset}"',
                     f"compile={'true' if args.compile_trainer else 'false'}", "data.num_workers=4",
                     "schedule.steps=1000000", "logging.every=1000000", "checkpoint.every=1000000",
                     "eval.every=0"]
        trainer = Trainer(load_config(None, overrides), Dist(), device)
        n = args.trainer_steps
        for _ in range(args.warmup + 2):
            trainer.train_step()
        sync(device)
        kept, source = [], trainer.batches
        trainer.batches = (kept.append(b) or b for b in source)  # the loader's batches, kept for the replay
        start = time.perf_counter()
        for _ in range(n):
            trainer.train_step()
        sync(device)
        loader_s = time.perf_counter() - start
        trainer.batches = itertools.cycle(kept)
        start = time.perf_counter()
        for _ in range(n):
            trainer.train_step()
        sync(device)
        replay_s = time.perf_counter() - start
        seqs = sum(len(b["rows"]) for b in kept)
        say(f"\ntrainer ({args.trainer_preset}, batch {args.trainer_batch}, {shards.name}, compile "
            f"{args.compile_trainer}): {seqs / loader_s:,.0f} seq/s from the loader, {seqs / replay_s:,.0f} "
            f"replayed; data wait {max(0.0, 1 - replay_s / loader_s):.1%} of step time")
        profile(trainer, device, args.out)


# kernel names -> what they do, for the profile's summary (first match wins)
KERNELS = (("attention", ("flash",)), ("matmul", ("nvjet", "gemm", "cutlass", "xmma", "cublas")),
           ("optimizer", ("adam", "multi_tensor")), ("fused by inductor", ("triton",)))


def profile(trainer: Trainer, device, out: Path | None, steps: int = 5) -> None:
    """Profile `steps` train_step calls: the host-device syncs in them, the GPU's busy time by kind of
    kernel against the wall time, and the top operators (to `out`.profile.txt)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    start = time.perf_counter()
    with torch_profile(activities=activities) as prof:
        for _ in range(steps):
            trainer.train_step()
        sync(device)
    wall_us = (time.perf_counter() - start) * 1e6
    events = prof.key_averages()
    syncs = {e.key: e.count for e in events if e.key in SYNCS}
    say(f"profile of {steps} train_step calls: host-device syncs {syncs or 'none'} (the last sync is ours)")
    kinds: dict[str, float] = {}
    for e in events:  # kernels: device time of their own, no CPU time
        busy = getattr(e, "self_device_time_total", 0) or getattr(e, "self_cuda_time_total", 0)
        if busy > 0 and e.self_cpu_time_total == 0:
            kind = next((k for k, signs in KERNELS if any(x in e.key.lower() for x in signs)), "other")
            kinds[kind] = kinds.get(kind, 0.0) + busy
    if kinds:
        total = sum(kinds.values())
        shares = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
        say(f"GPU busy {total / wall_us:.0%} of the wall time (profiler on); kernel time: {shares}")
    sort = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    table = events.table(sort_by=sort, row_limit=30, max_name_column_width=70)
    print(table)
    if out:
        out.with_suffix(".profile.txt").write_text(table)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="*", default=["base", "large"], help="at length 128 (none: skip)")
    p.add_argument("--batch-size", type=int, default=256, help="at length 128")
    p.add_argument("--batch-size-512", type=int, default=32)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--shards512", type=Path, help="NSP shards of length 512: large at real lengths")
    p.add_argument("--packed512", type=Path, help="`none --pack` shards of length 512, vs --shards512")
    p.add_argument("--trainer-shards", type=Path, help="shards for the trainer case (data wait, profile)")
    p.add_argument("--trainer-preset", default="base")
    p.add_argument("--trainer-batch", type=int, default=256)
    p.add_argument("--trainer-steps", type=int, default=30)
    p.add_argument("--compile-trainer", action="store_true")
    p.add_argument("--no-compile", action="store_true", help="skip ours compiled")
    p.add_argument("--compile-presets", nargs="+", default=["base"], help="where ours also runs compiled")
    p.add_argument("--hf-compile", action="store_true", help="Hugging Face's model compiled too (base)")
    p.add_argument("--out", type=Path, help="also write the table here (markdown)")
    p.add_argument("--cpu-smoke", action="store_true", help="tiny preset on CPU, fp32, a few steps")
    args = p.parse_args()
    if args.cpu_smoke:
        args.presets, args.batch_size, args.batch_size_512, args.steps, args.warmup = ["tiny"], 4, 2, 2, 1
        args.trainer_preset, args.trainer_batch, args.trainer_steps = "tiny", 4, 2
        env = {"device": torch.device("cpu"), "bf16": False}
    else:
        if not torch.cuda.is_available():
            sys.exit("error: no CUDA device (use --cpu-smoke to check the script on CPU)")
        env = {"device": torch.device("cuda"), "bf16": True}
    device = env["device"]
    env["peak"] = matmul_peak(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    say(f"command: python {' '.join(sys.argv)}")
    say(f"device: {name}, torch {torch.__version__}, measured bf16 matmul {env['peak'] / 1e12:.0f} TFLOP/s; "
        f"{args.steps} timed steps after {args.warmup}")
    say("\n| case | model | seq/s | real tokens/s | MFU | compile + warm-up |\n|---|---|---:|---:|---:|---:|")
    n = args.warmup + args.steps
    compiled = [] if args.no_compile else ["ours compiled"]
    small = args.cpu_smoke
    for preset_name in args.presets:
        extra = ["HF sdpa compiled"] if preset_name == "base" and args.hf_compile else []
        ours = ["ours", *compiled] if preset_name in args.compile_presets else ["ours"]
        case(f"{preset_name} L128", preset_name, synthetic(n, args.batch_size, 128), "nsp",
             [*ours, "HF sdpa", *extra], args, env)
    if args.shards512:
        tables = shard_tables(args.shards512, n, args.batch_size_512)
        ours = ["ours", *compiled] if "large" in args.compile_presets else ["ours"]
        case("large L512 real", "tiny" if small else "large", tables, "nsp", [*ours, "HF sdpa"], args, env)
        if args.packed512:
            padded = case("base L512 padded rows", "tiny" if small else "base", tables, "nsp", ["ours"], args,
                          env)
            packed_tables = shard_tables(args.packed512, n, args.batch_size_512)
            packed = case("base L512 packed rows", "tiny" if small else "base", packed_tables, "none",
                          ["ours", "HF sdpa"], args, env)
            if "ours" in packed and "ours" in padded:
                say(f"packed / padded rows, real tokens/s: {packed['ours'] / padded['ours']:.2f}x")
    if args.trainer_shards:
        try:
            trainer_case(args.trainer_shards, args, env)
        except Exception as error:
            say(f"trainer case failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
            traceback.print_exc()
    if args.out:
        args.out.write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
