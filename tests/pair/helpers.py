"""A self-contained WordPiece vocab and synthetic BERT-format corpora for the pair tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"w{i}" for i in range(300)]


def make_vocab(directory: Path) -> Path:
    """vocab.txt + tokenizer.json: a BERT-style WordPiece tokenizer where every word `wN` is one token."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    tokens = SPECIALS + list("abcdefghijklmnopqrstuvwxyz0123456789.,") + WORDS
    tokens += [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n")
    tokenizer = Tokenizer(WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.add_special_tokens(SPECIALS)
    tokenizer.save(str(directory / "tokenizer.json"))
    return seal_vocab(directory)


def seal_vocab(directory: Path) -> Path:
    """Make a hand-written vocab directory (vocab.txt, tokenizer.json) a vocab artifact, as `corpusprep vocab`
    leaves it: the stages that read a vocab refuse one without a manifest, or whose files changed."""
    from corpusprep.engine.artifact import Artifact
    from corpusprep.engine.outputs import OUTPUT_KINDS

    names = sorted(p.name for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    with Artifact(directory, OUTPUT_KINDS["vocab"].adopting(names), {"hand_made": names}, quiet=True) as art:
        if art.complete is None:
            art.commit(files=names)
    return directory


def synthetic_documents(
    n_docs: int, seed: int, sentences: tuple[int, int] = (1, 12), words: tuple[int, int] = (3, 15)
) -> list[list[str]]:
    """Documents of `sentences` random sentences of `words` + 2 words each (ranges inclusive)."""
    rng = np.random.default_rng(seed)
    docs = []
    for d in range(n_docs):
        n = int(rng.integers(*sentences, endpoint=True))
        docs.append(
            [
                f"w{d % 300} w{s % 300} "
                + " ".join(f"w{w}" for w in rng.integers(0, 300, rng.integers(*words)))
                for s in range(n)
            ]
        )
    return docs


def write_bert(path: Path, documents: list[list[str]]) -> Path:
    """Google's BERT input format: one sentence per line, a blank line between documents."""
    path.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n")
    return path
