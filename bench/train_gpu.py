"""Training throughput on one CUDA GPU: our BERT beside Hugging Face `BertForPreTraining` (sdpa), bf16, same
batches, for BERT-base and BERT-large at length 128. Prints sequences/s, real (non-padding) tokens/s and
MFU against the GPU's bf16 matmul rate measured here, plus our/HF ratios.

    python bench/train_gpu.py                        # base + large, batch 64, 20 timed steps
    python bench/train_gpu.py --presets base --batch-size 128 --compile
    python bench/train_gpu.py --cpu-smoke            # 2 steps of the tiny preset on CPU: does it run?

MFU counts 6 x non-embedding parameters per token, plus attention (12 x layers x length x hidden) and the
masked-position head (15% of tokens), as `trainer.model.flops_per_token`; HF gets the same credit (its
extra work projecting every position to the vocab is its own waste). Batches are bench/step.py's synthetic
rows with BERT's length mix (90% full length, 10% shorter): ours unpadded by `trainer.data.collate`, as the
trainer's loader hands them over, HF's padded to a multiple of 8 by `PreTrainingCollator`. (The CPU
comparison of the same steps, eager and compiled, is bench/step.py.)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from step import PAD, VOCAB, hf_model, synthetic_rows  # noqa: E402

from corpusprep.interop.hf import PreTrainingCollator  # noqa: E402
from corpusprep.objectives import objective  # noqa: E402
from trainer.config import preset  # noqa: E402
from trainer.data import collate  # noqa: E402
from trainer.model import BertForPreTraining, compile_model, flops_per_token  # noqa: E402
from trainer.train import forward_loss, to_device  # noqa: E402


def make_batches(n: int, batch_size: int, max_len: int) -> tuple[list[dict], list[dict]]:
    """(ours, Hugging Face's): the same rows, unpadded by the trainer's collate and padded by HF's."""
    tables = [synthetic_rows(batch_size, max_len, packed=False, seed=i) for i in range(n)]
    ours = [collate(t, PAD, 8, objective("nsp")) for t in tables]
    return ours, [PreTrainingCollator(PAD, 8)(t.to_pylist()) for t in tables]


def ours_step(model, b):
    return forward_loss(model, b, contextlib.nullcontext)[2]  # inside timed()'s autocast


def hf_step(model, b):
    return model(**b).loss


def timed(model, step, batches, warmup: int, device, bf16: bool) -> float:
    """Seconds for the batches after `warmup` steps (forward, backward, fused AdamW)."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)

    def run(b):
        b = to_device(b, device)
        with autocast:
            loss = step(model, b)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for b in batches[:warmup]:
        run(b)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for b in batches[warmup:]:
        run(b)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def matmul_peak(device) -> float:
    """Measured dense bf16 matmul FLOP/s (8192^3), the MFU denominator."""
    if device.type != "cuda":
        return float("nan")
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    n, start = 20, time.perf_counter()
    for _ in range(n):
        a @ a
    torch.cuda.synchronize()
    return n * 2 * 8192**3 / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["base", "large"])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", action="store_true", help="torch.compile our model")
    p.add_argument("--no-hf", action="store_true", help="skip the Hugging Face peer")
    p.add_argument("--cpu-smoke", action="store_true", help="2 steps of the tiny preset on CPU, fp32")
    args = p.parse_args()
    if args.cpu_smoke:
        args.presets, args.batch_size, args.steps, args.warmup = ["tiny"], 4, 2, 1
        device, bf16 = torch.device("cpu"), False
    else:
        if not torch.cuda.is_available():
            sys.exit("error: no CUDA device (use --cpu-smoke to check the script on CPU)")
        device, bf16 = torch.device("cuda"), True
        torch.backends.cuda.matmul.allow_tf32 = True
    peak = matmul_peak(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"command: python {' '.join(sys.argv)}")
    print(f"device: {name}, measured bf16 matmul {peak / 1e12:.0f} TFLOP/s; batch {args.batch_size}, "
          f"length {args.seq_len}, {args.steps} timed steps after {args.warmup}")  # fmt: skip
    ours_batches, hf_batches = make_batches(args.warmup + args.steps, args.batch_size, args.seq_len)
    timed_batches = ours_batches[args.warmup :]
    seqs = sum(len(b["rows"]) for b in timed_batches)
    tokens = sum(b["num_tokens"] for b in timed_batches)
    print(f"{'model':<22}{'seq/s':>10}{'tokens/s':>12}{'MFU':>8}")
    for name in args.presets:
        config = preset(name, vocab_size=VOCAB)
        flops = flops_per_token(config, round(tokens / seqs))
        rates = {}
        contenders = [("ours", lambda c=config: BertForPreTraining(c), ours_step, ours_batches)]
        if not args.no_hf:
            contenders.append(("HF sdpa", lambda c=config: hf_model(c, packed=False), hf_step, hf_batches))
        for label, build, step, batches in contenders:
            torch.manual_seed(0)
            model = build().to(device).train()
            if args.compile and label == "ours":
                model = compile_model(model)
            seconds = timed(model, step, batches, args.warmup, device, bf16)
            rates[label] = tokens / seconds
            mfu = rates[label] * flops / peak
            print(f"{name + ' ' + label:<22}{seqs / seconds:>10,.1f}{tokens / seconds:>12,.0f}{mfu:>8.1%}")
            del model
            if device.type == "cuda":
                torch.cuda.empty_cache()
        if "HF sdpa" in rates:
            print(f"{name}: ours / HF = {rates['ours'] / rates['HF sdpa']:.2f}x")


if __name__ == "__main__":
    main()
