"""What pairs are made of (`PairOptions`): a light module (no numpy, no pyarrow), so that `corpusprep
build-pairs` takes its options' defaults from here, and a pipeline's [pairs] table is
`PairOptions(**section)`."""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.errors import UsageError
from corpusprep.objectives import DEFAULT as DEFAULT_OBJECTIVE
from corpusprep.objectives import objective as objective_spec
from corpusprep.pair.sizes import MAX_CHUNK_DOCS
from corpusprep.ranges import SEED, Range, check_ranges
from corpusprep.settings import MAX_PASSES
from corpusprep.split import SentencesOptions, make_splitter

# when short_seq_prob is drawn: each new chunk, or once per document (pair/instances.py draws it)
SHORT_SEQ_BY = ("segment", "document")


@dataclass(frozen=True)
class PairOptions:
    """What the pairs are made of. Fields match the `build-pairs` options, so a TOML section gives
    `PairOptions(**section)`."""

    max_seq_length: int = 128
    short_seq_prob: float = 0.1
    # when the short target is drawn: "segment" (each new chunk: the share of short rows is short_seq_prob
    # whatever the document lengths) or "document" (once per document and pass, as Google's script does)
    short_seq_by: str = "segment"
    dupe_factor: int = 5
    docs_per_partition: int = 2048
    validation_fraction: float = 0.01
    seed: int = 12345
    splitter: str = SentencesOptions.splitter
    docs_per_chunk: int = 256
    language: str = SentencesOptions.language  # ISO 639-1: the splitter's per-language rules
    line_breaks: str = SentencesOptions.line_breaks  # auto, sentence, paragraph: see split.linebreaks
    objective: str = DEFAULT_OBJECTIVE  # a name in corpusprep.objectives
    # none only: pack pieces of several documents into a row. None is the objective's default, and is
    # resolved on construction (True for none, False for nsp and sop), so equal settings are equal options.
    pack: bool | None = None

    def __post_init__(self) -> None:
        name = self.objective.lower() if isinstance(self.objective, str) else self.objective
        spec = objective_spec(name)  # one line naming the choices on an unknown name
        object.__setattr__(self, "objective", spec.name)
        self.check()
        if self.short_seq_by not in SHORT_SEQ_BY:
            raise UsageError(f"build-pairs: short_seq_by must be {' or '.join(SHORT_SEQ_BY)}, not "
                             f"{self.short_seq_by!r}")
        for name, value in spec.resolve_options(self).items():  # pack; what rows of pieces do not use
            object.__setattr__(self, name, value)
        for name in ("splitter", "line_breaks"):  # any case, as --objective and --language take it
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, getattr(self, name).lower())
        make_splitter(self.splitter, self.language, self.line_breaks)  # fails now on a bad name or mode

    def ranges(self) -> dict[str, Range]:
        """The range of each numeric option (`corpusprep.ranges`)."""
        least = objective_spec(self.objective).min_partition_docs
        return {
            "max_seq_length": Range(5, 65_535, why="token positions are uint16"),
            "short_seq_prob": Range(0, 1, integer=False),
            "dupe_factor": Range(1, MAX_PASSES, why="BERT: 10"),
            "docs_per_partition": Range(least, 2**31 - 1, why=f"{self.objective} draws NotNext segments from "
                                        "other documents" if least > 1 else ""),  # fmt: skip
            "validation_fraction": Range(0, 1, integer=False, open_high=True),
            "seed": SEED,
            "docs_per_chunk": Range(1, MAX_CHUNK_DOCS, why="pair.sizes.MAX_CHUNK_DOCS", flag=False),
        }

    def check(self) -> None:
        """One UsageError line naming the first option out of its range (construction runs it; pipeline
        planning calls it)."""
        check_ranges(self, self.ranges(), "build-pairs")
