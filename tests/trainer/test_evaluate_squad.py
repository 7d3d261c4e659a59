"""trainer.evaluate's extractive question answering data: SQuAD v1.1/v2.0 JSON read and checked (bad input as
one line naming the file and the question id, or a counted skip; never a traceback), windows and labels
that map back to the context's characters, the exact best span over windows, predictions in SQuAD's own
format and the cheap baselines. Also the small SQuAD-like files and the tiny model the other QA tests use."""

from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from corpusprep.errors import DataError, InputError, UsageError, guarded
from tests.interop.helpers import SPECIALS
from trainer.evaluate import squad
from trainer.evaluate.squad import baseline, first_words, read_squad
from trainer.evaluate.squad_features import (
    Span,
    best_span,
    check_windows,
    decode,
    default_doc_stride,
    encode,
    question_pieces,
)
from trainer.evaluate.squad_metric import score

# ---------------------------------------------------------------- helpers (the other QA tests use them)

FILLER = ["river", "stone", "cloud", "tree", "bird", "house", "road", "light", "green", "small", "quiet",
          "old", "cold", "warm", "blue", "stream", "hill", "field", "wind", "rain", "snow", "lake", "moon",
          "star", "sun", "sand", "leaf", "rock", "door", "wall"]
QUESTION = "what is the key ?"


def write_squad(path: Path, data: list, version: str | None = "1.1") -> Path:
    document = {"data": data} | ({"version": version} if version is not None else {})
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def paragraph(context: str, *qas: dict) -> dict:
    return {"title": "t", "paragraphs": [{"context": context, "qas": list(qas)}]}


def qa(qid: str, question: str, *answers: tuple[str, int], impossible: bool | None = None) -> dict:
    out = {"id": qid, "question": question, "answers": [{"text": t, "answer_start": s} for t, s in answers]}
    return out | ({"is_impossible": impossible} if impossible is not None else {})


def synthetic(n: int, seed: int, impossible_share: float = 0.0) -> dict:
    """A SQuAD-like file whose answer is easy to find: the one or two words after "the key is" (and before
    " ."), somewhere in 15-40 filler words; with `impossible_share`, that share of contexts lacks the phrase
    and its question is unanswerable (v2.0)."""
    rng = np.random.default_rng(seed)
    data = []
    for i in range(n):
        words = [FILLER[j] for j in rng.integers(len(FILLER), size=rng.integers(15, 40))]
        entry = {"id": f"s{seed}-{i}", "question": QUESTION, "answers": []}
        if rng.random() >= impossible_share:
            answer = [FILLER[j] for j in rng.integers(len(FILLER), size=rng.integers(1, 3))]
            at = int(rng.integers(0, len(words)))
            start = len(" ".join(words[:at] + ["the", "key", "is"])) + 1
            words = words[:at] + ["the", "key", "is", *answer, "."] + words[at:]
            entry["answers"] = [{"text": " ".join(answer), "answer_start": start}]
        if impossible_share:
            entry["is_impossible"] = not entry["answers"]
        data.append({"title": str(i), "paragraphs": [{"context": " ".join(words), "qas": [entry]}]})
    return {"version": "v2.0" if impossible_share else "1.1", "data": data}


def tiny_tokenizer_dir(root: Path) -> Path:
    """A Hugging Face directory's tokenizer files for the synthetic files' words (and a few pieces, so
    words split), as trainer.export writes them."""
    from trainer.export import tokenizer_files

    vocab = root / "vocab"
    vocab.mkdir(parents=True)
    words = sorted(set(FILLER) | {"key", "is", "the", "what", "?", ".", ",", "cafe", "##s", "##ing", "run"})
    (vocab / "vocab.txt").write_text("\n".join(SPECIALS + words) + "\n")
    hf = root / "hf"
    hf.mkdir()
    for name, text in tokenizer_files(vocab, 64).items():
        (hf / name).write_text(text)
    return hf


def tiny_qa_model(root: Path, seed: int = 0, hidden: int = 64) -> Path:
    """A randomly initialised BertForQuestionAnswering (2 layers) saved with that tokenizer."""
    import torch
    import transformers

    hf = tiny_tokenizer_dir(root)
    config = transformers.BertConfig(vocab_size=len((hf / "vocab.txt").read_text().splitlines()),
                                     hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=2 * hidden, max_position_embeddings=64)
    torch.manual_seed(seed)
    transformers.BertForQuestionAnswering(config).save_pretrained(hf)
    return hf


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    pytest.importorskip("transformers")
    from trainer.evaluate.finetune import load_tokenizer

    return load_tokenizer(tiny_tokenizer_dir(tmp_path_factory.mktemp("qa")))


# ---------------------------------------------------------------- reading

CONTEXT = "The Normans were in Normandy. They gave their name to Normandy, a region in France."


def test_v1_and_v2_files_are_read_with_their_versions(tmp_path):
    one = read_squad(write_squad(tmp_path / "v1.json", [
        paragraph(CONTEXT, qa("a", "In what country?", ("France", 76), ("France", 76)),
                  qa("b", "Who?", ("The Normans", 0)))]))
    assert one.version == "1.1" and [q.id for q in one.examples] == ["a", "b"]
    first = one.examples[0]
    assert first.golds == ["France", "France"] and first.answers[0].end == 82
    assert first.context is one.examples[1].context  # a paragraph's questions share its context
    assert one.golds() == {"a": ["France", "France"], "b": ["The Normans"]}
    data = [paragraph(CONTEXT, qa("c", "Where?", ("Normandy", 20), impossible=False),
                      qa("d", "When?", impossible=True))]
    for version in ("v2.0", None):  # said, or told by is_impossible
        two = read_squad(write_squad(tmp_path / "v2.json", data, version))
        assert two.version == "2.0" and two.golds() == {"c": ["Normandy"], "d": []}
    packed = tmp_path / "v2.json.gz"  # compressed: by the magic bytes, whatever the name
    packed.write_bytes(gzip.compress((tmp_path / "v2.json").read_bytes()))
    assert read_squad(packed).golds() == two.golds()


GOOD = qa("ok", "Who?", ("The Normans", 0))
BAD = {  # case -> (data, reason counted under skip, what the line says)
    "answer text not at answer_start": ([paragraph(CONTEXT, GOOD, qa("q1", "x?", ("France", 70)))],
                                         "bad_answer", "question 'q1': answer 'France' does not match the "
                                         "context at answer_start 70 ('on in ')"),
    "span outside the context": ([paragraph(CONTEXT, GOOD, qa("q2", "x?", ("France.", 77)))], "bad_answer",
                                 "question 'q2': answer 'France.' at 77:84 lies outside its context"),
    "negative answer_start": ([paragraph(CONTEXT, GOOD, qa("q3", "x?", ("The", -1)))], "bad_answer",
                              "question 'q3': answer 'The' at -1:2 lies outside"),
    "answer_start a string": ([paragraph(CONTEXT, GOOD, {"id": "q4", "question": "x?", "answers": [
        {"text": "The", "answer_start": "0"}]})], "bad_answer", "question 'q4': answer 'The': \"answer_"),
    "no answers list": ([paragraph(CONTEXT, GOOD, {"id": "q5", "question": "x?"})], "bad_answer",
                        "question 'q5': no \"answers\" list"),
    "v1.1 without an answer": ([paragraph(CONTEXT, GOOD, qa("q6", "x?"))], "bad_answer",
                               "question 'q6': no answer"),
    "is_impossible with answers": ([paragraph(CONTEXT, GOOD, qa("q7", "x?", ("The", 0), impossible=True))],
                                   "bad_answer", "question 'q7': \"is_impossible\" with 1 answers"),
    "no question text": ([paragraph(CONTEXT, GOOD, qa("q8", "  ", ("The", 0)))], "malformed_question",
                         "question 'q8': no \"question\" text"),
    "no id": ([paragraph(CONTEXT, GOOD, {"question": "x?", "answers": []})], "malformed_question",
              "data[0].paragraphs[0].qas[1]: no \"id\" text"),
    "a numeric id": ([paragraph(CONTEXT, GOOD, qa(7, "x?", ("The", 0)))], "malformed_question",
                     "data[0].paragraphs[0].qas[1]: no \"id\" text"),
    "a duplicate id": ([paragraph(CONTEXT, GOOD, qa("ok", "Again?", ("The", 0)))], "duplicate_id",
                       "question 'ok': a second question with this id"),
    "no context": ([paragraph(CONTEXT, GOOD), {"paragraphs": [{"qas": []}]}], "malformed_paragraph",
                   "data[1].paragraphs[0]: no \"context\" text"),
    "an article that is a list": ([paragraph(CONTEXT, GOOD), []], "malformed_article",
                                  "data[1]: an article is an object"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_line_naming_the_file_and_question_or_a_counted_skip(case, tmp_path, capsys):
    data, reason, said = BAD[case]
    path = write_squad(tmp_path / "bad.json", data)
    assert guarded(lambda: read_squad(path)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: {said}") and err.count("\n") == 1, err
    kept = read_squad(path, on_error="skip")
    assert [q.id for q in kept.examples] == ["ok"]  # the good question stays
    assert kept.skips.counts == {reason: 1} and kept.skips.examples[0].startswith(f"{path}: {said}")


@pytest.mark.parametrize("limit, said", [
    ({"MAX_CONTEXT_CHARS": 50}, "data[0].paragraphs[0]: a context of 83 characters, more than the 50"),
    ({"MAX_QUESTION_CHARS": 3}, "question 'ok': a question of 4 characters (at most 3)"),
    ({"MAX_ID_CHARS": 1}, "data[0].paragraphs[0].qas[0]: an id of 2 characters (at most 1)"),
])
def test_an_oversized_context_question_or_id_is_a_fault(limit, said, tmp_path, monkeypatch):
    for name, value in limit.items():
        monkeypatch.setattr(squad, name, value)
    path = write_squad(tmp_path / "big.json", [paragraph(CONTEXT, GOOD)])
    with pytest.raises(DataError) as error:
        read_squad(path)
    assert str(error.value).startswith(f"{path}: {said}")
    assert read_squad(path, on_error="skip").examples == []


@pytest.mark.parametrize("content, said", [
    (b'{"data": [', "not valid JSON (Expecting value: line 1 column 11)"),
    (b"[1, 2]", 'not a SQuAD file (no "data" list'),
    (b'{"data": {}}', 'not a SQuAD file (no "data" list'),
    (b"\xff\xfe{}", "not valid JSON"),
    (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
])
def test_a_file_that_is_no_squad_json_is_one_line_even_under_skip(content, said, tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    for on_error in ("fail", "skip"):
        with pytest.raises(DataError) as error:
            read_squad(path, on_error)
        assert str(error.value).startswith(f"{path}: {said}")


def test_too_many_questions_or_bytes_and_a_missing_file(tmp_path, monkeypatch):
    path = write_squad(tmp_path / "x.json", [paragraph(CONTEXT, GOOD, qa("b", "x?", ("The", 0)))])
    monkeypatch.setattr(squad, "MAX_QUESTIONS", 1)
    with pytest.raises(DataError, match="2 questions, more than the 1 this reader takes"):
        read_squad(path)
    with pytest.raises(DataError, match="more than 0 MiB"):
        squad.read_bounded(path, limit=100)
    with pytest.raises(InputError, match="no such file"):
        read_squad(tmp_path / "missing.json")


def test_no_mutation_of_a_good_file_gets_past_the_reader_as_anything_but_one_line(tmp_path):
    """Fuzz: keys dropped, values replaced by other JSON types, offsets moved, lists emptied. Every outcome
    is a reading (each question it keeps checked: its answers are the context's text) or a DataError."""
    base = synthetic(6, 0, impossible_share=0.3)
    rng = np.random.default_rng(7)
    junk = [None, 3, -1, 2.5, True, "", "x", [], {}, [1], {"a": 1}, 10**6]
    outcomes = set()
    for _ in range(200):
        doc = copy.deepcopy(base)
        for _ in range(int(rng.integers(1, 4))):
            node, key = _random_slot(doc, rng)
            action, value = rng.integers(3), node.get(key) if isinstance(node, dict) else node[key]
            if action == 0 and isinstance(node, dict):
                node.pop(key, None)
            elif action == 1 and type(value) is int:  # an offset moved
                node[key] = value + int(rng.integers(-3, 4))
            else:
                node[key] = copy.deepcopy(junk[rng.integers(len(junk))])
        path = tmp_path / "fuzz.json"
        path.write_text(json.dumps(doc))
        for on_error in ("fail", "skip"):
            try:
                split = read_squad(path, on_error)
            except DataError as error:
                assert str(error).startswith(f"{path}: ") and "\n" not in str(error)
                outcomes.add("error")
                continue
            outcomes.add("read")
            for q in split.examples:
                assert all(q.context[a.start : a.end] == a.text for a in q.answers)
    assert outcomes == {"error", "read"}


def _random_slot(doc, rng):
    """A random (container, key) in the document."""
    node, key = doc, "data"
    while key in node if isinstance(node, dict) else True:
        value = node[key]
        children = list(value) if isinstance(value, dict) else list(range(len(value))) \
            if isinstance(value, list) else []
        if not children or rng.random() < 0.3:
            break
        node, key = value, children[rng.integers(len(children))]
    return node, key


# ---------------------------------------------------------------- windows and labels


def _question_at(tmp_path, context: str, answer: str, at: int, question: str = QUESTION):
    path = write_squad(tmp_path / "one.json", [paragraph(context, qa("q", question, (answer, at)))])
    return read_squad(path).examples


def test_a_long_context_is_read_in_overlapping_windows_whose_labels_cut_out_the_answer(tokenizer, tmp_path):
    words = [FILLER[i % len(FILLER)] for i in range(60)]
    context = " ".join(words[:40] + ["cafes", "runs"] + words[40:])  # pieces: cafe ##s run ##s
    at = context.index("cafes")
    questions = _question_at(tmp_path, context, "cafes runs", at)
    max_length, stride = 24, 4
    features = encode(tokenizer, questions, max_length, stride, labels=True)
    assert len(features.features) > 3 and set(features.example) == {0}
    holding = 0
    covered: set[tuple[int, int]] = set()
    for f, feature in enumerate(features.features):
        assert len(feature["input_ids"]) <= max_length
        offsets, start = features.offsets[f], features.context_start[f]
        covered |= set(map(tuple, offsets.tolist()))
        if f:  # consecutive windows share `stride` pieces
            assert features.offsets[f - 1][-stride:].tolist() == offsets[:stride].tolist()
        s, e = feature["start_positions"], feature["end_positions"]
        if (s, e) != (0, 0):
            holding += 1
            assert context[offsets[s - start, 0] : offsets[e - start, 1]] == "cafes runs"
            assert e - s == 3  # four pieces
        else:
            assert not (offsets[0, 0] <= at and offsets[-1, 1] >= at + len("cafes runs"))
    assert holding >= 1 and features.unreachable == 0
    assert len(covered) == len(tokenizer(context, add_special_tokens=False)["input_ids"])  # every piece read


def test_an_unanswerable_question_or_an_answer_no_window_holds_is_labelled_cls(tokenizer, tmp_path):
    context = " ".join(FILLER)
    long = (" ".join(FILLER[2:20]), len(" ".join(FILLER[:2])) + 1)
    path = write_squad(tmp_path / "v2.json", [paragraph(context, qa("n", QUESTION, impossible=True),
                                                        qa("long", QUESTION, long))], "v2.0")
    features = encode(tokenizer, read_squad(path).examples, 16, 2, labels=True)
    assert {(f["start_positions"], f["end_positions"]) for f in features.features} == {(0, 0)}
    assert features.unreachable == 1  # the 18-word answer: longer than any window


def test_a_long_question_keeps_its_first_pieces_counted(tokenizer, tmp_path):
    long = " ".join(["what"] * 40) + " ?"
    questions = _question_at(tmp_path, "the key is stone .", "stone", 11, question=long)
    features = encode(tokenizer, questions, 32, 2, labels=True)
    assert features.truncated == 1
    ids = features.features[0]["input_ids"]
    assert ids.index(tokenizer.sep_token_id) == 1 + question_pieces(32)  # [CLS] + 16 question pieces
    assert features.features[0]["start_positions"] > 0  # the answer is still found


def test_window_settings_are_checked_with_one_line():
    assert check_windows(384, None, 30) == 128  # run_qa's default at its length
    assert default_doc_stride(128) == 30 and question_pieces(128) == 64 and question_pieces(32) == 16
    for args, said in (((32, 13, 30), "doc_stride=13: the pieces consecutive windows share, 0 to 12"),
                       ((32, None, 0), "max_answer_length=0"), ((4, None, 30), "max_length=4: too short")):
        with pytest.raises(UsageError, match=said):
            check_windows(*args)


# ---------------------------------------------------------------- decoding


def test_the_best_span_is_the_exact_maximum_over_allowed_spans():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, limit, start = int(rng.integers(1, 25)), int(rng.integers(1, 8)), int(rng.integers(1, 5))
        starts, ends = rng.normal(size=n + start + 1), rng.normal(size=n + start + 1)
        offsets = np.array([(2 * i, 2 * i + 1) for i in range(n)])
        span = best_span(starts, ends, offsets, start, limit)
        best = max((starts[start + i] + ends[start + j], -i, -j) for i in range(n) for j in range(i, n)
                   if j - i < limit)
        i, j = -best[1], -best[2]
        assert span == Span(2 * i, 2 * j + 1, pytest.approx(best[0]))
    assert best_span(starts, ends, np.zeros((0, 2), dtype=int), 1, 5) is None


def test_decoding_takes_the_best_window_and_the_smallest_null_and_cuts_the_context(tokenizer, tmp_path):
    context = "Café " + " ".join(FILLER[:30])  # the tokenizer lower-cases and strips accents; answers do not
    questions = _question_at(tmp_path, context, "Café", 0)
    features = encode(tokenizer, questions, 16, 2, labels=False)
    assert len(features.features) >= 3
    starts = [np.zeros(len(f["input_ids"])) for f in features.features]
    ends = [np.zeros(len(f["input_ids"])) for f in features.features]
    starts[0][features.context_start[0]] = ends[0][features.context_start[0]] = 2.0  # "café" in window 0
    last = len(features.features) - 1
    k = features.context_start[last] + 1
    starts[last][k], ends[last][k + 1] = 3.0, 2.0  # a better two-piece span in the last window
    starts[1][0], ends[1][0] = -4.0, 1.0  # the smallest null score: window 1's
    spans, odds = decode(questions, features, starts, ends)
    offsets = features.offsets[last]
    assert spans == {"q": context[offsets[1, 0] : offsets[2, 1]]}
    assert odds == {"q": -3.0 - 5.0}
    starts[last][k] = 0.0
    spans, _ = decode(questions, features, starts, ends)
    assert spans == {"q": "Café"}  # the context's own characters, accent and capital kept


def test_a_question_without_context_pieces_answers_nothing(tokenizer, tmp_path):
    path = write_squad(tmp_path / "empty.json", [paragraph("\x07\x07", qa("q", QUESTION, impossible=True))],
                       "v2.0")
    questions = read_squad(path).examples
    features = encode(tokenizer, questions, 16, 2, labels=True)
    starts = [np.ones(len(f["input_ids"])) for f in features.features]
    assert decode(questions, features, starts, starts) == ({"q": ""}, {"q": math.inf})


# ---------------------------------------------------------------- predictions and baselines


def test_predictions_are_squad_format_and_rows_recompute_the_scores(tmp_path):
    from trainer.evaluate.data import TaskData
    from trainer.evaluate.tasks.qa import KIND, fractions

    split = read_squad(write_squad(tmp_path / "v2.json", [paragraph(CONTEXT, qa("a", "x?", ("France", 76)),
                                   qa("b", "y?", impossible=True))], "v2.0"))
    data = TaskData("qa", (), split, split)
    predictions = [{"text": "in France", "null_odds": -1.5}, {"text": "", "null_odds": math.inf}]
    assert KIND.side_files(data, split, predictions) == {"predictions.json": {"a": "in France", "b": ""},
                                                         "null-odds.json": {"a": -1.5, "b": math.inf}}
    rows = [json.loads(json.dumps(KIND.record(q, i, KIND.gold(data, q), p)))
            for i, (q, p) in enumerate(zip(split.examples, predictions, strict=True))]
    assert rows == [{"id": "a", "gold": ["France"], "predicted": "in France", "null_odds": -1.5},
                    {"id": "b", "gold": [], "predicted": "", "null_odds": math.inf}]
    recomputed = score({r["id"]: r["gold"] for r in rows}, {r["id"]: r["predicted"] for r in rows}, "2.0")
    assert KIND.score(data, [r["gold"] for r in rows], predictions) == fractions(recomputed)
    assert recomputed["exact_match"] == 50.0 and recomputed["f1"] == pytest.approx(100 * (2 / 3 + 1) / 2)


def test_the_baselines_are_the_empty_answer_and_the_first_words(tmp_path):
    data = [paragraph("  Hello,  big world", qa("a", "x?", ("big world", 10)), qa("b", "y?", ("Hello", 2)))]
    one = read_squad(write_squad(tmp_path / "v1.json", data + [
        paragraph("One two three.", qa("c", "z?", ("two three.", 4)))]))
    name, answers = baseline(one, one)  # the answers' usual length: 2 words (2 of 3)
    assert name == "the context's first 2 words"
    assert answers == {"a": "Hello,  big", "b": "Hello,  big", "c": "One two"}
    assert first_words("   ", 2) == "" and first_words("a b", 5) == "a b"
    two = read_squad(write_squad(tmp_path / "v2.json", data + [paragraph("Z", qa("d", "?", impossible=True))],
                                 "v2.0"))
    assert baseline(one, two) == ("empty answer", {"a": "", "b": "", "d": ""})
