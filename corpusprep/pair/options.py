"""What pairs are made of (`PairOptions`): a light module (no numpy, no pyarrow), so that `corpusprep
build-pairs` takes its options from here (each declared once: `corpusprep.flags`), and a pipeline's [pairs]
table is `PairOptions(**section)`."""

from __future__ import annotations

from dataclasses import dataclass, replace

from corpusprep.errors import UsageError
from corpusprep.flags import SEED_HELP, declared_ranges, flag, like, setting
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
    """What the pairs are made of: each field is a `build-pairs` option (`corpusprep.flags`: name, type,
    default, help, range) and a key of a pipeline's [pairs] table, `PairOptions(**section)`."""

    max_seq_length: int = flag(128, "Row length with special tokens: A+B get 3 fewer, a none piece 2.",
                               range=Range(5, 65_535, why="token positions are uint16"))
    objective: str = flag(  # a name in corpusprep.objectives
        DEFAULT_OBJECTIVE,
        "Sentence task: nsp (BERT), sop (ALBERT: sentence order) or none (RoBERTa: masked LM only, rows of "
        "whole sentences).", metavar="nsp|sop|none")
    # none only: pack pieces of several documents into a row. None is the objective's default, and is
    # resolved on construction (True for none, False for nsp and sop), so equal settings are equal options.
    pack: bool | None = flag(
        None, "none: fill rows with pieces of several documents (default for none; nsp and sop rows are "
        "pairs).", decls=("--pack/--no-pack",))
    short_seq_prob: float = flag(0.1, "Share of rows given a shorter random target length (nsp, sop).",
                                 range=Range(0, 1, integer=False))
    # when the short target is drawn: "segment" (each new chunk: the share of short rows is short_seq_prob
    # whatever the document lengths) or "document" (once per document and pass, as Google's script does)
    short_seq_by: str = flag(
        "segment", "Draw the short target for each new segment (the share of short rows follows "
        "--short-seq-prob), or once per document as Google's script does.", metavar="segment|document")
    dupe_factor: int = flag(5, "Passes over the data, each with different random choices.",
                            range=Range(1, MAX_PASSES, why="BERT: 10"))
    # at least the objective's `min_partition_docs` (`ranges`)
    docs_per_partition: int = flag(
        2048, "Documents per partition: the pool NotNext segments come from; bounds memory.",
        range=Range(1, 2**31 - 1))
    validation_fraction: float = flag(0.01, "Share of documents (by id) held out.",
                                      range=Range(0, 1, integer=False, open_high=True))
    splitter: str = like(SentencesOptions, "splitter")
    language: str = like(SentencesOptions, "language")  # ISO 639-1: the splitter's per-language rules
    line_breaks: str = like(SentencesOptions, "line_breaks")  # auto, sentence, paragraph: split.linebreaks
    seed: int = flag(12345, SEED_HELP, range=SEED)
    docs_per_chunk: int = setting(256, range=Range(1, MAX_CHUNK_DOCS, why="pair.sizes.MAX_CHUNK_DOCS"))

    def __post_init__(self) -> None:
        name = self.objective.lower() if isinstance(self.objective, str) else self.objective
        spec = objective_spec(name)  # one line naming the choices on an unknown name
        object.__setattr__(self, "objective", spec.name)
        self.check()
        for name in ("short_seq_by", "splitter", "line_breaks"):  # any case, as --objective and --language
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, getattr(self, name).lower())
        if self.short_seq_by not in SHORT_SEQ_BY:
            raise UsageError(f"build-pairs: short_seq_by must be {' or '.join(SHORT_SEQ_BY)}, not "
                             f"{self.short_seq_by!r}")
        for name, value in spec.resolve_options(self).items():  # pack; what rows of pieces do not use
            object.__setattr__(self, name, value)
        make_splitter(self.splitter, self.language, self.line_breaks)  # fails now on a bad name or mode

    def ranges(self) -> dict[str, Range]:
        """The range of each numeric option (`corpusprep.ranges`): as declared, the partitions' floor the
        objective's."""
        least = objective_spec(self.objective).min_partition_docs
        declared = declared_ranges(PairOptions)
        if least > 1:
            why = f"{self.objective} draws NotNext segments from other documents"
            declared["docs_per_partition"] = replace(declared["docs_per_partition"], low=least, why=why)
        return declared

    def check(self) -> None:
        """One UsageError line naming the first option out of its range (construction runs it; pipeline
        planning calls it)."""
        check_ranges(self, self.ranges(), "build-pairs")
