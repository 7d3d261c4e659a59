"""Options of `corpusprep shard`; field names match the CLI flags so a TOML section can build them."""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.errors import UsageError
from corpusprep.mask import strategies
from corpusprep.ranges import SEED, Range, check_ranges
from corpusprep.settings import MAX_PASSES

COMPRESSIONS = ("zstd", "lz4", "snappy", "none")
DEFAULT_EXAMPLES_PER_SHARD = 50_000
MAX_SHARDS = 99_999  # shard-NNNNN.parquet: five digits, so names sort as the shards do


@dataclass(frozen=True)
class ShardOptions:
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    mask_strategy: str | None = None  # a name in corpusprep.mask.strategies; None: its DEFAULT
    whole_word_mask: bool = False  # alias of mask_strategy "whole-word"; set to match it once resolved
    dupe_masks: int = 1  # maskings of each training pair (validation pairs are masked once)
    num_shards: int | None = None  # training shards; validation gets the same rows per shard
    examples_per_shard: int | None = None  # default DEFAULT_EXAMPLES_PER_SHARD when neither is set
    max_seq_length: int | None = None  # None: from the pairs' stats.json, else 512
    seed: int = 12345
    row_group_size: int = 256  # rows; bench/shard.py --row-groups measures the random-access trade-off
    compression: str = "lz4"  # decodes ~2x faster than zstd for random reads, files ~1.4x larger

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
        """The range of each numeric option (`corpusprep.ranges`)."""
        return {
            "masked_lm_prob": Range(0, 1, integer=False, open_low=True, open_high=True),
            "max_predictions_per_seq": Range(1, 65_535, why="positions are uint16"),
            "dupe_masks": Range(1, MAX_PASSES),
            "num_shards": Range(1, MAX_SHARDS, optional=True, why="shard-NNNNN.parquet"),
            "examples_per_shard": Range(1, 2**31 - 1, optional=True),
            "max_seq_length": Range(5, 65_535, optional=True, why="num_tokens is uint16"),
            "seed": SEED,
            "row_group_size": Range(1, 2**31 - 1),
        }

    def check(self) -> None:
        """One UsageError line naming the first option out of its range (construction runs it; pipeline
        planning calls it)."""
        check_ranges(self, self.ranges(), "shard")
