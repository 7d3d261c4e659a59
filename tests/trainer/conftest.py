"""A real-text shard directory for trainer tests, built in-process in the shard format of docs/DESIGN.md.

Text: the docstrings of the Python standard library's source files (read with `ast`, nothing imported),
one document per module. A small WordPiece vocab is trained on them with `tokenizers`; NSP pairs take
B from the same module (IsNext) or another module (NotNext); 15% masking with the 80/10/10 rules.
The lead will switch this to the real `build-pairs` + `shard` stages once they exist.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sysconfig
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.rng import rng_for
from corpusprep.shard.schema import SHARD_SCHEMA

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def stdlib_documents(max_files: int = 400) -> list[list[str]]:
    """Sentences of each stdlib module's docstrings, in a fixed (sorted) file order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    documents = []
    for path in sorted(root.glob("*.py"))[:max_files]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef))]
        text = " ".join(d for n in nodes if (d := ast.get_docstring(n)))
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if len(s.split()) >= 3]
        if len(sentences) >= 4:
            documents.append(sentences)
    return documents


def train_vocab(documents: list[list[str]], size: int, out: Path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=SPECIALS)
    tok.train_from_iterator((s for doc in documents for s in doc), trainer)
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    (out / "vocab.txt").write_text("".join(t + "\n" for t, _ in vocab))
    return tok


def make_pairs(docs_ids: list[list[list[int]]], max_len: int, rng: np.random.Generator, dupe: int):
    """(tokens_a, tokens_b, is_random_next) in BERT's way: A and B fill max_len - 3 tokens."""
    budget = max_len - 3
    pairs = []
    for _ in range(dupe):
        for d, sents in enumerate(docs_ids):
            i = 0
            while i < len(sents) - 1:
                target = budget if rng.random() > 0.1 else int(rng.integers(8, budget))
                j, a = i, []
                while j < len(sents) - 1 and len(a) < target // 2:
                    a += sents[j]
                    j += 1
                random_next = rng.random() < 0.5
                if random_next:
                    other = (d + 1 + int(rng.integers(len(docs_ids) - 1))) % len(docs_ids)
                    k = int(rng.integers(len(docs_ids[other])))
                    b = [t for s in docs_ids[other][k : k + 3] for t in s]
                else:
                    b = [t for s in sents[j : j + 3] for t in s]
                while len(a) + len(b) > budget:  # trim the longer side, as BERT does
                    (a if len(a) > len(b) else b).pop()
                if a and b:
                    pairs.append((a, b, random_next))
                i = j if random_next else j + 1
    return pairs


def mask_rows(pairs, vocab_size: int, rng: np.random.Generator, fraction: float = 0.15) -> dict[str, list]:
    cls, sep, mask = 2, 3, 4
    cols: dict[str, list] = {k: [] for k in SHARD_SCHEMA.names}
    for a, b, random_next in pairs:
        ids = [cls, *a, sep, *b, sep]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        maskable = [i for i, t in enumerate(ids) if t >= len(SPECIALS)]
        chosen = sorted(rng.choice(maskable, size=max(1, round(fraction * len(maskable))), replace=False))
        labels = [ids[i] for i in chosen]
        for i in chosen:
            r = rng.random()
            ids[i] = mask if r < 0.8 else int(rng.integers(len(SPECIALS), vocab_size)) if r < 0.9 else ids[i]
        for key, value in zip(
            SHARD_SCHEMA.names,
            (ids, types, [int(i) for i in chosen], labels, int(random_next), len(ids)),
            strict=True,
        ):
            cols[key].append(value)
    return cols


def write_shards(out: Path, splits: dict[str, dict[str, list]], num_shards: int, row_group: int) -> Path:
    manifest_splits = {}
    for split, cols in splits.items():
        n = len(cols["input_ids"])
        entries = []
        for s, part in enumerate(np.array_split(np.arange(n), num_shards)):
            table = pa.table({k: [v[i] for i in part] for k, v in cols.items()}, schema=SHARD_SCHEMA)
            path = out / split / f"shard-{s:05d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, row_group_size=row_group, compression="zstd")
            data = path.read_bytes()
            entries.append(
                {
                    "path": f"{split}/{path.name}",
                    "rows": len(part),
                    "bytes": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            )
        labels = np.array(cols["next_sentence_label"])
        manifest_splits[split] = {
            "shards": entries,
            "examples": n,
            "is_next": int((labels == 0).sum()),
            "not_next": int((labels == 1).sum()),
        }
    tokens = (out / "vocab.txt").read_text().splitlines()
    manifest = {
        "schema_version": 1,
        "seed": 0,
        "vocab": {
            "size": len(tokens),
            "sha256": hashlib.sha256((out / "vocab.txt").read_bytes()).hexdigest(),
            "special_ids": {t: tokens.index(t) for t in SPECIALS},
        },
        "splits": manifest_splits,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return out


def wikipedia_documents(path: Path, max_documents: int) -> list[list[str]]:
    """Sentences of the first documents of a WikiExtractor file (`<doc ...>` ... `</doc>`; .xz allowed)."""
    import lzma

    documents: list[list[str]] = []
    current: list[str] = []
    with lzma.open(path, "rt") if path.suffix == ".xz" else open(path) as f:
        for line in f:
            if line.startswith("<doc"):
                current = []
            elif line.startswith("</doc>"):
                sentences = [
                    s for p in current[1:] for s in re.split(r"(?<=[.!?])\s+", p) if len(s.split()) >= 3
                ]
                if len(sentences) >= 4:
                    documents.append(sentences)
                if len(documents) >= max_documents:
                    break
            elif line.strip():
                current.append(line.strip())
    return documents


def build_shards(
    out: Path, vocab_size=2000, max_len=64, num_shards=4, row_group=256, dupe=3, seed=0, documents=None
) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    documents = documents or stdlib_documents()
    tok = train_vocab(documents, vocab_size, out)
    docs_ids = [[e.ids for e in tok.encode_batch(doc, add_special_tokens=False)] for doc in documents]
    docs_ids = [[s for s in doc if s] for doc in docs_ids]
    # every 5th module is held out for validation: no text is shared between the splits
    held_out = [d for i, d in enumerate(docs_ids) if i % 5 == 0]
    train = [d for i, d in enumerate(docs_ids) if i % 5 != 0]
    rng = rng_for(seed, "tiny-shards")
    size = len((out / "vocab.txt").read_text().splitlines())
    splits = {
        "train": mask_rows(make_pairs(train, max_len, rng, dupe), size, rng),
        "validation": mask_rows(make_pairs(held_out, max_len, rng, 1), size, rng),
    }
    return write_shards(out, splits, num_shards, row_group)


@pytest.fixture(scope="session")
def tiny_shards(tmp_path_factory) -> Path:
    """SHARDS_DIR: 4 train + 4 validation shards of stdlib-docstring NSP pairs, length <= 64, vocab 2000."""
    return build_shards(tmp_path_factory.mktemp("tiny_shards"))
