"""WordPiece vocab training (BERT's pipeline, on HF `tokenizers`) and the vocab directory it writes.

    report = build_vocab(["corpus/"], "vocab/", VocabOptions(vocab_size=8000))

A vocab directory holds `vocab.txt` (Google's format: one token per line, id = line number; loads with
`transformers.BertTokenizerFast`), `tokenizer.json` (normalizer, pre-tokenizer, WordPiece model, `[CLS] A
[SEP] B [SEP]` post-processor and decoder), `tokenizer_config.json` and `special_tokens_map.json` (so that
`transformers.AutoTokenizer.from_pretrained(dir)` gives a BERT tokenizer), `vocab_report.json` and
`artifact.json` (written last: the files the directory owns and what they were built from,
`corpusprep.engine.artifact`). The token order is Google's: `[PAD]`, the reserved `[unusedN]` slots, `[UNK]
[CLS] [SEP] [MASK]`, then the learned alphabet and word pieces.
"""

from __future__ import annotations

import heapq
import json
import logging
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers as hf_trainers

from corpusprep.engine import storage
from corpusprep.engine.files import atomic_path, write_json
from corpusprep.engine.outputs import OUTPUT_KINDS
from corpusprep.engine.progress import Reporter
from corpusprep.engine.records import load_record
from corpusprep.engine.rng import stable_hash
from corpusprep.engine.stage import RunContext, stage_run
from corpusprep.errors import UsageError
from corpusprep.read import Document, ReadOptions, ReadStats, iter_documents
from corpusprep.read.document import no_usable_documents, unk_warning
from corpusprep.read.inputs import input_files
from corpusprep.tokenize import SPECIAL_TOKENS, VocabInfo, is_reserved, read_vocab_txt
from corpusprep.tokenize.options import VocabOptions

log = logging.getLogger("corpusprep.tokenize")

FILES = OUTPUT_KINDS["vocab"].owns  # vocab.txt, tokenizer.json, the Hugging Face configs, vocab_report.json
# transformers' names for BERT's special tokens (special_tokens_map.json, tokenizer_config.json)
HF_SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
MAX_WORD_CHARS = 100  # as Google's BERT: a longer "word" becomes [UNK]
BATCH_CHARS = 1 << 20  # text handed to the trainer per call: large enough that Python is not the bottleneck
SAMPLE_DOCUMENTS = 256  # for the [UNK] rate and pieces per word: a uniform sample chosen by document id
SAMPLE_DOC_CHARS = 2000

Progress = Callable[[str, int, int], None]  # (phase, documents, bytes read)


def leading_tokens(reserved: int) -> list[str]:
    """The tokens before the learned ones, in Google's order: [PAD] [unused0..] [UNK] [CLS] [SEP] [MASK]."""
    return ["[PAD]", *(f"[unused{i}]" for i in range(reserved)), *SPECIAL_TOKENS[1:]]


def _bert_pipeline(vocab: dict[str, int] | None, cased: bool, strip_accents: bool | None = None) -> Tokenizer:
    """BERT's normalizer, pre-tokenizer, WordPiece model and decoder, as `BertTokenizerFast` builds them."""
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_WORD_CHARS))
    strip = not cased if strip_accents is None else strip_accents
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=strip, lowercase=not cased
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer


def tokenizer_from_tokens(
    tokens: Sequence[str], cased: bool = False, strip_accents: bool | None = None
) -> Tokenizer:
    """BERT's tokenizer over a token list (id = position), with its `[CLS] A [SEP] B [SEP]` template."""
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = _bert_pipeline(vocab, cased, strip_accents)
    # Matched in raw text before normalization, as transformers does, so "[MASK]" survives lowercasing.
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    cls, sep = ("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[cls, sep]
    )
    return tokenizer


@dataclass
class Alphabet:
    """The characters of a text as the WordPiece trainer sees them (normalized, whitespace removed).

    `counts`: occurrences of each character; `inner`: characters seen after the first character of a word,
    which get a "##c" piece. Handing both to the trainer makes its result independent of hash-map order.
    """

    cased: bool
    strip_accents: bool | None = None
    counts: Counter[str] = field(default_factory=Counter)
    inner: set[str] = field(default_factory=set)
    # BERT's normalizer works character by character, so it is applied once per distinct character, as a
    # str.translate table; punctuation (a word of its own) and whitespace become " ", the word breaks
    _normalized: dict[str, str] = field(default_factory=dict)
    _table: dict[int, str] = field(default_factory=dict)

    def update(self, texts: Iterable[str]) -> None:
        text = "\n".join(texts)
        raw = Counter(text)
        if new := raw.keys() - self._normalized.keys():
            normalizer = _bert_pipeline(None, self.cased, self.strip_accents).normalizer
            for c in new:
                normalized = self._normalized[c] = normalizer.normalize_str(c)
                breaks = (" " if x.isspace() or _is_punctuation(x) else x for x in normalized)
                self._table[ord(c)] = "".join(breaks)
        for c, n in raw.items():
            for x in self._normalized[c]:
                self.counts[x] += n
        words = text.translate(self._table)
        self.inner.update(re.sub(r"(?<!\S)\S", "", words))  # drop each word's first character
        self.inner.discard(" ")

    def kept(self, limit: int) -> list[str]:
        """The `limit` most frequent characters (ties: lowest code point), in code point order."""
        chars = [c for c in self.counts if not c.isspace()]
        return sorted(sorted(chars, key=lambda c: (-self.counts[c], c))[:limit])


def _is_punctuation(c: str) -> bool:
    """BERT's punctuation: ASCII non-alphanumeric symbols and Unicode category P*."""
    return (c.isascii() and not c.isalnum() and c.isprintable()) or unicodedata.category(c).startswith("P")


def count_alphabet(
    texts: Iterable[str] | Iterable[list[str]], cased: bool, strip_accents: bool | None = None
) -> Alphabet:
    """The Alphabet of texts (or batches of texts), as `train_tokenizer` needs it."""
    alphabet = Alphabet(cased, strip_accents)
    for batch in texts:
        alphabet.update([batch] if isinstance(batch, str) else batch)
    return alphabet


def train_tokenizer(
    texts: Iterable[str] | Iterable[list[str]], options: VocabOptions, alphabet: Alphabet | None = None
) -> Tokenizer:
    """Train a WordPiece vocab on texts (or batches of texts); the result is laid out as `leading_tokens`.

    Deterministic: the same texts and options give the same vocab in any process. The upstream trainer
    numbers the "##c" pieces in hash-map order and breaks ties between equally frequent merges by those
    numbers (huggingface/tokenizers#1794); here the alphabet (`count_alphabet` over the same texts: one pass
    more when not given) and the "##c" pieces are fixed before training, in code point order.
    """
    if alphabet is None:
        texts = list(texts)
        alphabet = count_alphabet(texts, options.cased, options.strip_accents)
    chars = alphabet.kept(options.limit_alphabet)
    continuing = [f"##{c}" for c in chars if c in alphabet.inner]
    learner = _bert_pipeline(None, options.cased, options.strip_accents)
    trainer = hf_trainers.WordPieceTrainer(
        vocab_size=options.vocab_size - options.reserved,  # reserved slots are added after training
        min_frequency=options.min_frequency,
        # the alphabet is ours: every kept character, and only those (the others have lower counts)
        initial_alphabet=chars,
        limit_alphabet=len(chars),
        # ids before the trainer's hash-ordered loop numbers them; a trainer's "special" token is just a
        # vocab entry here (the tokenizer is rebuilt from the token list below)
        special_tokens=[*SPECIAL_TOKENS, *continuing],
        continuing_subword_prefix="##",
        show_progress=False,
    )
    learner.train_from_iterator(texts, trainer)
    learned = sorted(learner.get_vocab(with_added_tokens=False).items(), key=lambda item: item[1])
    pieces = [t for t, _ in learned if t not in SPECIAL_TOKENS and t not in continuing]
    singles = sum(len(t) == 1 for t in pieces[: len(chars)])
    # Google's order: the characters, their "##" forms, then the merged pieces
    tokens = leading_tokens(options.reserved) + pieces[:singles] + continuing + pieces[singles:]
    if len(tokens) > options.vocab_size:
        raise UsageError(
            f"--vocab-size {options.vocab_size} is too small for this corpus's alphabet "
            f"({len(tokens)} tokens needed): raise --vocab-size or lower --limit-alphabet"
        )
    if len(tokens) < options.vocab_size:
        log.warning(f"{len(tokens):,} tokens, not the {options.vocab_size:,} of --vocab-size: the corpus has "
                    f"no more pieces seen at least --min-frequency {options.min_frequency} times")
    return tokenizer_from_tokens(tokens, options.cased, options.strip_accents)


def hf_tokenizer_files(
    cased: bool, model_max_length: int | None = None, strip_accents: bool | None = None
) -> dict[str, str]:
    """tokenizer_config.json and special_tokens_map.json: beside vocab.txt and tokenizer.json they make
    `AutoTokenizer.from_pretrained(dir)` a BERT tokenizer with our casing (used by `trainer.export` too)."""
    config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": not cased,
        "strip_accents": strip_accents,  # None: follow do_lower_case, as our normalizer does
        "tokenize_chinese_chars": True,
        "clean_up_tokenization_spaces": True,
        **HF_SPECIAL_TOKENS,
    }
    if model_max_length is not None:  # a vocab alone has no model length; an exported model has
        config["model_max_length"] = model_max_length
    return {
        "tokenizer_config.json": json.dumps(config, indent=2) + "\n",
        "special_tokens_map.json": json.dumps(HF_SPECIAL_TOKENS, indent=2) + "\n",
    }


def vocab_tokens(tokenizer: Tokenizer) -> list[str]:
    """The tokenizer's vocab in id order (the lines of vocab.txt)."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    tokens = sorted(vocab, key=vocab.__getitem__)
    assert [vocab[t] for t in tokens] == list(range(len(tokens))), "vocab ids must be 0..n-1"
    return tokens


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


def _alphabet_pass(
    inputs: Sequence[str | Path], read_options: ReadOptions, options: VocabOptions, progress: Progress | None
) -> Alphabet:
    """A first pass over the inputs for `train_tokenizer`'s alphabet. Read problems are counted and reported
    by the training pass that follows, so this one stays quiet."""
    read_log = logging.getLogger("corpusprep.read")
    was_disabled, read_log.disabled = read_log.disabled, True
    try:
        stats = ReadStats()
        documents = iter_documents(inputs, read_options, stats)
        alphabet = Alphabet(options.cased, options.strip_accents)
        for batch in _batches(documents, stats, {"characters": 0}, _Sample(), None):
            alphabet.update(batch)
            if progress:
                progress("alphabet", stats.documents, stats.bytes)
        return alphabet
    finally:
        read_log.disabled = was_disabled


def _run_key(
    inputs: Sequence[str | Path] | None, options: VocabOptions, read_options: ReadOptions, vocab_dir: Path
) -> dict:
    """What makes two runs the same (a directory built with the same key is reused): the inputs, each file's
    size and modification time (so an edited corpus is retrained), and the options."""
    return {
        "inputs": {"files": input_files(inputs, vocab_dir) if inputs else []},
        "options": asdict(options),
        "read_options": asdict(read_options) if inputs else None,
    }


def build_vocab(
    inputs: Sequence[str | Path] | None,
    vocab_dir: str | Path,
    options: VocabOptions | None = None,
    read_options: ReadOptions | None = None,
    *,
    context: RunContext | None = None,
    part_of: str | Path | None = None,
) -> dict[str, Any]:
    """Train a vocab on `inputs` (or take `options.from_vocab`), write the vocab directory, return the report.

    A directory already built from the same inputs and options is reused (report["reused"] is True).
    `context`: overwrite, progress (a line on a terminal; by default neither); the tokenizers trainer runs its
    own threads. `part_of`: the output the vocab directory belongs to (an import's checkpoint): `Artifact`.
    """
    context = context or RunContext(progress=False)
    options = options or VocabOptions()
    read_options = read_options or ReadOptions()
    if options.from_vocab is None and not inputs:
        raise UsageError("no input paths given (or pass --from-vocab FILE)")
    vocab_dir = Path(vocab_dir)
    key = _run_key(inputs, options, read_options, vocab_dir)  # resolves inputs: a typo fails before output
    started = time.perf_counter()
    read_stats = ReadStats()
    documents = iter_documents(inputs, read_options, read_stats) if inputs else iter([])
    if options.from_vocab is not None:
        vocab_data, tokens = read_vocab_txt(options.from_vocab)
    sources = [*(inputs or []), *([options.from_vocab] if options.from_vocab else [])]
    # a rerun compares its files' sha256 (OUTPUT_KINDS["vocab"].checksums): a vocab edited in place is rebuilt
    with stage_run(vocab_dir, "vocab", key, inputs=sources, context=context, command="vocab",
                   part_of=part_of) as run, Reporter(context.progress, transient=True) as reporter:
        if run.complete is not None:
            return {**load_record(vocab_dir / "vocab_report.json", "vocab_report"), "reused": True}
        run.artifact.claim(FILES)
        progress = _phase_line(reporter)
        counts = {"characters": 0}
        sample = _Sample()
        batches = _batches(documents, read_stats, counts, sample, progress)
        train_seconds = None
        if options.from_vocab is None:
            alphabet = _alphabet_pass(inputs, read_options, options, progress)
            tokenizer = train_tokenizer(batches, options, alphabet)
            train_seconds = time.perf_counter() - started
            tokens = vocab_tokens(tokenizer)
            vocab_data = ("\n".join(tokens) + "\n").encode("utf-8")
        else:
            for _ in batches:  # only to draw the sample the coverage figures are measured on
                pass
            tokenizer = tokenizer_from_tokens(tokens, options.cased, options.strip_accents)
        if inputs and read_stats.documents == 0:  # a 5-token vocab is no result: say why nothing was used
            raise no_usable_documents(inputs, read_stats.to_dict())
        progress("measuring", read_stats.documents, read_stats.bytes)
        report = _report(key, tokens, read_stats, counts["characters"], train_seconds,
                         measure(tokenizer, sample.texts()) if sample.heap else None)
        _warn_unknown(report, vocab_dir)
        report["sha256"] = _write_files(vocab_dir, vocab_data, tokenizer, tokens, options)
        report["seconds"]["total"] = time.perf_counter() - started
        write_json(vocab_dir / "vocab_report.json", report)
        run.commit(files=FILES)  # last: marks the directory complete
    return {**report, "reused": False}


def _phase_line(reporter: Reporter) -> Progress:
    """A vocab run's progress: one line (documents, MB read), named by its phase."""
    tick = reporter.stream("reading")
    return lambda phase, documents, nbytes: tick(documents, nbytes, phase=phase)


def _report(key: dict, tokens: list[str], read_stats: ReadStats, characters: int, train_seconds: float | None,
            sample: dict | None) -> dict[str, Any]:
    """vocab_report.json (but its sha256 and total time): what was read, the tokens, the sample's figures."""
    return {
        **key,
        "vocab_size": len(tokens),
        "reserved": sum(map(is_reserved, tokens)),
        "special_ids": {t: tokens.index(t) for t in SPECIAL_TOKENS},
        "documents": {
            "read": read_stats.documents_seen,
            "used": read_stats.documents,
            "skipped": dict(sorted(read_stats.skipped.items())),
        },
        "characters": characters,
        "bytes_read": read_stats.bytes,
        "read_stats": read_stats.to_dict(),
        "seconds": {"train": train_seconds},
        "sample": sample,
    }


def _warn_unknown(report: dict, vocab_dir: Path) -> None:
    """A warning when the sample has many [UNK] tokens (the vocab misses much of the text)."""
    sample = report["sample"] or {"unk_tokens": 0, "tokens": 0}
    if warning := unk_warning(sample["unk_tokens"], sample["tokens"], f"{vocab_dir}: sample"):
        log.warning(warning)


def _write_files(vocab_dir: Path, vocab_data: bytes, tokenizer: Tokenizer, tokens: list[str],
                 options: VocabOptions) -> str:
    """vocab.txt, tokenizer.json and transformers' two files, each atomically; the vocab's sha256."""
    storage.write_bytes(vocab_dir / "vocab.txt", vocab_data)
    with atomic_path(vocab_dir / "tokenizer.json") as tmp:
        tokenizer.save(str(tmp))
    for name, text in hf_tokenizer_files(options.cased, strip_accents=options.strip_accents).items():
        storage.write_text(vocab_dir / name, text, encoding="utf-8")
    info = VocabInfo.load(vocab_dir)
    assert info.tokens == tuple(tokens), "vocab.txt must read back as written"
    return info.sha256


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
    strip_accents: bool | None = None,
    read_options: ReadOptions | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """A vocab directory from an existing vocab.txt (copied byte for byte); coverage measured on `inputs`."""
    source = storage.url(vocab_txt) if storage.scheme_of(vocab_txt) else str(Path(vocab_txt).absolute())
    options = VocabOptions(cased=cased, strip_accents=strip_accents, from_vocab=source)
    return build_vocab(inputs, vocab_dir, options, read_options, **kwargs)
