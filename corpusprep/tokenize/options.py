"""`corpusprep vocab`'s options: the one source of their defaults and checks, for the command line, a
pipeline's [vocab] table and the driver (`tokenize/vocab.py`). Standard library only: the command line
imports it at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.errors import UsageError
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
        # sizes are checked before anything is read: one the trainer cannot hold would abort in native code
        sizes = {"--vocab-size": self.vocab_size, "--reserved": self.reserved,
                 "--limit-alphabet": self.limit_alphabet, "--min-frequency": self.min_frequency}
        for flag, value in sizes.items():
            if value > MAX_VOCAB_SIZE and (flag != "--vocab-size" or self.from_vocab is None):
                raise UsageError(f"{flag} {value:,}: at most {MAX_VOCAB_SIZE:,} (2^24; BERT's vocab has "
                                 "30,522 tokens, XLM-R's 250,002)")
        if self.reserved < 0:
            raise UsageError(f"--reserved {self.reserved}: must be 0 or more")
        floor = len(SPECIAL_TOKENS) + self.reserved + MIN_LEARNED
        if self.from_vocab is None and self.vocab_size < floor:
            raise UsageError(
                f"--vocab-size {self.vocab_size} is too small: {len(SPECIAL_TOKENS)} special tokens and "
                f"{self.reserved} reserved slots leave no room for words (at least {floor})"
            )
        if self.min_frequency < 1:
            raise UsageError(f"--min-frequency {self.min_frequency}: must be 1 or more")
        if self.limit_alphabet < 1:
            raise UsageError(f"--limit-alphabet {self.limit_alphabet}: must be 1 or more")
