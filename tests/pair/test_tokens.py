"""Token cache: one encoding per document cut at [SEP] equals encoding each sentence on its own."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

from corpusprep.errors import DataError
from corpusprep.pair import tokens
from corpusprep.pair.tokens import (
    concat_partitions,
    encode_documents,
    read_token_batch,
    select_documents,
    token_chunk_writer,
)
from tests.pair.helpers import SPECIALS, make_vocab, synthetic_documents


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return Tokenizer.from_file(str(make_vocab(tmp_path_factory.mktemp("vocab")) / "tokenizer.json"))


def test_document_encoding_cut_at_sep_equals_sentence_encoding(tokenizer):
    docs = synthetic_documents(40, seed=0)
    docs[3] = ["w1 [SEP] w2", "w3 w4"]  # the separator inside the text: encoded sentence by sentence
    docs[5] = ["w1 w2", "\x00", "w3"]  # a sentence with no tokens: dropped, its index kept
    docs[7] = []  # no sentence at all
    docs[9] = [" ".join(["w7"] * 200), "w8"]  # longer than max_tokens: truncated and counted
    part, stats = encode_documents(
        tokenizer,
        docs,
        [f"d{i}" for i in range(len(docs))],
        sep_id=3,
        max_tokens=125,
        dtype=np.dtype(np.uint16),
    )
    assert part.tokens.dtype == np.uint16
    assert stats["sentences_truncated"] == 1 and stats["sentence_tokens_truncated"] == 75
    assert stats["empty_sentences"] == 1
    assert np.diff(part.doc_offsets)[7] == 0
    for d, sentences in enumerate(docs):
        expected = [
            (i, tokenizer.encode(s, add_special_tokens=False).ids[:125]) for i, s in enumerate(sentences)
        ]
        expected = [(i, ids) for i, ids in expected if ids]
        got = [
            (int(part.sent_index[s]), part.tokens[part.sent_offsets[s] : part.sent_offsets[s + 1]].tolist())
            for s in range(part.doc_offsets[d], part.doc_offsets[d + 1])
        ]
        assert got == expected, d
    assert stats["tokens"] == len(part.tokens)


def test_long_documents_are_encoded_in_pieces_with_the_same_result(tokenizer, monkeypatch):
    docs = synthetic_documents(12, seed=2)
    docs[4] = docs[4] * 40  # a long document: many pieces once PIECE_CHARS is small
    docs[6] = ["w1 [SEP] w2", *docs[6]]  # the fallback, inside one piece of a split document
    args = dict(sep_id=3, max_tokens=8, dtype=np.dtype(np.uint16))
    whole, whole_stats = encode_documents(tokenizer, docs, [f"d{i}" for i in range(12)], **args)
    monkeypatch.setattr(tokens, "PIECE_CHARS", 50)
    monkeypatch.setattr(tokens, "BATCH_CHARS", 200)
    assert len(list(tokens._pieces(docs, 7))) > 3 * len(docs)
    pieces, pieces_stats = encode_documents(tokenizer, docs, [f"d{i}" for i in range(12)], **args)
    assert pieces_stats == whole_stats and whole_stats["sentences_truncated"] > 0
    for field in ("tokens", "sent_offsets", "sent_index", "doc_offsets"):
        assert np.array_equal(getattr(pieces, field), getattr(whole, field)), field


def test_select_concat_and_token_chunk_round_trip(tokenizer, tmp_path):
    docs = synthetic_documents(30, seed=1)
    dtype = np.dtype(np.uint16)
    part, _ = encode_documents(tokenizer, docs, [f"d{i}" for i in range(30)], sep_id=3, max_tokens=125,
                               dtype=dtype)
    odd, even = select_documents(part, np.arange(1, 30, 2)), select_documents(part, np.arange(0, 30, 2))
    path = tmp_path / "c000000.arrow"
    with token_chunk_writer(path, dtype) as write:
        assert write("train/00000", even) == 0 and write("train/00003", odd) == 1
    back = read_token_batch(path, 1, "train/00003", 15, dtype)  # only its own batch
    for field in ("tokens", "sent_offsets", "sent_index", "doc_offsets", "doc_ids"):
        assert np.array_equal(getattr(back, field), getattr(odd, field)), field
    for index, name, documents in ((0, "train/00003", 15), (1, "train/00003", 14), (2, "train/00003", 15)):
        with pytest.raises(DataError, match="not the"):  # another batch, count or one beyond: never used
            read_token_batch(path, index, name, documents, dtype)
    path.write_bytes(path.read_bytes()[:-100])  # cut short
    with pytest.raises(DataError, match="not the"):
        read_token_batch(path, 1, "train/00003", 15, dtype)
    both = concat_partitions([even, back], np.dtype(np.uint16))
    order = list(range(0, 30, 2)) + list(range(1, 30, 2))
    assert both.doc_ids == [f"d{i}" for i in order]
    for new, old in enumerate(order):
        s0, s1 = both.doc_offsets[new], both.doc_offsets[new + 1]
        t0, t1 = part.doc_offsets[old], part.doc_offsets[old + 1]
        assert np.array_equal(
            both.tokens[both.sent_offsets[s0] : both.sent_offsets[s1]],
            part.tokens[part.sent_offsets[t0] : part.sent_offsets[t1]],
        )
        assert np.array_equal(both.sent_index[s0:s1], part.sent_index[t0:t1])


@pytest.fixture(scope="module")
def marked_tokenizer(tokenizer):
    """The same tokenizer with the punctuation marks the cache joins words with in its vocab."""
    from tokenizers import normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    vocab = tokenizer.get_vocab()
    for mark in "|~^§¶":
        vocab[mark] = len(vocab)
    marked = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    marked.normalizer = normalizers.BertNormalizer(lowercase=True)
    marked.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    marked.add_special_tokens(SPECIALS)
    return marked


@pytest.mark.parametrize(("marks", "cased"), [(0, False), (5, False), (5, True)])
def test_word_cache_gives_the_tokenizers_own_ids(tokenizer, marked_tokenizer, marks, cased, monkeypatch):
    from tokenizers import normalizers

    tokenizer = Tokenizer.from_str((marked_tokenizer if marks else tokenizer).to_str())
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=not cased)
    assert tokens.splits_on_spaces(tokenizer)
    assert tokens._plain_word_tokenizer(tokenizer)[1] is not cased  # printable ASCII skips the normalizer
    monkeypatch.setattr(tokens, "WORDS_PER_CALL", 3)  # many groups, so each fallback is reached
    sentences = [
        "w1 w2  w3 ",  # double and trailing spaces: empty words
        " Café naïve ÉCOLE",  # lowercasing and accents, done by the normalizer
        "漢字w1 w2",  # CJK characters are split off by the normalizer
        "a|b~c^d§e¶f | w1",  # every mark inside a word: that group is joined by [SEP]
        "x[SEP]y|~^§¶ w1 [SEP]",  # the marks and [SEP] inside a word: word by word
        "tab\tw1\nw2\x00w3",  # whitespace other than " " and a control character, inside one word
        "w1" * 80,  # longer than the WordPiece word limit: [UNK]
        "W1 w2, (W3) it's ~W1~ W2!",  # printable ASCII, cased and punctuated: the path without the normalizer
        "W1\x7fw2 w1\u00a0W2",  # DEL and a no-break space: not printable ASCII, so the normalizer's path
        "",
    ]
    cache = tokens.WordCache(tokenizer, sep_id=3)
    assert len(cache.marks) == marks + 1  # the marks found in the vocab, then [SEP]
    for batch in (sentences, sentences[::-1], sentences[:-2]):  # second and third: served from the cache
        ids, counts = cache.encode(batch)
        expected = [tokenizer.encode(s, add_special_tokens=False).ids for s in batch]
        assert counts.tolist() == [len(e) for e in expected]
        assert ids.tolist() == [t for e in expected for t in e]
    monkeypatch.setattr(tokens, "MAX_CACHED_WORDS", 4)  # past the bound the cache starts again
    ids, counts = cache.encode(sentences[:3])
    assert ids.tolist() == [
        t for s in sentences[:3] for t in tokenizer.encode(s, add_special_tokens=False).ids
    ]
    assert len(cache.index) <= 12


def test_other_pipelines_skip_the_word_cache(tokenizer):
    from tokenizers import pre_tokenizers

    other = Tokenizer.from_str(tokenizer.to_str())
    other.pre_tokenizer = pre_tokenizers.Metaspace()  # keeps the space in its tokens: words interact
    assert not tokens.splits_on_spaces(other)
    truncating = Tokenizer.from_str(tokenizer.to_str())
    truncating.enable_truncation(8)  # would cut the joined words, not each text
    assert not tokens.splits_on_spaces(truncating)
