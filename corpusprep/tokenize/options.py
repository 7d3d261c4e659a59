"""`corpusprep vocab`'s options: the one source of their defaults and checks, for the command line, a
pipeline's [vocab] table and the driver (`tokenize/vocab.py`). Standard library only: the command line
imports it at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corpusprep.flags import declared_ranges, flag
from corpusprep.ranges import Range, check_ranges
from corpusprep.tokenize import SPECIAL_TOKENS

MIN_LEARNED = 100  # a vocab must have room for at least this many tokens besides specials and reserved slots
# The largest vocab we build. The tokenizers trainer reserves ~70 bytes a token up front (a 10^9 vocab asks
# for 70 GB and aborts in native code); 2^24 (16.8M, 1.2 GB) is 60x XLM-R's 250k and fits any token dtype
# we write (uint32 above 65,536). A corpus gives fewer tokens than asked when it has fewer pieces: a warning.
MAX_VOCAB_SIZE = 2**24


ROOM = len(SPECIAL_TOKENS) + MIN_LEARNED  # what a vocab holds besides its reserved slots, at least


def _absolute(path: Path | None) -> str | None:
    return str(path.absolute()) if path is not None else None


@dataclass(frozen=True)
class VocabOptions:
    """Options of `corpusprep vocab`, each declared once (`corpusprep.flags`), so a pipeline's [vocab] table
    gives VocabOptions(**section).

    `vocab_size` counts every line of vocab.txt (specials and reserved slots included), as the model's
    embedding table does. `from_vocab`: build the directory from an existing vocab.txt instead of training.
    """

    # its range counts the reserved slots (`ranges`)
    vocab_size: int = flag(30000, "Tokens in vocab.txt, specials and reserved slots included (BERT: 30522).")
    min_frequency: int = flag(2, "A pair of pieces must occur this often to be merged.",
                              range=Range(1, MAX_VOCAB_SIZE, why="2^24"))
    limit_alphabet: int = flag(
        1000, "Keep at most this many characters (most frequent first); rarer ones: [UNK].",
        range=Range(1, MAX_VOCAB_SIZE, why="2^24"))
    reserved: int = flag(
        0, "Extra [unused0..N-1] tokens after [PAD], free for later use (Google: 99).",
        range=Range(0, MAX_VOCAB_SIZE - ROOM, why=f"2^24 less {ROOM}: specials, least learned"))
    cased: bool = flag(False, "Keep case (default: lowercase). Accents: see --strip-accents.",
                       decls=("--cased",))
    # None: strip when lowercasing (BERT-uncased); set False for most languages other than English, where
    # accents tell words apart (French "où"/"ou", German "schön"/"schon")
    strip_accents: bool | None = flag(
        None,
        "Remove accents (é -> e) before tokenizing. Default: strip when lowercasing (BERT-uncased, fine for "
        "English), keep with --cased. Most other languages should pass --keep-accents.",
        decls=("--strip-accents/--keep-accents",), show_default=False)
    from_vocab: str | None = flag(
        None,
        "Build the directory from an existing vocab.txt (e.g. Google's) instead of training; inputs, if "
        "given, are only read to measure its [UNK] rate and pieces per word.",
        show_default=False, cli_type=Path | None, parse=_absolute)

    def __post_init__(self) -> None:
        self.check()

    def ranges(self) -> dict[str, Range]:
        """The range of each numeric option (`corpusprep.ranges`): as declared, and the vocab size's, whose
        floor counts the reserved slots. Sizes are checked before anything is read: one the trainer cannot
        hold would abort in native code. --from-vocab takes the vocab's own size."""
        ranges = declared_ranges(VocabOptions)
        if self.from_vocab is None:
            reserved = self.reserved if ranges["reserved"].holds(self.reserved) else 0
            ranges["vocab_size"] = Range(ROOM + reserved, MAX_VOCAB_SIZE, why=(
                f"{len(SPECIAL_TOKENS)} special tokens, {reserved:,} reserved and {MIN_LEARNED} learned at "
                "least; at most 2^24: BERT's vocab has 30,522 tokens, XLM-R's 250,002"))
        return ranges

    def check(self) -> None:
        """One UsageError line naming the first option out of its range (construction runs it; pipeline
        planning calls it)."""
        check_ranges(self, self.ranges(), "vocab")
