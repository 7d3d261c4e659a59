"""Attention alone over one unpadded batch, by kernel: how `trainer.model.attention` was chosen.

    .venv/bin/python bench/attention.py                   # CPU: lengths 128 and 512, BERT's mix and packed
    python bench/attention.py --device cuda               # a GPU: flash varlen too, in bf16

Kernels, on the very batch `trainer.batch.collate` builds (bench/step.py's synthetic rows, 4096 tokens):
- `sdpa rows`: the reference (and the CPU path): q, k, v gathered into the rows' [R, A, L, D] grid, SDPA with
  the same-sequence mask [R, 1, L, L], each token taken back out;
- `sdpa rows, key mask`: the same with a [R, 1, 1, L] key-padding mask (what the model used for unpacked rows
  before; wrong for packed rows, timed only to price the full mask);
- `flex`: FlexAttention over the concatenated tokens with a document block mask, compiled (it is a
  reference loop without compilation); on the CPU torch 2.13 has no backward for it, so forward only;
- `flash varlen` (CUDA): flash attention over `cu_seqlens`, the GPU path (torch's public
  `torch.nn.attention.varlen.varlen_attn` is the same kernel without attention dropout, CUDA only too).
Median of --repeat runs of the forward, and of forward + backward where there is one, after one untimed run
(the first, compiling, run of `flex` is reported apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from step import PAD, synthetic_rows  # noqa: E402

from corpusprep.objectives import objective  # noqa: E402
from trainer.batch import collate  # noqa: E402
from trainer.model import Layout, attention  # noqa: E402


def kernels(layout: Layout, real_tokens: int, device: torch.device) -> dict:
    """name -> (function of q, k, v [T, A, D], whether it has a backward here)."""
    rows, slots = layout.rows, layout.slots
    key_mask = (rows < real_tokens)[:, None, None, :]  # [R, 1, 1, L]: the row's real tokens

    def sdpa_key_mask(q, k, v):
        grid = [x[rows].transpose(1, 2) for x in (q, k, v)]
        return F.scaled_dot_product_attention(*grid, attn_mask=key_mask).transpose(1, 2).flatten(0, 1)[slots]

    tokens = torch.arange(len(slots), device=device, dtype=layout.cu_seqlens.dtype)
    sequence = torch.searchsorted(layout.cu_seqlens, tokens, right=True)  # as Layout finds it

    def same_sequence(b, h, q_idx, kv_idx):
        return sequence[q_idx] == sequence[kv_idx]

    T = len(slots)
    block_mask = create_block_mask(same_sequence, None, None, T, T, device=device.type)
    compiled_flex = torch.compile(flex_attention, fullgraph=True)

    def flex(q, k, v):  # [T, A, D] -> [1, A, T, D] and back
        out = compiled_flex(*(x.transpose(0, 1)[None].contiguous() for x in (q, k, v)), block_mask=block_mask)
        return out[0].transpose(0, 1)

    found = {
        "sdpa rows": (lambda q, k, v: attention(q, k, v, layout, 0.0), True),
        "sdpa rows, key mask": (sdpa_key_mask, True),
        "flex": (flex, device.type != "cpu"),
    }
    if device.type == "cuda":  # attention() takes the flash path for half-precision CUDA tensors
        found["flash varlen"] = found.pop("sdpa rows")
        found["sdpa rows"] = (lambda q, k, v: F.scaled_dot_product_attention(
            *[x[rows].transpose(1, 2) for x in (q, k, v)], attn_mask=layout.mask,
        ).transpose(1, 2).flatten(0, 1)[slots], True)
    return found


def seconds(fn, q, k, v, backward: bool, repeat: int, device: torch.device) -> float:
    times = []
    for i in range(repeat + 1):  # the first untimed
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = fn(q, k, v)
        if backward:
            out.float().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", nargs="+", type=int, default=[128, 512])
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    print(f"command: python bench/attention.py {' '.join(sys.argv[1:])}")
    print(f"torch {torch.__version__} on {device}, {dtype}, {args.heads} heads of 64, load average "
          f"{os.getloadavg()[0]:.1f}")
    for length in args.lengths:
        for packed in (False, True):
            spec = objective("none" if packed else "nsp")
            batch = collate(synthetic_rows(args.tokens // length, length, packed, seed=0), PAD, 8, spec)
            layout = Layout(*(batch[k].to(device) for k in ("cu_seqlens", "rows", "slots")))
            T = len(batch["slots"])
            q, k, v = (torch.randn(T, args.heads, 64, device=device, dtype=dtype, requires_grad=True)
                       for _ in range(3))
            mix = "packed" if packed else "bert"
            print(f"length {length} {mix} ({len(batch['cu_seqlens']) - 1} sequences, T={T}):", flush=True)
            for name, (fn, backward) in kernels(layout, batch["num_tokens"], device).items():
                start = time.perf_counter()
                try:
                    with torch.no_grad():
                        fn(q, k, v)  # compiles flex; warms the others
                except Exception as e:  # noqa: BLE001 (a kernel that fails here is a finding, not the end)
                    print(f"  {name:<22} failed: {type(e).__name__}: {str(e).strip().splitlines()[0][:100]}")
                    continue
                first = time.perf_counter() - start
                with torch.no_grad():
                    forward = seconds(fn, q, k, v, False, args.repeat, device)
                both = "    none"
                if backward:
                    both = f"{seconds(fn, q, k, v, True, args.repeat, device) * 1e3:8.1f}"
                print(f"  {name:<22} forward {forward * 1e3:7.1f} ms   forward + backward {both} ms   "
                      f"(first call {first:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
