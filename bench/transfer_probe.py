"""Where a pre-trained model's transfer gain (or loss) comes from: fine-tune it with parts reset.

`trainer.evaluate` says whether pre-training helps; this says which weights carry the effect. The model (a
checkpoint or a Hugging Face export) is exported once, then each variant changes the word embeddings or the
encoder and is fine-tuned with `trainer.evaluate`'s own `finetune.run` (the same settings and seeds as the
command), beside the random init:

  as-is           the pre-trained model
  rare-reset      word pieces seen fewer than --rare times in --shards drawn anew (BERT's init, std 0.02)
  embeddings      pre-trained embeddings (word, position, type), the encoder drawn anew
  encoder         the pre-trained encoder, the embeddings drawn anew
  rescaled        every word embedding scaled to a random init's expected norm (0.02 * sqrt(hidden))
  random          the architecture only (trainer.evaluate's random init)

    EWT=../shared/eval/ud_en_ewt/en_ewt-ud
    python bench/transfer_probe.py runs/r5000/train --shards runs/r5000/shards --seeds 1 \\
        --train $EWT-train.conllu.xz --dev $EWT-dev.conllu.xz

Runs go --workers at a time, one thread each. BENCHMARKS.md, "CPU recipe: the transfer table", has a result.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer.evaluate import finetune  # noqa: E402
from trainer.evaluate.model import pretrained  # noqa: E402
from trainer.evaluate.readers import read_task  # noqa: E402
from trainer.evaluate.settings import EvalSettings  # noqa: E402
from trainer.shards import open_shards  # noqa: E402

VARIANTS = ("as-is", "rare-reset", "embeddings", "encoder", "rescaled", "random")
WORDS = "bert.embeddings.word_embeddings.weight"
INIT_STD = 0.02  # BERT's initializer_range, what a random init draws


def piece_counts(shards: Path, vocab_size: int) -> np.ndarray:
    """How often each piece occurs in the training shards, read through the trainer's checked manifest."""
    import pyarrow.parquet as pq

    counts = np.zeros(vocab_size, np.int64)
    for shard in open_shards(shards).files("train"):
        ids = pq.read_table(shard.path, columns=["input_ids"]).column(0).combine_chunks().values.to_numpy()
        counts += np.bincount(ids, minlength=vocab_size)
    return counts


def redraw(tensor: torch.Tensor, name: str, generator: torch.Generator) -> torch.Tensor:
    """What BERT's init gives a weight: normal(0, 0.02) matrices, LayerNorm scales 1, biases 0."""
    if tensor.dim() >= 2:
        return torch.randn(tensor.shape, generator=generator) * INIT_STD
    return torch.ones_like(tensor) if "LayerNorm.weight" in name else torch.zeros_like(tensor)


def make_variant(source: Path, variant: str, out: Path, counts: np.ndarray | None, rare: int) -> Path:
    shutil.copytree(source, out)
    weights = load_file(out / "model.safetensors")
    generator = torch.Generator().manual_seed(0)
    for name, tensor in weights.items():
        embedding = ".embeddings." in name
        if (variant == "embeddings" and not embedding) or (variant == "encoder" and embedding):
            weights[name] = redraw(tensor, name, generator)
    words = weights[WORDS]
    if variant == "rare-reset":
        chosen = torch.from_numpy(counts < rare)
        words[chosen] = torch.randn(int(chosen.sum()), words.shape[1], generator=generator) * INIT_STD
    if variant == "rescaled":
        words = words / words.norm(dim=1, keepdim=True) * (INIT_STD * words.shape[1] ** 0.5)
    weights[WORDS] = words.contiguous()
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    return out


def run_one(job: tuple[str, str, EvalSettings, str, int]) -> tuple[str, int, float]:
    variant, hf_dir, settings, init, seed = job
    torch.set_num_threads(1)
    scores = finetune.run(Path(hf_dir), read_task(settings), settings, init, seed)["scores"]
    print(f"  {variant:11s} seed {seed}: dev {scores['dev']['accuracy']:.4f}", flush=True)
    return variant, seed, scores["dev"]["accuracy"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a run dir, a step-N checkpoint or a Hugging Face export")
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--shards", type=Path, help="the pre-training shards (for rare-reset's piece counts)")
    p.add_argument("--rare", type=int, default=100, help="rare-reset: pieces seen fewer times than this")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = p.parse_args()
    if "rare-reset" in args.variants and args.shards is None:
        p.error("rare-reset needs --shards")
    # trainer.evaluate's settings when this bench was measured: 3 epochs at 1e-3, batch 32, the last epoch
    settings = EvalSettings(train=args.train, dev=args.dev, seeds=args.seeds, device="cpu", epochs=3.0,
                            lr=1e-3, batch_size=32, metric="accuracy", select="last").check()
    with pretrained(args.model) as model, tempfile.TemporaryDirectory(prefix="transfer-probe-") as scratch:
        words = load_file(model.hf_dir / "model.safetensors")[WORDS]
        counts = piece_counts(args.shards, words.shape[0]) if "rare-reset" in args.variants else None
        jobs = []
        for variant in args.variants:
            init = "random" if variant == "random" else "pretrained"
            hf_dir = (
                model.hf_dir
                if variant in ("as-is", "random")
                else make_variant(model.hf_dir, variant, Path(scratch) / variant, counts, args.rare)
            )
            jobs += [(variant, str(hf_dir), settings, init, seed) for seed in settings.seed_list]
        print(f"{model.description}: {len(jobs)} fine-tuning runs, {args.workers} at a time", flush=True)
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(run_one, jobs))
    print(
        f"\n| variant | {' | '.join(f'seed {s}' for s in settings.seed_list)} | mean |\n|---|"
        + "---:|" * (args.seeds + 1)
    )
    for variant in args.variants:
        scores = [acc for v, _, acc in results if v == variant]
        print(f"| {variant} | {' | '.join(f'{x:.4f}' for x in scores)} | {np.mean(scores):.4f} |")


if __name__ == "__main__":
    main()
