"""`corpusprep vocab`'s options: the one source of their defaults and checks, for the command line, a
pipeline's [vocab] table and the driver (`tokenize/vocab.py`). Standard library only: the command line
imports it at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.ranges import Range, check_ranges
from corpusprep.tokenize import SPECIAL_TOKENS

MIN_LEARNED = 100  # a vocab must have room for at least this many tokens besides specials and reserved slots
# The largest vocab we build. The tokenizers trainer reserves ~70 bytes a token up front (a 10^9 vocab asks
# for 70 GB and aborts in native code); 2^24 (16.8M, 1.2 GB) is 60x XLM-R's 250k and fits any token dtype
# we write (uint32 above 65,536). A corpus gives fewer tokens than asked when it has fewer pieces: a warning.
MAX_VOCAB_SIZE = 2**24


@dataclass(frozen=True)
class VocabOptions:
    """Options of `corpusprep vocab` (same names), e.g. from a pipeline TOML section: VocabOptions(**section).

    `vocab_size` counts every line of vocab.txt (specials and reserved slots included), as the model's
    embedding table does. `from_vocab`: build the directory from an existing vocab.txt instead of training.
    """

    vocab_size: int = 30000
    min_frequency: int = 2
    limit_alphabet: int = 1000
    reserved: int = 0
    cased: bool = False
    strip_accents: bool | None = None  # None: strip when lowercasing (BERT-uncased); set False for most
    # languages other than English, where accents tell words apart (French "où"/"ou", German "schön"/"schon")
    from_vocab: str | None = None

    def __post_init__(self) -> None:
        self.check()

    def ranges(self) -> dict[str, Range]:
        """The range of each numeric option (`corpusprep.ranges`); sizes are checked before anything is read:
        one the trainer cannot hold would abort in native code. --from-vocab takes the vocab's own size."""
        room = len(SPECIAL_TOKENS) + MIN_LEARNED  # what a vocab holds besides its reserved slots, at least
        ranges = {  # reserved first: vocab_size's floor counts it
            "reserved": Range(0, MAX_VOCAB_SIZE - room, why=f"2^24 less {room}: specials, least learned"),
            "min_frequency": Range(1, MAX_VOCAB_SIZE, why="2^24"),
            "limit_alphabet": Range(1, MAX_VOCAB_SIZE, why="2^24"),
        }
        if self.from_vocab is None:
            reserved = self.reserved if ranges["reserved"].holds(self.reserved) else 0
            ranges["vocab_size"] = Range(room + reserved, MAX_VOCAB_SIZE, why=(
                f"{len(SPECIAL_TOKENS)} special tokens, {reserved:,} reserved and {MIN_LEARNED} learned at "
                "least; at most 2^24: BERT's vocab has 30,522 tokens, XLM-R's 250,002"))  # fmt: skip
        return ranges

    def check(self) -> None:
        """One UsageError line naming the first option out of its range (construction runs it; pipeline
        planning calls it)."""
        check_ranges(self, self.ranges(), "vocab")
