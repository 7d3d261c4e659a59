"""Chinese whole-word masking: a segmenter groups the characters BERT tokenizes one by one."""

from __future__ import annotations

import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusprep.engine.artifact import Artifact
from corpusprep.engine.outputs import OUTPUT_KINDS
from corpusprep.engine.rng import rng_for
from corpusprep.errors import UsageError
from corpusprep.mask import Masking, MaskVocab, examples_from_pairs, mask_examples
from corpusprep.mask import words as words_module
from corpusprep.mask.examples import row_mask
from corpusprep.pair.schema import pairs_schema
from corpusprep.shard.build import build_shards
from corpusprep.shard.options import ShardOptions
from corpusprep.tokenize import VocabInfo
from corpusprep.tokenize.vocab import leading_tokens, tokenizer_from_tokens
from tests.contexts import quiet
from tests.pair.helpers import seal_vocab

SENTENCES = [
    "我们在北京大学学习人工智能。",
    "今天的天气非常好，我们一起去公园散步吧！",
    "中华人民共和国成立于一九四九年。",
]


@pytest.fixture(scope="module")
def zh_vocab(tmp_path_factory) -> VocabInfo:
    chars = sorted({c for s in SENTENCES for c in s})
    tokens = leading_tokens(0) + chars + ["##a"]
    directory = tmp_path_factory.mktemp("zh_vocab")
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    tokenizer_from_tokens(tokens).save(str(directory / "tokenizer.json"))
    return VocabInfo.load(seal_vocab(directory))


def examples_of(vocab: VocabInfo, mask_vocab: MaskVocab, copies: int):
    tokenizer = vocab.tokenizer()
    a, b = (tokenizer.encode(s, add_special_tokens=False).ids for s in SENTENCES[:2])
    n = copies
    table = pa.table(
        [
            pa.array([a] * n, pa.list_(pa.uint16())), pa.array([b] * n, pa.list_(pa.uint16())),
            pa.array([False] * n), pa.array(["d"] * n), pa.array([0] * n, pa.uint32()), pa.array(["d"] * n),
            pa.array([1] * n, pa.uint32()),
        ],
        schema=pairs_schema(),
    )
    return examples_from_pairs(
        table, vocab=mask_vocab, max_seq_length=64, source="t",
    )


def word_ids(examples, vocab: VocabInfo) -> np.ndarray:
    """Word number of each cell of the first row, from jieba itself: [CLS] A [SEP] B [SEP]."""
    import jieba

    words = [w for s in SENTENCES[:2] for w in [*jieba.lcut(s), None]]  # None: the [SEP] after a segment
    ids = [-1]
    for k, word in enumerate(words):
        ids += [k] * (1 if word is None else len(word))
    return np.array(ids + [-1] * (examples.ids.shape[1] - len(ids)))


def test_characters_of_a_word_are_masked_together(zh_vocab):
    pytest.importorskip("jieba")
    mask_vocab = MaskVocab.from_vocab(zh_vocab, "jieba")
    examples = examples_of(zh_vocab, mask_vocab, 3000)
    continuation = words_module.chinese_continuations(
        examples.ids, mask_vocab.cjk_chars, words_module.load_segmenter("jieba")
    )
    word = word_ids(examples, zh_vocab)
    first = np.r_[True, word[1:] != word[:-1]]
    cjk = mask_vocab.cjk_chars[examples.ids[0]] != ""
    assert np.array_equal(continuation[0], ~first & (word >= 0) & cjk)
    masked = mask_examples(examples, mask_vocab, rng_for(3, "zh"), masking=Masking(strategy="whole-word"))
    valid = row_mask(masked.predicted, masked.positions.shape[1])
    rows = np.repeat(np.arange(len(examples)), masked.predicted)
    chosen = np.zeros(examples.ids.shape, bool)
    chosen[rows, masked.positions[valid].astype(np.int64)] = True
    sizes = np.bincount(word[word >= 0])
    long_words = np.flatnonzero(sizes > 1)
    assert len(long_words) >= 5  # 北京大学, 人工智能, 我们, ...
    for w in long_words:
        taken = chosen[:, word == w]
        assert (taken.all(axis=1) | ~taken.any(axis=1)).all(), w  # all of the word's characters or none
        assert taken.any()
    actions = np.full(examples.ids.shape, -1)
    actions[rows, masked.positions[valid].astype(np.int64)] = masked.actions[valid]
    for w in long_words:  # one 80/10/10 decision per word
        decided = actions[:, word == w]
        assert (decided == decided[:, :1]).all()


def test_without_a_segmenter_characters_are_separate_words(zh_vocab):
    mask_vocab = MaskVocab.from_vocab(zh_vocab)
    examples = examples_of(zh_vocab, mask_vocab, 2000)
    masked = mask_examples(examples, mask_vocab, rng_for(3, "zh"), masking=Masking(strategy="whole-word"))
    valid = row_mask(masked.predicted, masked.positions.shape[1])
    rows = np.repeat(np.arange(len(examples)), masked.predicted)
    chosen = np.zeros(examples.ids.shape, bool)
    chosen[rows, masked.positions[valid].astype(np.int64)] = True
    pair = chosen[:, 4:8]  # 北京大学: chosen character by character, so often only in part
    assert (pair.any(axis=1) & ~pair.all(axis=1)).any()


def test_missing_jieba_is_a_one_line_usage_error(zh_vocab, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "jieba", None)  # `import jieba` now raises ImportError
    words_module.load_segmenter.cache_clear()
    with pytest.raises(UsageError) as error:
        MaskVocab.from_vocab(zh_vocab, "jieba")
    message = str(error.value)
    assert "\n" not in message and "pip install jieba" in message
    # build_shards asks for it on pairs built with --language zh, before writing anything.
    pairs = tmp_path / "pairs"
    (pairs / "train").mkdir(parents=True)
    ids = zh_vocab.tokenizer().encode(SENTENCES[0], add_special_tokens=False).ids
    table = pa.table(
        [pa.array([ids], pa.list_(pa.uint16())), pa.array([ids], pa.list_(pa.uint16())), pa.array([False]),
         pa.array(["d"]), pa.array([0], pa.uint32()), pa.array(["e"]), pa.array([0], pa.uint32())],
        schema=pairs_schema(),
    )
    pq.write_table(table, pairs / "train" / "part-00000-d0.parquet")
    stats = {"options": {"language": "zh", "max_seq_length": 64}, "vocab": {"sha256": zh_vocab.sha256}}
    (pairs / "stats.json").write_text(json.dumps(stats))
    # as build-pairs
    with Artifact(pairs, OUTPUT_KINDS["pairs"].adopting(), {"test": "zh"}, quiet=True) as made:
        made.commit(files=["stats.json", "train/part-00000-d0.parquet"])
    out = tmp_path / "shards"
    with pytest.raises(UsageError, match="pip install jieba"):
        build_shards(pairs, zh_vocab.directory, out, ShardOptions(whole_word_mask=True), context=quiet())
    assert not out.exists()
    words_module.load_segmenter.cache_clear()
