"""Training throughput on one CUDA GPU: our BERT beside Hugging Face `BertForPreTraining` (sdpa), bf16, same
batches, for BERT-base and BERT-large at length 128. Prints sequences/s, real (non-padding) tokens/s and
MFU against the GPU's bf16 matmul rate measured here, plus our/HF ratios.

    python bench/train_gpu.py                        # base + large, batch 64, 20 timed steps
    python bench/train_gpu.py --presets base --batch-size 128 --compile
    python bench/train_gpu.py --cpu-smoke            # 2 steps of the tiny preset on CPU: does it run?

MFU counts 6 x non-embedding parameters per token, plus attention (12 x layers x length x hidden) and the
masked-position head (15% of tokens), as `trainer.model.flops_per_token`; HF gets the same credit (its
extra work projecting every position to the vocab is its own waste). Batches are synthetic token ids
with BERT's length mix (90% full length, 10% shorter), padded to a multiple of 8.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from corpusprep.engine.rng import rng_for  # noqa: E402
from trainer.model import BertForPreTraining, flops_per_token, preset  # noqa: E402

VOCAB = 30522


def make_batches(n: int, batch_size: int, max_len: int, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    rng = rng_for(seed, "bench-train-gpu")
    batches = []
    for _ in range(n):
        lengths = np.where(rng.random(batch_size) < 0.9, max_len, rng.integers(16, max_len, batch_size))
        L = -(-int(lengths.max()) // 8) * 8
        mask = np.arange(L)[None, :] < lengths[:, None]
        ids = np.where(mask, rng.integers(1000, VOCAB, (batch_size, L)), 0)
        ids[:, 0] = 101
        types = (np.arange(L)[None, :] >= (lengths // 2)[:, None]) & mask
        chosen = (rng.random((batch_size, L)) < 0.15) & mask
        chosen[:, 0] = False
        labels_full = np.where(chosen, ids, -100)  # HF's form: a label at every position
        flat = np.flatnonzero(chosen)  # ours: flat positions of the predictions
        batches.append({
            "input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(types.astype(np.int64)),
            "attention_mask": torch.from_numpy(mask), "mlm_positions": torch.from_numpy(flat),
            "mlm_labels": torch.from_numpy(ids.reshape(-1)[flat]),
            "labels_full": torch.from_numpy(labels_full),
            "nsp_labels": torch.from_numpy(rng.integers(0, 2, batch_size)),
        })  # fmt: skip
    return batches


def ours_step(model, b):
    from trainer.model import pretraining_loss

    mlm, nsp = model(b["input_ids"], b["token_type_ids"], b["attention_mask"], b["mlm_positions"])
    return pretraining_loss(mlm, b["mlm_labels"], nsp, b["nsp_labels"])[0]


def hf_step(model, b):
    out = model(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"],
                attention_mask=b["attention_mask"], labels=b["labels_full"],
                next_sentence_label=b["nsp_labels"])  # fmt: skip
    return out.loss


def hf_model(name: str, device):
    import transformers

    c = preset(name, vocab_size=VOCAB)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=c.hidden_size, num_hidden_layers=c.num_layers,
        num_attention_heads=c.num_heads, intermediate_size=c.intermediate_size,
    )  # fmt: skip
    return transformers.BertForPreTraining._from_config(config, attn_implementation="sdpa").to(device)


def timed(model, step, batches, warmup: int, device, bf16: bool) -> float:
    """Seconds for the batches after `warmup` steps (forward, backward, fused AdamW)."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)

    def run(b):
        b = {k: None if v is None else v.to(device, non_blocking=True) for k, v in b.items()}
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


def padding_cpu(name: str, batch_size: int, seq_len: int, reps: int) -> None:
    """Unpadding vs computing on the padded grid (key mask only), CPU fp32, forward + backward of our
    model on one batch per length mix; the two alternate and the best of `reps` counts (a shared machine)."""
    from trainer import model as model_module

    config = preset(name, vocab_size=VOCAB, dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    model = BertForPreTraining(config)
    unpadded_layout = model_module.Layout.__init__

    def padded_layout(self, attention_mask, batch, length, piece_lengths=None):  # a padded implementation
        self.batch, self.length, self.real, self.rows = batch, length, None, None
        self.key_mask = attention_mask.bool()[:, None, None, :]

    print(f"{'length mix':<36}{'padding':>9}{'unpadded s':>12}{'padded s':>10}{'speed-up':>10}")
    for mix, short in [("BERT (90% full length)", 0.1), ("uniform 16..max (short documents)", 1.0)]:
        rng = rng_for(0, "bench-padding", mix)
        b = make_batches(1, batch_size, seq_len)[0]
        lengths = np.where(rng.random(batch_size) < short, rng.integers(16, seq_len, batch_size), seq_len)
        b["attention_mask"] = torch.from_numpy(np.arange(b["input_ids"].shape[1])[None, :] < lengths[:, None])
        b["mlm_positions"] = b["mlm_positions"][b["attention_mask"].reshape(-1)[b["mlm_positions"]]]
        b["mlm_labels"] = b["input_ids"].reshape(-1)[b["mlm_positions"]]
        times = {"unpadded": [], "padded": []}
        for _ in range(reps + 1):  # the first round warms up
            for variant, init in (("unpadded", unpadded_layout), ("padded", padded_layout)):
                model_module.Layout.__init__ = init
                start = time.perf_counter()
                ours_step(model, b).backward()
                times[variant].append(time.perf_counter() - start)
        model_module.Layout.__init__ = unpadded_layout
        t_unpad, t_pad = min(times["unpadded"][1:]), min(times["padded"][1:])
        waste = 1 - float(b["attention_mask"].float().mean())
        print(f"{mix:<36}{waste:>9.1%}{t_unpad:>12.3f}{t_pad:>10.3f}{t_pad / t_unpad:>9.2f}x")


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
    p.add_argument("--padding-cpu", metavar="PRESET", help="CPU: unpadded vs padded compute (--steps reps)")
    args = p.parse_args()
    if args.padding_cpu:
        print(f"command: python {' '.join(sys.argv)}")
        padding_cpu(args.padding_cpu, args.batch_size, args.seq_len, reps=args.steps)
        return
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
    batches = make_batches(args.warmup + args.steps, args.batch_size, args.seq_len)
    timed_batches = batches[args.warmup :]
    seqs = sum(len(b["nsp_labels"]) for b in timed_batches)
    tokens = sum(int(b["attention_mask"].sum()) for b in timed_batches)
    print(f"{'model':<22}{'seq/s':>10}{'tokens/s':>12}{'MFU':>8}")
    for name in args.presets:
        config = preset(name, vocab_size=VOCAB)
        flops = flops_per_token(config, round(tokens / seqs))
        rates = {}
        contenders = [("ours", lambda c=config: BertForPreTraining(c).to(device), ours_step)]
        if not args.no_hf:
            contenders.append(("HF sdpa", lambda n=name: hf_model(n, device), hf_step))
        for label, build, step in contenders:
            torch.manual_seed(0)
            model = build().train()
            if args.compile and label == "ours":
                model = torch.compile(model, dynamic=True)
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
