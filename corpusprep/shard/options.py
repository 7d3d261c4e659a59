"""Options of `corpusprep shard`, each declared once (`corpusprep.flags`): the flags, a pipeline's [shard]
table and the library take them from here."""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.errors import UsageError
from corpusprep.flags import SEED_HELP, declared_ranges, flag
from corpusprep.mask import strategies
from corpusprep.ranges import SEED, Range, check_ranges
from corpusprep.settings import MAX_PASSES

COMPRESSIONS = ("zstd", "lz4", "snappy", "none")
DEFAULT_EXAMPLES_PER_SHARD = 50_000
MAX_SHARDS = 99_999  # shard-NNNNN.parquet: five digits, so names sort as the shards do


@dataclass(frozen=True)
class ShardOptions:
    """What the shards are: each field is a `shard` option (`corpusprep.flags`: name, type, default, help,
    range) and a key of a pipeline's [shard] table."""

    masked_lm_prob: float = flag(
        0.15, "Share of tokens to predict, in (0, 1): 0.15 BERT, 0.3 MosaicBERT.",
        range=Range(0, 1, integer=False, open_low=True, open_high=True))
    max_predictions_per_seq: int = flag(20, "Cap on predictions per example.",
                                        range=Range(1, 65_535, why="positions are uint16"))
    mask_strategy: str | None = flag(  # a name in corpusprep.mask.strategies; None: its DEFAULT
        None,
        "What is masked: single tokens (BERT); whole words, all ## pieces of a word with one 80/10/10 choice "
        "(on pairs built with --language zh the characters of a Chinese word, segmented with jieba: pip "
        "install jieba); or spans of whole words, geometric lengths p=0.2 up to 10 words, one choice per "
        "span (SpanBERT). Default: token.", metavar="token|whole-word|span")
    # alias of mask_strategy "whole-word"; set to match it once resolved
    whole_word_mask: bool = flag(False, "Same as --mask-strategy whole-word.")
    # maskings of each training pair (validation pairs are masked once)
    dupe_masks: int = flag(1, "Different maskings of each training pair.", range=Range(1, MAX_PASSES))
    num_shards: int | None = flag(None, "Training shards (validation gets the same rows per shard).",
                                  range=Range(1, MAX_SHARDS, optional=True, why="shard-NNNNN.parquet"))
    # default DEFAULT_EXAMPLES_PER_SHARD when neither is set
    examples_per_shard: int | None = flag(None, f"Rows per shard (default {DEFAULT_EXAMPLES_PER_SHARD:,}).",
                                          range=Range(1, 2**31 - 1, optional=True))
    max_seq_length: int | None = flag(  # None: from the pairs' stats.json, else 512
        None, "Longest example allowed (default: from the pairs' stats.json).",
        range=Range(5, 65_535, optional=True, why="num_tokens is uint16"))
    # rows; bench/shard.py --row-groups measures the random-access trade-off
    row_group_size: int = flag(256, "Parquet rows per row group (read unit).", range=Range(1, 2**31 - 1))
    # lz4 decodes ~2x faster than zstd for random reads, files ~1.4x larger
    compression: str = flag("lz4", "Parquet compression: lz4, zstd, snappy, none.")
    seed: int = flag(12345, SEED_HELP, range=SEED)

    def __post_init__(self) -> None:
        for name in ("mask_strategy", "compression"):  # any case, as --objective and --language take it
            if isinstance(value := getattr(self, name), str):
                object.__setattr__(self, name, value.lower())
        # Resolved once: ShardOptions(whole_word_mask=True) == ShardOptions(mask_strategy="whole-word"), so
        # both give the same run fingerprint and manifest options.
        strategy = strategies.resolve(vars(self))
        object.__setattr__(self, "mask_strategy", strategy)
        object.__setattr__(self, "whole_word_mask", strategy == strategies.WHOLE_WORD_ALIAS)
        self.check()
        checks = [
            (self.num_shards is None or self.examples_per_shard is None,
             "give --num-shards or --examples-per-shard, not both"),
            (self.compression in COMPRESSIONS, f"--compression must be one of {', '.join(COMPRESSIONS)}"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(message)

    @staticmethod
    def ranges() -> dict[str, Range]:
        """The range of each numeric option (`corpusprep.ranges`), as declared."""
        return declared_ranges(ShardOptions)

    def check(self) -> None:
        """One UsageError line naming the first option out of its range (construction runs it; pipeline
        planning calls it)."""
        check_ranges(self, self.ranges(), "shard")
