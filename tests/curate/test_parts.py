"""curate's parts on their own: the evaluation readers, the n-gram match, MinHash's estimate, the filters'
registry and rules."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from corpusprep.curate import filters
from corpusprep.curate import text as txt
from corpusprep.curate.contamination import EvalIndex
from corpusprep.curate.evalsets import EvalExample, read_examples
from corpusprep.curate.filters.base import Doc
from corpusprep.curate.minhash import MinHasher, similarity
from corpusprep.curate.options import CurateOptions
from corpusprep.errors import DataError, InputError, UsageError
from tests.curate.planted import document

CONLLU = """# sent_id = 1
# text = I don't know where the cat went.
1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tI\tI\tPRON\t_\t_\t0\troot\t_\t_
2\tdo\tdo\tAUX\t_\t_\t0\troot\t_\t_

1\tNo\tno\tINTJ\t_\t_\t0\troot\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\t_\t_\t0\troot\t_\t_
3\tn't\tnot\tPART\t_\t_\t0\troot\t_\t_
"""


def test_every_evaluation_format_gives_its_texts(tmp_path):
    (tmp_path / "a.conllu").write_text(CONLLU)
    assert [e.text for e in read_examples(str(tmp_path / "a.conllu"))] == [
        "I don't know where the cat went.", "No don't"]  # `# text`, else the surface tokens
    ner = "-DOCSTART- -X- O O\n\nEU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n"
    (tmp_path / "ner.txt").write_text(ner)
    assert [e.text for e in read_examples(str(tmp_path / "ner.txt"))] == ["EU rejects", "Peter"]
    answer = [{"text": "context", "answer_start": 2}]
    squad = {"data": [{"paragraphs": [{"context": "A context.", "qas": [{"question": "Why?", "id": "1",
                                                                         "answers": answer}]}]}]}
    (tmp_path / "dev.json").write_text(json.dumps(squad, indent=1))
    assert [(e.position, e.text) for e in read_examples(str(tmp_path / "dev.json"))] == [
        ("context of question '1'", "A context."), ("question '1'", "Why?")]
    (tmp_path / "pairs.tsv").write_text("premise\thypothesis\tlabel\nA cat.\tA dog.\t0\n")
    assert [e.text for e in read_examples(str(tmp_path / "pairs.tsv"))] == ["A cat.", "A dog."]
    (tmp_path / "test.tsv").write_text("index\tsentence\n0\tNo label here.\n")  # a GLUE test file
    assert [e.text for e in read_examples(str(tmp_path / "test.tsv"))] == ["No label here."]
    (tmp_path / "rows.jsonl").write_text('{"text": "One.", "label": 1}\n')
    assert [e.text for e in read_examples(str(tmp_path / "rows.jsonl"))] == ["One."]


def test_bad_evaluation_files_are_one_line(tmp_path):
    (tmp_path / "bad.conllu").write_text("1\tonly three\tfields\n")
    with pytest.raises(DataError, match=r"bad.conllu:1: 3 tab-separated fields"):
        read_examples(str(tmp_path / "bad.conllu"))
    (tmp_path / "bad.json").write_text('{"data": 3,\n"x": 1}')
    with pytest.raises(DataError, match=r"bad.json:1: not JSON"):  # no SQuAD shape: JSON lines
        read_examples(str(tmp_path / "bad.json"))
    with pytest.raises(InputError, match="no such file"):
        read_examples(str(tmp_path / "missing.tsv"))


def test_thirteen_grams_match_fragments_do_not_and_short_examples_match_whole():
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(500)]
    long = " ".join(rng.choice(vocab) for _ in range(20))
    short = " ".join(rng.choice(vocab) for _ in range(9))
    tiny = "yes it is"
    index = EvalIndex.build([EvalExample("f", "1", long), EvalExample("f", "2", short),
                             EvalExample("f", "3", tiny)], 13, 8)
    assert index.too_short == 1
    filler = [rng.choice(vocab) for _ in range(40)]
    words = long.split()
    for start in range(0, 8):  # every 13-word window of the 20-word example is found, punctuated or not
        window = " ".join(words[start: start + 13]).upper() + "!"
        assert index.matches(txt.words(" ".join(filler) + " " + window)) == {0}
    assert index.matches(txt.words(" ".join(filler + words[3:15]))) == set()  # 12 words: no 13-gram
    assert index.matches(txt.words(" ".join(filler + words[3:11]))) == set()  # an 8-word fragment
    assert index.matches(txt.words(" ".join(filler) + ", " + short + ".")) == {1}
    assert index.matches(txt.words(" ".join(filler + short.split()[:8]))) == set()
    assert index.matches(txt.words("well yes it is")) == set()


def test_minhash_estimates_jaccard():
    rng = np.random.default_rng(0)
    hasher = MinHasher(112, 14, 7)
    errors = []
    for share in (0.2, 0.5, 0.8, 0.9):
        common = rng.integers(0, 2**63, 1000, dtype=np.uint64)
        extra = int(1000 * (1 - share) / (2 * share))  # |A & B| / |A | B| = share
        a = np.concatenate([common, rng.integers(0, 2**63, extra, dtype=np.uint64)])
        b = np.concatenate([common, rng.integers(0, 2**63, extra, dtype=np.uint64)])
        errors.append(float(similarity(hasher.signature(a), hasher.signature(b))) - share)
    assert max(map(abs, errors)) < 4 * (0.25 / 112) ** 0.5  # four standard errors of 112 values at worst
    sig = hasher.signature(rng.integers(0, 2**63, 50, dtype=np.uint64))
    keys = hasher.band_keys(np.stack([sig, sig]))
    assert keys.shape == (2, 14) and (keys[0] == keys[1]).all() and len(set(keys[0].tolist())) == 14


def test_normalisation_is_nfc_case_and_whitespace():
    assert txt.exact_key("Caf\u00e9  au\nlait ") == txt.exact_key("CAFE\u0301 au lait")
    assert txt.exact_key("a b") != txt.exact_key("ab")
    assert txt.words("Don't STOP—now!") == ["don", "t", "stop", "now"]


def test_filters_are_registered_and_each_removes_what_its_rule_says():
    assert filters.check_names(["gopher", "boilerplate-lines"]) == (*filters.GOPHER, "boilerplate-lines")
    with pytest.raises(UsageError, match="unknown filter"):
        CurateOptions(filters=("nope",))
    good = document(random.Random(0))
    for name in filters.REGISTRY:
        assert filters.get(name).apply(Doc(good)).remove is None, name
    cases = {
        "word-count": "too few words here",
        "word-length": " ".join(["a"] * 60),
        "symbol-ratio": " ".join(["#tag word"] * 40),
        "ellipsis-lines": "\n".join(["and then it went on..."] * 30),
        "repeated-lines": "\n".join(["the same line again and again"] * 10 + ["one other"]),
        "repeated-ngrams": " ".join(["alpha beta gamma delta"] * 30),
        "boilerplate-lines": "Lorem ipsum dolor sit amet.",
    }
    for name, text in cases.items():
        assert filters.get(name).apply(Doc(text)).remove, name
    kept = filters.get("boilerplate-lines").apply(Doc("Real text here.\nThis site uses cookies.\nMore text."))
    assert kept.remove is None and kept.text == "Real text here.\nMore text."


def test_options_are_checked():
    with pytest.raises(UsageError, match="not a multiple of --bands"):
        CurateOptions(permutations=100, bands=14)
    with pytest.raises(UsageError, match="--threshold"):
        CurateOptions(threshold=0)
    assert CurateOptions(languages=("EN", " fr")).languages == ("en", "fr")


def tuple_counted_ngram_verdict(words: list[str]) -> str | None:
    """Gopher's n-gram repetition rules counted over tuples of words, the plain reading of the rules: the
    reference the hashed filter must agree with."""
    from collections import Counter

    from corpusprep.curate.filters.repeated_ngrams import DUPLICATED, TOP

    total = sum(map(len, words))
    if not total:
        return None
    for n, limit in TOP.items():
        grams = Counter(tuple(words[i: i + n]) for i in range(len(words) - n + 1))
        if grams:
            gram, count = max(grams.items(), key=lambda item: (item[1], item[0]))
            share = count * sum(map(len, gram)) / total
            if count > 1 and share > limit:
                return f"top {n}-gram {' '.join(gram)!r} covers {share:.0%}; at most {limit:.0%}"
    for n, limit in DUPLICATED.items():
        grams = Counter(tuple(words[i: i + n]) for i in range(len(words) - n + 1))
        covered = [False] * len(words)
        for i in range(len(words) - n + 1):
            if grams[tuple(words[i: i + n])] > 1:
                covered[i: i + n] = [True] * n
        share = sum(len(w) for w, c in zip(words, covered, strict=True) if c) / total
        if share > limit:
            return f"repeated {n}-grams cover {share:.0%}; at most {limit:.0%}"
    return None


def test_the_hashed_ngram_filter_gives_the_verdicts_of_counting_word_tuples():
    """2,000 random documents, from no repetition to nearly all (a few words, repeated spans, ties between
    equally frequent n-grams of different lengths): the same verdict, message included."""
    rng = random.Random(11)
    rule = filters.get("repeated-ngrams")
    removed = 0
    for _ in range(2000):
        vocabulary = [("w" * rng.randint(1, 9)) + str(i) for i in range(rng.choice([2, 5, 30, 1000]))]
        words = rng.choices(vocabulary, k=rng.randint(0, 300))
        for _ in range(rng.randint(0, 3)):  # paste a repeated span
            span = words[rng.randrange(max(1, len(words))):][: rng.randint(1, 12)]
            at = rng.randint(0, len(words))
            words[at:at] = span * rng.randint(1, 4)
        doc = Doc(" ".join(words))
        expected = tuple_counted_ngram_verdict(doc.plain_words)
        assert rule.apply(doc).remove == expected, words
        removed += expected is not None
    assert 300 < removed < 1700  # both verdicts well represented
