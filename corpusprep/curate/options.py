"""`corpusprep curate`'s options: the one source of their defaults and checks, for the command line, a
pipeline's [curate] table and the driver (`curate/build.py`). Standard library only: the command line imports
it at start-up.

The near-duplicate defaults: word 5-gram shingles and 112 permutations in 14 bands of 8 rows are datatrove's
`MinhashConfig` (n_grams=5, num_buckets=14, hashes_per_bucket=8; datatrove removes every LSH collision,
unverified). Lee et al. 2022 ("Deduplicating Training Data Makes Language Models Better", section 4.2 and
appendix A) use 5-grams with 9,000 hashes in 450 bands of 20, then verify each candidate pair: its true
Jaccard index above 0.8, then its edit similarity above 0.8. curate verifies with the 112-value estimate
(standard error 0.038 at 0.8); the threshold 0.7 is our choice, not the field's: about 2.6 standard errors
under Lee et al.'s 0.8, so that a pair at a true 0.8 passes 99.4% of the time (at 0.65: 13%; at 0.6: 1.4%).
Decontamination: 13-word n-grams (GPT-3, Brown et al. 2020, appendix C); an example of 8 to 12 words is one
n-gram, the whole example, and a shorter one none, as NeMo Curator's `DownstreamTask._update_ngrams`
(min_ngram_size=8, max_ngram_size=13) does.
"""

from __future__ import annotations

from dataclasses import dataclass

from corpusprep.errors import UsageError
from corpusprep.flags import SEED_HELP, flag

OUTPUT_FORMATS = ("jsonl", "parquet")
MAX_PERMUTATIONS = 4096  # 16 kB of signature a document (Lee et al.'s 9,000 would be 36 kB)
MAX_NGRAM = 64


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list as the command line takes it ("en,fr", "gopher,"), as a tuple of names."""
    return tuple(name for name in text.split(",") if name.strip())


@dataclass(frozen=True)
class CurateOptions:
    """What `corpusprep curate` keeps. Each field is one of the command's options (`corpusprep.flags`:
    name, type, default, help) and a key of a pipeline's [curate] table, so `CurateOptions(**section)`
    reads one."""

    # of the kept documents: jsonl or parquet (id, text, language, language_score)
    format: str = flag("jsonl", f"Kept documents as {' or '.join(OUTPUT_FORMATS)} (id, text; language, "
                       "language_score with --languages).")
    # remove documents equal after normalisation (curate/text.py: NFC, case, whitespace)
    exact: bool = flag(True, "Remove exact duplicates (equal after NFC, case folding and whitespace runs as "
                       "one space).")
    near: bool = flag(True, "Remove near duplicates: MinHash + LSH, candidates verified; one document kept "
                      "per cluster, the first read.")
    shingle: int = flag(5, "Words per shingle (datatrove, Lee et al. 2022: 5).")
    permutations: int = flag(112, "MinHash values per document (datatrove: 112 = 14 x 8).")
    bands: int = flag(14, "LSH bands, each of permutations / bands rows (datatrove: 14).")
    # estimated Jaccard a candidate pair must reach (ours: see the module's docstring)
    threshold: float = flag(0.7, "Estimated Jaccard similarity (the share of equal MinHash values) from "
                            "which a candidate pair counts as near duplicates (ours; Lee et al. 2022 cut the "
                            "true Jaccard at 0.8).")
    # also remove lines (paragraphs) repeated across documents, but in their first one
    lines: bool = flag(False, "Also take out lines repeated across kept documents (boilerplate), in all but "
                       "the first document holding each (reason shared-lines when none is left).",
                       decls=("--lines/--no-lines",))
    # shorter lines are never taken for boilerplate (headings, "References")
    min_line_chars: int = flag(60, "--lines: shorter lines are never taken out.")
    # evaluation files: remove documents sharing an n-gram
    decontaminate: tuple[str, ...] | list[str] = flag(
        (),
        "Evaluation file (CoNLL-U, CoNLL NER columns, GLUE-style TSV/CSV/JSONL, SQuAD JSON; repeat the "
        "option for more): remove documents sharing an n-gram with one of its examples.",
        cli_type=list[str] | None, cli_default=None, show_default=False,
        parse=lambda given: tuple(given or ()))
    ngram: int = flag(13, "Words of the n-grams decontamination matches (GPT-3: 13).")
    # shorter examples are matched whole from this many words (NeMo Curator)
    min_example_words: int = flag(8, "Examples shorter than --ngram words are matched whole from this many "
                                  "words (NeMo Curator: 8); shorter ones not.")
    # decontamination removes the matching paragraphs, not the whole document
    paragraphs: bool = flag(False, "Decontamination takes out only the matching paragraphs (lines), not the "
                            "whole document.", decls=("--paragraphs",))
    # keep these (ISO 639-1); empty: no language identification
    languages: tuple[str, ...] | list[str] = flag(
        (), "Keep documents in these languages (ISO 639-1, comma-separated: en,fr); empty: no language "
        "identification.", cli_type=str, cli_default="", parse=_names)
    # quality filters by name (curate/filters), in order; () none
    filters: tuple[str, ...] | list[str] = flag(
        (), "Quality filters, comma-separated, in order: word-count, word-length, symbol-ratio, "
        "ellipsis-lines, repeated-lines, repeated-ngrams (gopher: all six), boilerplate-lines (all: every "
        "one).", cli_type=str, cli_default="", parse=_names)
    seed: int = flag(12345, SEED_HELP)  # the MinHash permutations
    docs_per_chunk: int = 4096  # documents per task (and CHUNK_CHARS of text): the unit of parallel work

    def __post_init__(self) -> None:
        for name in ("decontaminate", "languages", "filters"):  # a TOML list or a CLI list: a tuple
            value = getattr(self, name)
            object.__setattr__(self, name, tuple(value) if isinstance(value, (list, tuple)) else (value,))
        object.__setattr__(self, "format", str(self.format).lower())
        object.__setattr__(self, "languages", tuple(dict.fromkeys(x.strip().lower() for x in self.languages
                                                                     if x.strip())))
        checks = [
            (self.format in OUTPUT_FORMATS,
             f"--format {self.format!r}: choose from {', '.join(OUTPUT_FORMATS)}"),
            (1 <= self.shingle <= MAX_NGRAM,
             f"--shingle {self.shingle}: must be from 1 to {MAX_NGRAM} words"),
            (1 <= self.bands <= self.permutations <= MAX_PERMUTATIONS,
             f"--permutations {self.permutations} / --bands {self.bands}: need 1 <= bands <= permutations <= "
             f"{MAX_PERMUTATIONS}"),
            (self.permutations % max(self.bands, 1) == 0,
             f"--permutations {self.permutations} is not a multiple of --bands {self.bands} (each band holds "
             "permutations / bands rows)"),
            (0 < self.threshold <= 1, f"--threshold {self.threshold}: must be in (0, 1]"),
            (2 <= self.ngram <= MAX_NGRAM, f"--ngram {self.ngram}: must be from 2 to {MAX_NGRAM} words"),
            (1 <= self.min_example_words <= self.ngram,
             f"--min-example-words {self.min_example_words}: must be from 1 to --ngram ({self.ngram})"),
            (self.min_line_chars >= 1, f"--min-line-chars {self.min_line_chars}: must be at least 1"),
            (self.docs_per_chunk >= 1, "docs_per_chunk must be at least 1"),
            (all(len(x) in (2, 3) and x.isalpha() for x in self.languages),
             f"--languages {','.join(self.languages)}: ISO 639-1 codes (en, fr, ...), comma-separated"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(f"curate: {message}")
        if self.filters:
            from corpusprep.curate.filters import check_names

            object.__setattr__(self, "filters", check_names(self.filters))

    @property
    def rows(self) -> int:
        return self.permutations // self.bands

    @property
    def deduplicates(self) -> bool:
        return self.exact or self.near
