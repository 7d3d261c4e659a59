"""Decontamination reads evaluation files with trainer.evaluate's format detection and readers: a planted
example of each format is found in a corpus, and a malformed file is one line naming file and place."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from corpusprep.curate.build import curate
from corpusprep.curate.evalsets import read_examples
from corpusprep.curate.options import CurateOptions
from corpusprep.errors import guarded
from corpusprep.read import ReadOptions
from tests.contexts import quiet
from tests.curate.planted import WORDS, document

FORMATS = ("eng.testb", "uner.iob2", "dev-v1.1.json", "dev-v2.0.json", "rte-dev.tsv", "CoLA/dev.tsv",
           "ewt-dev.conllu")


def planted_sentence(rng: random.Random) -> list[str]:
    """A 15-word sentence of tokens, a contraction among them: `don't` in the text, `do n't` as UD's words."""
    words = [rng.choice(WORDS) for _ in range(15)]
    return [words[0].capitalize(), *words[1:7], "don't", *words[7:], "."]


def text_of(tokens: list[str]) -> str:
    return " ".join(tokens[:-1]) + "."


def squad(version: str, context: str, question: str, impossible: bool) -> str:
    qa = {"id": f"q-{version}", "question": question,
          "answers": [] if impossible else [{"text": context.split()[0], "answer_start": 0}]}
    if version == "v2.0":
        qa["is_impossible"] = impossible
    other = {"id": f"other-{version}", "question": "Which river?", "answers": [],
             "is_impossible": True} if version == "v2.0" else None
    paragraph = {"context": context, "qas": [qa] + ([other] if other else [])}
    return json.dumps({"version": version, "data": [{"title": "T", "paragraphs": [paragraph]}]}, indent=1)


def evaluation_file(name: str, tokens: list[str], rng: random.Random) -> tuple[str, str]:
    """The file's text holding `tokens` as one example, and that example's position."""
    filler = document(rng, 1)
    if name == "eng.testb":  # CoNLL-2003: space-separated, -DOCSTART-, word POS chunk NER
        lines = ["-DOCSTART- -X- -X- O", "", "EU NNP B-NP B-ORG", "rejects VBZ B-VP O", ""]
        lines += [f"{t} NN I-NP {'B-LOC' if i == 2 else 'O'}" for i, t in enumerate(tokens)]
        return "\n".join(lines) + "\n", "line 6"
    if name == "uner.iob2":  # UNER's IOB2: tab-separated, # comments, a word index first
        lines = ["# sent_id = 1", "# text = Paris is nice", "1\tParis\tB-LOC\t-\t-", "2\tis\tO\t-\t-",
                 "3\tnice\tO\t-\t-", "", "# sent_id = 2", f"# text = {text_of(tokens)}"]
        lines += [f"{i}\t{t}\tO\t-\t-" for i, t in enumerate(tokens, 1)]
        return "\n".join(lines) + "\n", "line 9"
    if name == "dev-v1.1.json":  # the planted sentence inside a context
        context = f"{filler} {text_of(tokens)} {filler}"
        return squad("v1.1", context, "Who?", False), "context of question 'q-v1.1'"
    if name == "dev-v2.0.json":  # the planted sentence as an unanswerable question
        return squad("v2.0", filler, text_of(tokens), True), "question 'q-v2.0'"
    if name == "rte-dev.tsv":  # GLUE: index, a sentence pair, label; the planted sentence second of row 2
        rows = ["index\tsentence1\tsentence2\tlabel", "0\tA man sleeps.\tA man rests.\tentailment",
                f"1\t{filler}\t{text_of(tokens)}\tnot_entailment"]
        return "\n".join(rows) + "\n", "line 3"
    if name == "CoLA/dev.tsv":  # GLUE's CoLA: no header; source, label, mark, sentence
        rows = ["gj04\t1\t\tThe sailors rode the breeze clear of the rocks.",
                f"gj04\t0\t*\t{text_of(tokens)}"]
        return "\n".join(rows) + "\n", "line 2"
    # CoNLL-U: the contraction a multiword token, its words do + n't on their own lines
    lines, n = ["# sent_id = a-1", f"# text = {text_of(tokens)}"], 0
    for t in tokens:
        if t == "don't":
            lines += [f"{n + 1}-{n + 2}\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
                      f"{n + 1}\tdo\tdo\tAUX\t_\t_\t0\troot\t_\t_",
                      f"{n + 2}\tn't\tnot\tPART\t_\t_\t0\tadvmod\t_\t_"]
            n += 2
        else:
            n += 1
            lines.append(f"{n}\t{t}\t{t.lower()}\tNOUN\t_\t_\t0\tdep\t_\t_")
    return "\n".join(lines) + "\n", "line 1"


def test_a_planted_example_of_every_format_is_found_by_the_shared_readers(tmp_path):
    rng = random.Random(4)
    documents, planted = [], {}
    for name in FORMATS:
        tokens = planted_sentence(rng)
        text, position = evaluation_file(name, tokens, rng)
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
        documents.append(document(rng, 2) + f" {text_of(tokens)} " + document(rng, 1))
        planted[f"corpus.jsonl:{len(documents) - 1}"] = (name, position)
    documents += [document(rng, 3) for _ in range(6)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in documents))
    # UD's syntactic words split the contraction ("do n't"): read as them, the sentence would not match
    conllu = read_examples(str(tmp_path / "ewt-dev.conllu"))
    assert len(conllu) == 1 and "don't" in conllu[0].text
    options = CurateOptions(decontaminate=tuple(str(tmp_path / n) for n in FORMATS), exact=False, near=False)
    stats = curate([str(corpus)], tmp_path / "out", options, ReadOptions(), context=quiet(1))
    lines = (tmp_path / "out" / "removed.jsonl").read_text().splitlines()
    removed = {r["id"]: r for r in map(json.loads, lines)}
    assert {i: (Path(r["eval_file"]).relative_to(tmp_path).as_posix(), r["eval_position"])
            for i, r in removed.items()} == planted
    assert all(r["reason"] == "contaminated" for r in removed.values()) and stats["kept"] == 6
    # every text of each file: 2 CoNLL-2003 sentences, 2 IOB2, a v1.1 context and question, a v2.0 context
    # and 2 questions, 4 texts of 2 GLUE pairs, 2 CoLA sentences, 1 CoNLL-U sentence
    assert stats["evaluation"]["examples"] == 2 + 2 + 2 + 3 + 4 + 2 + 1
    assert stats["evaluation"]["found"] == len(FORMATS)


MALFORMED = {  # file -> (content, what the one line says)
    "eng.testb": ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ\n",
                  "eng.testb:4: 2 fields, the file's token lines have 4"),
    "uner.iob2": ("# sent_id = 1\n1\tParis\tB-LOC\n2\t\tO\n", "uner.iob2:3: empty word"),
    "dev-v1.1.json": (squad("v1.1", "In Paris.", "Where?", False).replace('"answer_start": 0',
                                                                           '"answer_start": 3'),
                      "dev-v1.1.json: question 'q-v1.1': answer 'In' does not match the context at "
                      "answer_start 3"),
    "dev-v2.0.json": (squad("v2.0", "In Paris.", "Where?", False).replace('"is_impossible": false',
                                                                           '"is_impossible": 1'),
                      "dev-v2.0.json: question 'q-v2.0': \"is_impossible\" is not true or false"),
    "rte-dev.tsv": ("index\tsentence1\tsentence2\tlabel\n0\tA cat.\tA dog.\t0\n1\tA cat.\t1\n",
                    "rte-dev.tsv:3: 3 fields, the header has 4"),
    "ewt-dev.conllu": ("# text = A b\n1\tA\tA\n", "ewt-dev.conllu:2: 3 tab-separated fields, CoNLL-U has 10"),
    # a line over trainer.evaluate's bound (1 MiB) is a fault of its line, never read whole
    "long.conllu": ("# text = x\n1\t" + "a" * (1 << 20) + "\t_\n",
                    "long.conllu:2: a line over 1,048,576 bytes"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_evaluation_file_is_one_line_naming_file_and_position(tmp_path, capsys, name):
    content, said = MALFORMED[name]
    (tmp_path / name).write_text(content)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"text": "Some text."}) + "\n")
    options = CurateOptions(decontaminate=(str(tmp_path / name),))
    code = guarded(lambda: curate([str(corpus)], tmp_path / "out", options, ReadOptions(), context=quiet(1)))
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and said in err, err


def test_a_file_whose_format_cannot_be_told_names_no_option_curate_lacks(tmp_path, capsys):
    (tmp_path / "dev.xml").write_text("<sentence>A cat.</sentence>\n")
    (tmp_path / "dev.tsv").write_text("premise\tlabel\nA cat.\t0\n")  # no column named like a sentence
    for name in ("dev.xml", "dev.tsv"):
        code = guarded(lambda: read_examples(str(tmp_path / name)))  # noqa: B023
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and name in err and "--format" not in err
        assert "--text-column" not in err and "no option to name them" in err


def test_on_error_skip_leaves_out_a_malformed_row_counted(tmp_path):
    rng = random.Random(5)
    tokens = planted_sentence(rng)
    rows = ["sentence\tlabel", "A cat\tsat\t0", f"{text_of(tokens)}\t1"]
    (tmp_path / "dev.tsv").write_text("\n".join(rows) + "\n")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in (document(rng, 2), text_of(tokens))))
    options = CurateOptions(decontaminate=(str(tmp_path / "dev.tsv"),), exact=False, near=False)
    stats = curate([str(corpus)], tmp_path / "out", options, ReadOptions(on_error="skip"), context=quiet(1))
    assert stats["evaluation"]["skipped"]["counts"] == {"wrong_field_count": 1}
    assert stats["evaluation"]["found"] == 1 and stats["removed"] == {"contaminated": 1}
    assert "dev.tsv:2: 3 fields" in (tmp_path / "out" / "report.md").read_text()
