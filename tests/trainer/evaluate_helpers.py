"""Small labelled data and tiny models for the evaluation tests: a seeded toy language whose tags need
context (`run`, `walk` are nouns after a determiner and verbs after a pronoun), a vocab that covers it, and
trainer checkpoints written as the trainer writes them."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from tests.interop.helpers import SPECIALS
from trainer.config import preset
from trainer.evaluate.settings import EvalSettings
from trainer.model import BertForPreTraining

LEXICON = {
    "DET": ["the", "a", "every"],
    "ADJ": ["small", "red", "quiet", "old"],
    "NOUN": ["dog", "cat", "house", "river", "run", "walk"],
    "VERB": ["sees", "likes", "run", "walk", "finds"],
    "PRON": ["we", "they", "you"],
    "PUNCT": [".", "!"],
}
PATTERNS = [
    ["DET", "ADJ", "NOUN", "VERB", "DET", "NOUN", "PUNCT"],
    ["PRON", "VERB", "DET", "NOUN", "PUNCT"],
    ["DET", "NOUN", "VERB", "DET", "ADJ", "NOUN", "PUNCT"],
]


def toy_sentences(n: int, seed: int) -> list[list[tuple[str, str]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        pattern = PATTERNS[rng.integers(len(PATTERNS))]
        out.append([(LEXICON[tag][rng.integers(len(LEXICON[tag]))], tag) for tag in pattern])
    return out


def conllu(sentences: list[list[tuple[str, str]]]) -> str:
    """CoNLL-U text of tagged sentences, with the comments UD files have."""
    blocks = []
    for i, sentence in enumerate(sentences):
        lines = [f"# sent_id = s{i}", f"# text = {' '.join(w for w, _ in sentence)}"]
        lines += [f"{j}\t{w}\t{w}\t{t}\t_\t_\t0\tdep\t_\t_" for j, (w, t) in enumerate(sentence, 1)]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def write_toy_task(directory: Path, train: int = 48, dev: int = 16) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "train.conllu", directory / "dev.conllu"
    paths[0].write_text(conllu(toy_sentences(train, 1)))
    paths[1].write_text(conllu(toy_sentences(dev, 2)))
    return paths


def write_toy_vocab(directory: Path) -> Path:
    """The toy language's words, a few pieces, and BERT's specials: vocab.txt as `corpusprep vocab` writes."""
    words = sorted({w for ws in LEXICON.values() for w in ws} | {"he", "##s", "##ing", "word", "x"})
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(SPECIALS + words) + "\n")
    return directory


def toy_config(vocab_dir: Path):
    size = len((vocab_dir / "vocab.txt").read_text().splitlines())
    return preset("tiny", vocab_size=size, hidden_size=32, num_heads=2, intermediate_size=64, max_position=64)


def write_run(run_dir: Path, vocab_dir: Path, seed: int = 0, step: int = 20) -> Path:
    """A trainer run dir with one complete checkpoint (trainer.checkpoint.save, with a fresh optimizer and
    schedule) and metrics.jsonl; returns the checkpoint directory."""
    from trainer.checkpoint import save

    torch.manual_seed(seed)
    model = BertForPreTraining(toy_config(vocab_dir))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    trainer = {"step": step, "data": {"epoch": 0, "examples": step * 8}, "last_metrics": {},
               "rng": [{"cpu": torch.get_rng_state(), "cuda": None}]}
    states = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "scheduler": schedule.state_dict(), "trainer": trainer}
    train = {"data": {"batch_size": 8, "shards": ""}, "schedule": {"grad_accum": 2}}
    checkpoint = save(run_dir, step, states, {"model": asdict(model.config), "train": train}, keep=1)
    records = [{"step": s, "loss": 5.0, "seq_per_s": 16.0, "tokens_per_s": 640.0} for s in (10, 20)]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return checkpoint


def stand_in_run(data, settings: EvalSettings, score: float) -> dict:
    """What finetune.run returns, for a stand-in run that scores `score` on every metric of every scored
    split, its predictions the cheap baseline's (so that every file the evaluation writes is there)."""
    scores = dict.fromkeys(data.task.metrics, score) | {"n": 104}
    return {"scores": dict.fromkeys(data.scored, scores), "epoch": settings.epochs,
            "predictions": {name: data.task.baseline(data, s) for name, s in data.scored.items()},
            "curve": [[settings.epochs, score]], "collapsed": {}, "diverged": None, "training_loss": 1.0,
            "state": {}, "encoded": {}}


def fast_settings(train: Path, dev: Path, vocab: Path, **overrides) -> EvalSettings:
    """Settings that fine-tune the toy task in about a second per run."""
    values = {"train": str(train), "dev": str(dev), "vocab": str(vocab), "seeds": 2, "epochs": 2.0,
              "batch_size": 8, "lr": 1e-3, "max_length": 32, "device": "cpu"} | overrides
    return EvalSettings(**values)


ENTITIES = {"dog": "ANIMAL", "cat": "ANIMAL", "house": "PLACE", "river": "PLACE"}


def write_toy_ner(directory: Path, train: int = 48, dev: int = 16) -> tuple[Path, Path]:
    """The toy language as IOB2 columns (`word TAG`): animals and places are entities; "the red cat" is one
    ANIMAL entity of three words, so that a word's tag depends on its neighbours."""

    def tags(sentence: list[tuple[str, str]]) -> list[str]:
        out = ["O"] * len(sentence)
        for i, (word, _) in enumerate(sentence):
            if word in ENTITIES:
                start = i
                while start > 0 and sentence[start - 1][1] in ("DET", "ADJ"):
                    start -= 1
                out[start : i + 1] = [f"B-{ENTITIES[word]}"] + [f"I-{ENTITIES[word]}"] * (i - start)
        return out

    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "train.iob2", directory / "dev.iob2"
    for path, (n, seed) in zip(paths, ((train, 1), (dev, 2)), strict=True):
        blocks = ["\n".join(f"{w} {t}" for (w, _), t in zip(s, tags(s), strict=True))
                  for s in toy_sentences(n, seed)]
        path.write_text("\n\n".join(blocks) + "\n")
    return paths


def write_toy_rows(directory: Path, regression: bool = False, train: int = 48,
                   dev: int = 16) -> tuple[Path, Path]:
    """Toy sentence pairs in GLUE's TSV layout: classification (does the second sentence repeat the first's
    subject?) or regression (STS-B-like: a score from 0 to 5 for how many words the two share)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "train.tsv", directory / "dev.tsv"
    for path, (n, seed) in zip(paths, ((train, 3), (dev, 4)), strict=True):
        firsts, seconds = toy_sentences(n, seed), toy_sentences(n, seed + 100)
        rows = ["index\tsentence1\tsentence2\t" + ("score" if regression else "label")]
        for i, (a, b) in enumerate(zip(firsts, seconds, strict=True)):
            x, y = {w for w, _ in a}, {w for w, _ in b}
            label = f"{5 * len(x & y) / len(x | y):.3f}" if regression else str(int(a[1][0] == b[1][0]))
            rows.append(f"{i}\t{' '.join(w for w, _ in a)}\t{' '.join(w for w, _ in b)}\t{label}")
        path.write_text("\n".join(rows) + "\n")
    return paths
