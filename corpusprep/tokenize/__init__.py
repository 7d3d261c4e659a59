"""Tokenize stage: WordPiece vocab training (`vocab.py`) and what later stages need to know about a vocab.

A vocab directory holds `vocab.txt` (one token per line, id = line number) and `tokenizer.json`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from corpusprep.engine import storage
from corpusprep.engine.manifest import require
from corpusprep.engine.records import read_bytes
from corpusprep.errors import UsageError

if TYPE_CHECKING:
    import numpy as np  # the arrays' properties import it when first used: `corpusprep --help` stays light

# a vocab's special tokens, named by a shards manifest's special_ids
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def is_reserved(token: str) -> bool:
    """A reserved slot `[unusedN]` (Google's vocab has 994), kept free for tokens added after training."""
    return token.startswith("[unused") and token.endswith("]")


def read_vocab_txt(path: str | Path) -> tuple[bytes, list[str]]:
    """The bytes and tokens of a vocab.txt, checked: UTF-8, one unique token a line, specials present."""
    path = Path(path)
    try:
        data = read_bytes(path)  # a regular file (never a FIFO's endless wait), of a bounded size
    except OSError as error:
        raise UsageError(f"{path}: cannot read vocab: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:  # named by line, as every other fault of the file
        line = data.count(b"\n", 0, error.start) + 1
        raise UsageError(f"{path}:{line}: not UTF-8 (byte {error.start})") from None
    tokens = text.removesuffix("\n").split("\n")
    seen: dict[str, int] = {}
    for lineno, token in enumerate(tokens, 1):
        if not token.strip() or token != token.strip() or len(token.splitlines()) != 1:
            raise UsageError(f"{path}:{lineno}: empty token or token with whitespace {token!r}")
        if token in seen:
            raise UsageError(f"{path}:{lineno}: token {token!r} repeats line {seen[token]}")
        seen[token] = lineno
    missing = [t for t in SPECIAL_TOKENS if t not in seen]
    if missing:
        raise UsageError(f"{path}: vocab lacks the special tokens {' '.join(missing)}")
    return data, tokens


@dataclass(frozen=True)
class VocabInfo:
    """The facts about a vocab that pairing, masking and the trainer need, read from `vocab.txt`."""

    tokens: tuple[str, ...]
    sha256: str
    directory: Path | None = field(default=None, compare=False)

    @classmethod
    def load(cls, vocab: str | Path) -> VocabInfo:
        """Load from a vocab directory or a vocab.txt file."""
        path = Path(vocab)
        directory = path if storage.is_dir(path) else path.parent
        vocab_txt = path / "vocab.txt" if directory == path else path
        if not storage.is_file(vocab_txt):
            raise UsageError(f"{storage.url(vocab_txt)}: no vocab.txt here (run `corpusprep vocab` first)")
        data, tokens = read_vocab_txt(vocab_txt)
        return cls(tokens=tuple(tokens), sha256=hashlib.sha256(data).hexdigest(), directory=directory)

    @classmethod
    def verified(cls, vocab_dir: str | Path) -> VocabInfo:
        """A vocab directory `corpusprep vocab` wrote, for a stage that builds on it: complete and unchanged
        (every file against its manifest's sha256: a few MB at most), then loaded; else one line naming the
        file."""
        path = Path(vocab_dir)
        if not storage.is_dir(path):
            what = "is a file" if storage.exists(path) else "no such directory"
            raise UsageError(f"{storage.url(path)}: {what}; --vocab takes the directory `corpusprep vocab` "
                             "wrote")
        require(path, "vocab", checksums=True)
        return cls.load(path)

    @property
    def size(self) -> int:
        return len(self.tokens)

    @cached_property
    def ids(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(self.tokens)}

    @property
    def pad_id(self) -> int:
        return self.ids["[PAD]"]

    @property
    def unk_id(self) -> int:
        return self.ids["[UNK]"]

    @property
    def cls_id(self) -> int:
        return self.ids["[CLS]"]

    @property
    def sep_id(self) -> int:
        return self.ids["[SEP]"]

    @property
    def mask_id(self) -> int:
        return self.ids["[MASK]"]

    @cached_property
    def token_array(self) -> np.ndarray:
        """The tokens as a numpy string array, for vectorised lookups (not a Python loop per token)."""
        import numpy as np

        return np.array(self.tokens)

    @cached_property
    def is_special(self) -> np.ndarray:
        """bool[size]: the five special tokens and reserved `[unusedN]` slots (never masked, never drawn)."""
        import numpy as np

        tokens = self.token_array
        reserved = np.char.startswith(tokens, "[unused") & np.char.endswith(tokens, "]")
        return reserved | np.isin(tokens, SPECIAL_TOKENS)

    @cached_property
    def random_token_ids(self) -> np.ndarray:
        """Ids a masked position may be replaced with: the non-special vocab."""
        import numpy as np

        return np.flatnonzero(~self.is_special).astype(np.int64)

    @cached_property
    def is_continuation(self) -> np.ndarray:
        """bool[size]: word pieces that continue a word (`##...`), for whole-word masking."""
        import numpy as np

        return np.char.startswith(self.token_array, "##")

    @property
    def token_dtype(self) -> np.dtype:
        """The narrowest unsigned type that holds every id."""
        import numpy as np

        return np.dtype(np.uint16) if self.size <= 2**16 else np.dtype(np.uint32)

    def tokenizer_json(self) -> Path:
        """This vocab's tokenizer.json; a one-line error when there is none."""
        if self.directory is None or not storage.is_file(self.directory / "tokenizer.json"):
            raise UsageError(f"{storage.url(self.directory or '')}: no tokenizer.json (run `corpusprep vocab "
                             "--from-vocab ...`)")
        return self.directory / "tokenizer.json"

    def tokenizer(self):
        """The `tokenizers.Tokenizer` of this vocab (from tokenizer.json)."""
        from tokenizers import Tokenizer

        return Tokenizer.from_str(storage.read_text(self.tokenizer_json(), encoding="utf-8"))
