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

OUTPUT_FORMATS = ("jsonl", "parquet")
MAX_PERMUTATIONS = 4096  # 16 kB of signature a document (Lee et al.'s 9,000 would be 36 kB)
MAX_NGRAM = 64


@dataclass(frozen=True)
class CurateOptions:
    """What `corpusprep curate` keeps. Field names match the command's options and a pipeline's [curate]
    table, so `CurateOptions(**section)` reads one."""

    format: str = "jsonl"  # of the kept documents: jsonl or parquet (id, text, language, language_score)
    exact: bool = True  # remove documents equal after normalisation (curate/text.py: NFC, case, whitespace)
    near: bool = True  # remove near-duplicates: MinHash + LSH, candidates verified
    shingle: int = 5  # words per shingle (datatrove, Lee et al.)
    permutations: int = 112  # MinHash values per document (datatrove: 14 x 8)
    bands: int = 14  # LSH bands of permutations / bands rows each (datatrove)
    threshold: float = 0.7  # estimated Jaccard a candidate pair must reach (ours: see the module's docstring)
    lines: bool = False  # also remove lines (paragraphs) repeated across documents, but in their first one
    min_line_chars: int = 60  # shorter lines are never taken for boilerplate (headings, "References")
    decontaminate: tuple[str, ...] | list[str] = ()  # evaluation files: remove documents sharing an n-gram
    ngram: int = 13  # decontamination n-gram (GPT-3, NeMo Curator)
    min_example_words: int = 8  # shorter examples are matched whole from this many words (NeMo Curator)
    paragraphs: bool = False  # decontamination removes the matching paragraphs, not the whole document
    languages: tuple[str, ...] | list[str] = ()  # keep these (ISO 639-1); empty: no language identification
    filters: tuple[str, ...] | list[str] = ()  # quality filters by name (curate/filters), in order; () none
    seed: int = 12345  # the MinHash permutations
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
