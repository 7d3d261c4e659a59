"""WordPiece vocab training (BERT's pipeline, on HF `tokenizers`) and the vocab directory it writes.

    report = build_vocab(["corpus/"], "vocab/", VocabOptions(vocab_size=8000))

A vocab directory holds `vocab.txt` (Google's format: one token per line, id = line number; loads with
`transformers.BertTokenizerFast`), `tokenizer.json` (normalizer, pre-tokenizer, WordPiece model, `[CLS] A
[SEP] B [SEP]` post-processor and decoder) and `vocab_report.json` (written last: its presence marks a
complete directory). The token order is Google's: `[PAD]`, the reserved `[unusedN]` slots, `[UNK] [CLS] [SEP]
[MASK]`, then the learned alphabet and word pieces.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers as hf_trainers

from corpusprep.engine.files import atomic_path, read_json, remove_stale_temps, write_json
from corpusprep.engine.lock import exclusive_dir
from corpusprep.engine.rng import stable_hash
from corpusprep.errors import UsageError
from corpusprep.read import Document, ReadOptions, ReadStats, iter_documents, resolve_inputs
from corpusprep.read.document import no_usable_documents, unk_warning
from corpusprep.tokenize import SPECIAL_TOKENS, VocabInfo, is_reserved

log = logging.getLogger("corpusprep.tokenize")

FILES = ("vocab.txt", "tokenizer.json", "vocab_report.json")
MAX_WORD_CHARS = 100  # as Google's BERT: a longer "word" becomes [UNK]
BATCH_CHARS = 1 << 20  # text handed to the trainer per call: large enough that Python is not the bottleneck
SAMPLE_DOCUMENTS = 256  # for the [UNK] rate and pieces per word: a uniform sample chosen by document id
SAMPLE_DOC_CHARS = 2000
MIN_LEARNED = 100  # a vocab must have room for at least this many tokens besides specials and reserved slots

Progress = Callable[[str, int, int], None]  # (phase, documents, bytes read)


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
    from_vocab: str | None = None

    def __post_init__(self) -> None:
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


def leading_tokens(reserved: int) -> list[str]:
    """The tokens before the learned ones, in Google's order: [PAD] [unused0..] [UNK] [CLS] [SEP] [MASK]."""
    return ["[PAD]", *(f"[unused{i}]" for i in range(reserved)), *SPECIAL_TOKENS[1:]]


def _bert_pipeline(vocab: dict[str, int] | None, cased: bool) -> Tokenizer:
    """BERT's normalizer, pre-tokenizer, WordPiece model and decoder, as `BertTokenizerFast` builds them."""
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_WORD_CHARS))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=not cased, lowercase=not cased
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer


def tokenizer_from_tokens(tokens: Sequence[str], cased: bool = False) -> Tokenizer:
    """BERT's tokenizer over a token list (id = position), with its `[CLS] A [SEP] B [SEP]` template."""
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = _bert_pipeline(vocab, cased)
    # Matched in raw text before normalization, as transformers does, so "[MASK]" survives lowercasing.
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    cls, sep = ("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[cls, sep]
    )
    return tokenizer


def train_tokenizer(texts: Iterable[str] | Iterable[list[str]], options: VocabOptions) -> Tokenizer:
    """Train a WordPiece vocab on texts (or batches of texts); the result is laid out as `leading_tokens`."""
    learner = _bert_pipeline(None, options.cased)
    trainer = hf_trainers.WordPieceTrainer(
        vocab_size=options.vocab_size - options.reserved,  # reserved slots are added after training
        min_frequency=options.min_frequency,
        limit_alphabet=options.limit_alphabet,
        special_tokens=list(SPECIAL_TOKENS),
        continuing_subword_prefix="##",
        show_progress=False,
    )
    learner.train_from_iterator(texts, trainer)
    learned = sorted(learner.get_vocab(with_added_tokens=False).items(), key=lambda item: item[1])
    tokens = leading_tokens(options.reserved) + [t for t, _ in learned if t not in SPECIAL_TOKENS]
    if len(tokens) > options.vocab_size:
        raise UsageError(
            f"--vocab-size {options.vocab_size} is too small for this corpus's alphabet "
            f"({len(tokens)} tokens needed): raise --vocab-size or lower --limit-alphabet"
        )
    return tokenizer_from_tokens(tokens, options.cased)


def vocab_tokens(tokenizer: Tokenizer) -> list[str]:
    """The tokenizer's vocab in id order (the lines of vocab.txt)."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    tokens = sorted(vocab, key=vocab.__getitem__)
    assert [vocab[t] for t in tokens] == list(range(len(tokens))), "vocab ids must be 0..n-1"
    return tokens


def read_vocab_txt(path: str | Path) -> tuple[bytes, list[str]]:
    """The bytes and tokens of a vocab.txt, checked: UTF-8, one unique token a line, specials present."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"{path}: cannot read vocab: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: not UTF-8 at byte {error.start}") from None
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


def measure(tokenizer: Tokenizer, texts: Sequence[str]) -> dict[str, Any]:
    """How well the vocab covers texts: the share of [UNK] tokens and mean word pieces per word."""
    unk = tokenizer.token_to_id("[UNK]")
    words = pieces = unknown = 0
    for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False):
        pieces += len(encoding.ids)
        unknown += encoding.ids.count(unk)
        words += len(set(encoding.word_ids))
    return {
        "documents": len(texts),
        "characters": sum(map(len, texts)),
        "words": words,
        "tokens": pieces,
        "unk_tokens": unknown,
        "unk_rate": unknown / max(pieces, 1),
        "pieces_per_word": pieces / max(words, 1),
    }


class _Sample:
    """A uniform, bounded, deterministic sample of documents: those with the smallest hash of their id."""

    def __init__(self, size: int = SAMPLE_DOCUMENTS):
        self.size = size
        self.heap: list[tuple[int, str, str]] = []  # (-hash, id, text): the root is the largest kept hash

    def offer(self, doc_id: str, text: str) -> None:
        key = -stable_hash(doc_id)
        if len(self.heap) < self.size:
            heapq.heappush(self.heap, (key, doc_id, text[:SAMPLE_DOC_CHARS]))
        elif key > self.heap[0][0]:
            heapq.heapreplace(self.heap, (key, doc_id, text[:SAMPLE_DOC_CHARS]))

    def texts(self) -> list[str]:
        return [text for _, _, text in sorted(self.heap, reverse=True)]


def _batches(
    documents: Iterator[Document],
    read_stats: ReadStats,
    counts: dict[str, int],
    sample: _Sample,
    progress: Progress | None,
) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for doc in documents:
        batch.append(doc.text)
        size += len(doc.text)
        sample.offer(doc.id, doc.text)
        if size >= BATCH_CHARS:
            counts["characters"] += size
            yield batch
            batch, size = [], 0
            if progress:
                progress("reading", read_stats.documents, read_stats.bytes)
    counts["characters"] += size
    if batch:
        yield batch
    if progress:
        progress("merging", read_stats.documents, read_stats.bytes)


def _run_key(inputs: Sequence[str | Path] | None, options: VocabOptions, read_options: ReadOptions) -> dict:
    """What makes two runs the same (a directory built with the same key is reused): the inputs, each file's
    size and modification time (so an edited corpus is retrained), and the options."""
    files = [(path.stat(), source) for path, source in resolve_inputs(inputs)] if inputs else []
    return {
        "inputs": [str(Path(p).absolute()) for p in inputs or []],
        "input_files": [[source, st.st_size, st.st_mtime_ns] for st, source in files],
        "options": asdict(options),
        "read_options": asdict(read_options) if inputs else None,
    }


def _check_existing(vocab_dir: Path, key: dict, overwrite: bool) -> dict | None:
    """The existing report if `vocab_dir` already holds this vocab; refuse to replace a different one."""
    report_path = vocab_dir / "vocab_report.json"
    if report_path.is_file() and all((vocab_dir / f).is_file() for f in FILES):
        report = read_json(report_path)
        if {k: report.get(k) for k in key} == key:
            return report
    if not overwrite and any((vocab_dir / f).exists() for f in FILES):
        raise UsageError(
            f"{vocab_dir}: holds a different or incomplete vocab; pass --overwrite to replace it"
        )
    return None


def build_vocab(
    inputs: Sequence[str | Path] | None,
    vocab_dir: str | Path,
    options: VocabOptions | None = None,
    read_options: ReadOptions | None = None,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Train a vocab on `inputs` (or take `options.from_vocab`), write the vocab directory, return the report.

    A directory already built from the same inputs and options is reused (report["reused"] is True).
    """
    options = options or VocabOptions()
    read_options = read_options or ReadOptions()
    if options.from_vocab is None and not inputs:
        raise UsageError("no input paths given (or pass --from-vocab FILE)")
    vocab_dir = Path(vocab_dir)
    key = _run_key(inputs, options, read_options)  # resolves inputs: a typo fails before any output
    started = time.perf_counter()
    read_stats = ReadStats()
    documents = iter_documents(inputs, read_options, read_stats) if inputs else iter([])
    if options.from_vocab is not None:
        vocab_data, tokens = read_vocab_txt(options.from_vocab)
    with exclusive_dir(vocab_dir):
        existing = _check_existing(vocab_dir, key, overwrite)
        if existing is not None:
            return {**existing, "reused": True}
        remove_stale_temps(vocab_dir)
        counts = {"characters": 0}
        sample = _Sample()
        batches = _batches(documents, read_stats, counts, sample, progress)
        train_seconds = None
        if options.from_vocab is None:
            tokenizer = train_tokenizer(batches, options)
            train_seconds = time.perf_counter() - started
            tokens = vocab_tokens(tokenizer)
            vocab_data = ("\n".join(tokens) + "\n").encode("utf-8")
        else:
            for _ in batches:  # only to draw the sample the coverage figures are measured on
                pass
            tokenizer = tokenizer_from_tokens(tokens, options.cased)
        if inputs and read_stats.documents == 0:  # a 5-token vocab is no result: say why nothing was used
            raise no_usable_documents(inputs, read_stats.to_dict())
        if progress:
            progress("measuring", read_stats.documents, read_stats.bytes)
        report = {
            **key,
            "vocab_size": len(tokens),
            "reserved": sum(map(is_reserved, tokens)),
            "special_ids": {t: tokens.index(t) for t in SPECIAL_TOKENS},
            "documents": {
                "read": read_stats.documents_seen,
                "used": read_stats.documents,
                "skipped": dict(sorted(read_stats.skipped.items())),
            },
            "characters": counts["characters"],
            "bytes_read": read_stats.bytes,
            "read_stats": read_stats.to_dict(),
            "seconds": {"train": train_seconds},
            "sample": measure(tokenizer, sample.texts()) if sample.heap else None,
        }
        sample_stats = report["sample"] or {"unk_tokens": 0, "tokens": 0}
        if warning := unk_warning(sample_stats["unk_tokens"], sample_stats["tokens"], f"{vocab_dir}: sample"):
            log.warning(warning)
        with atomic_path(vocab_dir / "vocab.txt") as tmp:
            tmp.write_bytes(vocab_data)
        with atomic_path(vocab_dir / "tokenizer.json") as tmp:
            tokenizer.save(str(tmp))
        info = VocabInfo.load(vocab_dir)
        assert info.tokens == tuple(tokens), "vocab.txt must read back as written"
        report["sha256"] = info.sha256
        report["seconds"]["total"] = time.perf_counter() - started
        write_json(vocab_dir / "vocab_report.json", report)  # last: marks the directory complete
    return {**report, "reused": False}


def train_vocab(
    inputs: Sequence[str | Path],
    vocab_dir: str | Path,
    options: VocabOptions | None = None,
    read_options: ReadOptions | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Train a WordPiece vocab on the documents of `inputs` and write `vocab_dir`; return the report."""
    options = options or VocabOptions()
    if options.from_vocab is not None:
        raise UsageError("train_vocab trains: use vocab_from_file for an existing vocab.txt")
    return build_vocab(inputs, vocab_dir, options, read_options, **kwargs)


def vocab_from_file(
    vocab_txt: str | Path,
    vocab_dir: str | Path,
    cased: bool = False,
    inputs: Sequence[str | Path] | None = None,
    read_options: ReadOptions | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """A vocab directory from an existing vocab.txt (copied byte for byte); coverage measured on `inputs`."""
    options = VocabOptions(cased=cased, from_vocab=str(Path(vocab_txt).absolute()))
    return build_vocab(inputs, vocab_dir, options, read_options, **kwargs)
