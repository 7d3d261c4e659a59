"""Fine-tuning cost on a CPU: `transformers.Trainer` (what trainer.evaluate uses) against a plain PyTorch
loop doing the same work, in one run.

    .venv/bin/python bench/finetune_loop.py [--model HF_DIR] [--sentences 2000] [--batch-size 32]
        [--threads 1] [--repeat 2]

Data: the first --sentences sentences of ../shared/eval/ud_en_ewt/en_ewt-ud-train.conllu.xz (UPOS tagging;
the toy task of the tests when ../shared is absent). Model: --model, a Hugging Face BERT directory
(`python -m trainer.export` output), else a tiny BERT (L2/H128) over Google's vocab or the toy vocab.

Both train one epoch of BertForTokenClassification from the same initial weights on the same batches
(LengthGroupedSampler with one seed, DataCollatorForTokenClassification, AdamW, linear schedule) and report
the wall time of the whole run (set-up included) and per step; the best of --repeat. The question it
answers: does Trainer's machinery (accelerate, callbacks, per-step bookkeeping) cost enough on a small
model and a 2-core CPU to justify a hand-written loop?
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from corpusprep.read.document import ReadStats  # noqa: E402
from trainer.evaluate import finetune  # noqa: E402
from trainer.evaluate.data import read_lines  # noqa: E402
from trainer.evaluate.readers import read_task  # noqa: E402
from trainer.evaluate.settings import EvalSettings  # noqa: E402
from trainer.evaluate.tasks.base import Encoded  # noqa: E402

SHARED = REPO.parent / "shared"
EWT = SHARED / "eval" / "ud_en_ewt" / "en_ewt-ud-train.conllu.xz"


def task_and_model(work: Path, sentences: int, model: Path | None):
    transformers = finetune.require_transformers()
    if EWT.is_file():
        lines, kept = [], 0
        for _, line in read_lines(EWT, ReadStats()):
            lines.append(line)
            kept += not line.strip()
            if kept == sentences:
                break
        train = work / "train.conllu"
        train.write_text("\n".join(lines) + "\n")
        vocab = SHARED / "corpus" / "bert-base-uncased-vocab.txt"
    else:  # a fresh machine: the tests' toy task
        from tests.trainer.evaluate_helpers import write_toy_task, write_toy_vocab

        train, _ = write_toy_task(work, train=sentences)
        vocab = write_toy_vocab(work / "vocab") / "vocab.txt"
    data = read_task(EvalSettings(train=str(train), dev=str(train)))
    if model is None:
        model = work / "hf"
        tokenizer = transformers.BertTokenizerFast(vocab=str(vocab))
        config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=128,
                                         num_hidden_layers=2, num_attention_heads=2, intermediate_size=512)
        transformers.BertForMaskedLM(config).save_pretrained(model)
        tokenizer.save_pretrained(model)
    return data, model


def plain_loop(model, features, collator, settings: EvalSettings, seed: int) -> int:
    """One epoch: the batches Trainer would draw (LengthGroupedSampler, the same seed), AdamW without
    decay on biases and LayerNorms, linear warm-up and decay."""
    from transformers.trainer_pt_utils import LengthGroupedSampler

    g = torch.Generator().manual_seed(finetune.sub_seed(seed, "data"))
    order = list(LengthGroupedSampler(settings.batch_size, dataset=features, generator=g))
    batches = [order[i : i + settings.batch_size] for i in range(0, len(order), settings.batch_size)]
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias") and "LayerNorm" not in n]
    rest = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": settings.weight_decay},
                                   {"params": rest, "weight_decay": 0.0}], lr=settings.lr)
    steps, warmup = len(batches), round(settings.warmup * len(batches))

    def factor(step: int) -> float:
        return step / max(1, warmup) if step < warmup else (steps - step) / max(1, steps - warmup)

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    model.train()
    for indices in batches:
        loss = model(**collator([features[i] for i in indices])).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
    return len(batches)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path)
    p.add_argument("--sentences", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    transformers = finetune.require_transformers()
    with tempfile.TemporaryDirectory() as tmp:
        data, model_dir = task_and_model(Path(tmp), args.sentences, args.model)
        settings = EvalSettings(train="x", dev="x", epochs=1.0, batch_size=args.batch_size, lr=1e-3,
                                device="cpu")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        features = data.task.encode(tokenizer, data, data.train.examples, settings, train=True).features
        collator = data.task.collator(transformers, tokenizer)
        times: dict[str, list[tuple[float, float]]] = {"Trainer": [], "plain loop": []}
        for _ in range(args.repeat):
            for name in times:
                model = finetune.build_model(model_dir, data, "random", seed=1)
                started, cpu = time.perf_counter(), time.process_time()
                if name == "Trainer":
                    finetune.train(model, tokenizer, data, Encoded(features), settings, seed=1)
                    steps = -(-len(features) // settings.batch_size)
                else:
                    steps = plain_loop(model, features, collator, settings, seed=1)
                times[name].append((time.perf_counter() - started, time.process_time() - cpu))
    best = {name: min(t) for name, t in times.items()}  # by wall time
    print(f"one epoch of {len(features):,} sentences, batch {settings.batch_size}, {steps} steps, "
          f"{args.threads} thread(s); best of {args.repeat}")
    for name, (seconds, cpu) in best.items():
        print(f"  {name:<11} {seconds:7.2f} s wall ({1000 * seconds / steps:6.1f} ms/step), {cpu:7.2f} CPU-s")
    ratios = [best["Trainer"][i] / best["plain loop"][i] for i in (0, 1)]
    print(f"  Trainer / plain loop: {ratios[0]:.3f} wall, {ratios[1]:.3f} CPU")


if __name__ == "__main__":
    main()
