"""trainer.evaluate's labelled data: CoNLL-U as UD specifies it, GLUE's TSV layouts, CSV and JSONL, bad
input as one line naming file:line (or counted skips), and the most-frequent baseline."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from corpusprep.errors import DataError, UsageError
from tests.conftest import shared_path
from tests.trainer.evaluate_helpers import conllu
from trainer.evaluate.compare import baseline_scores
from trainer.evaluate.data import Row, Sentence
from trainer.evaluate.readers import read_task
from trainer.evaluate.settings import EvalSettings

UD = """\
# newdoc id = d1
# sent_id = 1
# text = I don't run.\tTabs in a comment are no fields.
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\trun\trun\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tran\trun\tVERB\tVBD\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = 2
# text = Dogs run
1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
2\trun\trun\tVERB\tVBP\t_\t0\troot\t_\t_
"""  # the last sentence has no blank line after it, as at the end of some files


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def task(tmp_path: Path, train: str, dev: str, name: str = "x.conllu", **settings):
    a, b = write(tmp_path / f"train.{name}", train), write(tmp_path / f"dev.{name}", dev)
    return read_task(EvalSettings(train=str(a), dev=str(b), **settings))


def test_conllu_words_are_tagged_as_ud_says(tmp_path):
    data = task(tmp_path, UD, UD)
    assert data.kind == "tag"
    first, second = data.train.examples
    # the multiword token `don't` is no word; its words `do` `n't` are; the empty node `4.1` is none
    assert first.words == ("I", "do", "n't", "run", ".")
    assert first.labels == ("PRON", "AUX", "PART", "VERB", "PUNCT")
    assert first.lines == (4, 6, 7, 8, 10)
    assert second == Sentence(("Dogs", "run"), ("NOUN", "VERB"), (14, 15))
    assert data.labels == ("AUX", "NOUN", "PART", "PRON", "PUNCT", "VERB")
    assert data.dev.units == 7


def test_xpos_or_a_field_number_and_compressed_crlf_bom_files(tmp_path):
    packed = tmp_path / "train.conllu.xz"
    packed.write_bytes(lzma.compress(("\ufeff" + UD.replace("\n", "\r\n")).encode()))
    dev = write(tmp_path / "dev.conllu", UD)
    data = read_task(EvalSettings(train=str(packed), dev=str(dev), label_column="xpos"))
    assert data.train.examples[0].labels == ("PRP", "VBP", "RB", "VB", ".")
    assert data.train.fields == "form -> xpos"
    by_number = read_task(EvalSettings(train=str(packed), dev=str(dev), label_column=8))
    assert by_number.train.examples[1].labels == ("nsubj", "root")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("2\trun\trun\tVERB\tVBP\t_\t0\troot\t_", "9 tab-separated fields, CoNLL-U has 10"),
        ("3\trun\trun\tVERB\tVBP\t_\t0\troot\t_\t_", "word id 3 where 2 comes next"),
        ("two\trun\trun\tVERB\tVBP\t_\t0\troot\t_\t_", "word id 'two' is not a number"),
        ("2\trun\trun\t_\tVBP\t_\t0\troot\t_\t_", "word 'run' has no UPOS ('_')"),
        ("2 run run VERB VBP _ 0 root _ _", "1 tab-separated fields"),  # spaces for tabs
    ],
)
def test_a_malformed_conllu_line_is_one_error_naming_file_and_line_or_a_counted_skip(tmp_path, line, message):
    bad = UD.replace("2\trun\trun\tVERB\tVBP\t_\t0\troot\t_\t_", line)
    with pytest.raises(DataError) as error:
        task(tmp_path, bad, UD)
    assert str(error.value).startswith(f"{tmp_path / 'train.x.conllu'}:15: {message}")
    assert "\n" not in str(error.value)
    data = task(tmp_path, bad + "\n" + UD, UD, on_error="skip")  # the broken sentence goes, the rest stays
    first = ("I", "do", "n't", "run", ".")
    assert [s.words for s in data.train.examples] == [first, first, ("Dogs", "run")]
    assert data.train.skips.counts == {"malformed_line": 1}
    assert data.train.skips.examples[0].startswith(f"{tmp_path / 'train.x.conllu'}:15: {message}")


def test_a_dev_label_the_training_data_never_has_is_an_error_or_left_out_of_the_score(tmp_path):
    dev = UD.replace("1\tDogs\tdog\tNOUN", "1\tDogs\tdog\tINTJ")
    with pytest.raises(DataError, match=r"dev\.x\.conllu:14: label 'INTJ' of word 'Dogs' is not in the"):
        task(tmp_path, UD, dev)
    data = task(tmp_path, UD, dev, on_error="skip")
    assert data.dev.examples[1] == Sentence(("Dogs", "run"), ("", "VERB"), (14, 15))
    assert data.dev.units == 6 and data.dev.skips.counts == {"unknown_label": 1}


GLUE = {
    # GLUE's files as distributed: SST-2, MRPC (its header as is), RTE, QNLI; quotes are never quoting
    "sst2.tsv": ("sentence\tlabel\nit 's a \"charming journey .\t1\nbad .\t0\n", False),
    "mrpc.tsv": ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t702876\t702977\tHe said .\tHe told .\n"
                 "0\t2108705\t2108831\tYes .\tNo .\n", True),
    "rte.tsv": ("index\tsentence1\tsentence2\tlabel\n0\tA man .\tA person .\tentailment\n"
                "1\tA dog .\tA cat .\tnot_entailment\n", True),
    "qnli.tsv": ("index\tquestion\tsentence\tlabel\n0\tWho ?\tHe did .\tentailment\n"
                 "1\tWhen ?\tBlue .\tnot_entailment\n", True),
}


@pytest.mark.parametrize("name", GLUE)
def test_glue_layouts_work_as_they_are(tmp_path, name):
    text, pair = GLUE[name]
    data = task(tmp_path, text, text, name=name)
    assert data.kind == "classify" and data.pair == pair and len(data.labels) == 2
    first = data.train.examples[0]
    if name == "sst2.tsv":
        assert first == Row('it \'s a "charming journey .', None, "1", 2)
    if name == "mrpc.tsv":
        assert (first.text, first.text_b, first.label) == ("He said .", "He told .", "1")
        assert data.train.fields == "'#1 String' + '#2 String' -> 'Quality'"
    if name == "qnli.tsv":
        assert (first.text, first.text_b) == ("Who ?", "He did .")


def test_cola_without_a_header_names_its_columns_by_number(tmp_path):
    cola = "gj04\t1\t\tOur friends won't buy this.\nclc95\t0\t*\tThey drank the pub.\n"
    data = task(tmp_path, cola, cola, name="cola.tsv", header=False, text_column="4", label_column="2")
    assert data.train.examples[1] == Row("They drank the pub.", None, "0", 2)
    with pytest.raises(UsageError, match="no header; name the columns by number"):
        task(tmp_path, cola, cola, name="cola.tsv", header=False)


def test_a_row_with_the_wrong_number_of_fields_names_file_and_line(tmp_path):
    text = "sentence\tlabel\ngood .\t1\nbad .\t0\textra\nfine .\t1\nawful .\t0\n"
    with pytest.raises(DataError, match=r"train\.x\.tsv:3: 3 fields, the header has 2"):
        task(tmp_path, text, text, name="x.tsv")
    data = task(tmp_path, text, text, name="x.tsv", on_error="skip")
    assert [r.text for r in data.train.examples] == ["good .", "fine .", "awful ."]
    assert data.dev.skips.counts == {"wrong_field_count": 1}


def test_csv_quoting_and_jsonl_values(tmp_path):
    csv_text = 'text,label\n"a, quoted\nline",pos\nplain,neg\n'
    data = task(tmp_path, csv_text, csv_text, name="x.csv")
    assert data.train.examples == [Row("a, quoted\nline", None, "pos", 3), Row("plain", None, "neg", 4)]
    jsonl = ('{"premise": "A.", "hypothesis": "B.", "label": 1}\n\n'
             '{"premise": "C.", "hypothesis": "D.", "label": 0}\n')
    data = task(tmp_path, jsonl, jsonl, name="x.jsonl")
    assert data.pair and data.train.examples[0] == Row("A.", "B.", "1", 1) and data.labels == ("0", "1")
    broken = jsonl + '{"premise": "E.", "label": 1}\nnot json\n'
    with pytest.raises(DataError, match=r"train\.x\.jsonl:4: no text in 'hypothesis'"):
        task(tmp_path, broken, jsonl, name="x.jsonl")
    data = task(tmp_path, broken, jsonl, name="x.jsonl", on_error="skip")
    assert data.train.skips.counts == {"malformed_line": 2}


def test_columns_that_cannot_be_told_apart_or_found_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match=r"the text column is ambiguous \('sentence' and 'text'\)"):
        task(tmp_path, "sentence\ttext\tlabel\na\tb\t1\n", "sentence\tlabel\na\t1\n", name="x.tsv")
    with pytest.raises(UsageError, match=r"no label column \(columns: index, sentence\)"):
        task(tmp_path, "index\tsentence\n0\ta\n", "index\tsentence\n0\ta\n", name="x.tsv")
    rows = "sentence\tlabel\na\t1\n"
    with pytest.raises(UsageError, match=r"--text-column 'body': no such column \(columns: sentence, lab"):
        task(tmp_path, rows, rows, name="x.tsv", text_column="body")
    with pytest.raises(UsageError, match="cannot tell the format from the name"):
        task(tmp_path, "sentence\tlabel\na\t1\n", "sentence\tlabel\na\t1\n", name="x.xml")
    with pytest.raises(UsageError, match="a conllu file, but the training file is a tsv file"):
        read_task(EvalSettings(train=str(write(tmp_path / "a.tsv", "sentence\tlabel\na\t1\nb\t0\n")),
                               dev=str(write(tmp_path / "b.conllu", UD))))


def test_most_frequent_tag_per_word_baseline(tmp_path):
    train = conllu([[("The", "DET"), ("run", "NOUN"), ("ended", "VERB")], [("They", "PRON"), ("run", "VERB")],
                    [("We", "PRON"), ("run", "NOUN")], [("We", "PRON"), ("walk", "VERB")]])
    # `run` is mostly a NOUN; unseen forms take their lower-cased form's tag, else the most frequent tag
    # overall (PRON and VERB tie at 3: the first in label order, PRON)
    dev = conllu([[("RUN", "NOUN"), ("they", "PRON"), ("zebra", "NOUN"), ("walk", "VERB")]])
    assert baseline_scores(task(tmp_path, train, dev), "dev")["accuracy"] == 3 / 4
    rows = "sentence\tlabel\na\t1\nb\t1\nc\t0\n"
    majority = baseline_scores(task(tmp_path, rows, "sentence\tlabel\nx\t1\ny\t0\n", name="x.tsv"), "dev")
    assert majority == {"accuracy": 0.5, "f1": 2 / 3, "matthews": 0.0, "n": 2}


@pytest.mark.shared
def test_ud_english_ewt_as_distributed():
    """../shared's UD English-EWT (xz): every sentence and word read, as counted by a plain awk over the
    word lines (integer ids), and the most-frequent-tag baseline a tagger must beat."""
    ewt = shared_path("eval/ud_en_ewt")
    data = read_task(EvalSettings(train=str(ewt / "en_ewt-ud-train.conllu.xz"),
                                  dev=str(ewt / "en_ewt-ud-dev.conllu.xz")))
    assert (len(data.train.examples), data.train.units) == (12_544, 204_577)
    assert (len(data.dev.examples), data.dev.units) == (2_001, 25_147)
    assert len(data.labels) == 17 and not data.train.skips.counts
    assert baseline_scores(data, "dev")["accuracy"] == pytest.approx(0.8659, abs=1e-4)


def test_auto_tells_ner_columns_and_regression_scores(tmp_path):
    iob2 = "1\tJohn\tB-PER\n2\tleft\tO\n\n1\tParis\tB-LOC\n2\tis\tO\n"
    assert task(tmp_path, iob2, iob2, name="x.iob2").kind == "ner"
    assert task(tmp_path, iob2, iob2, name="x.txt").kind == "ner"  # told by its first lines
    scores = "sentence1\tsentence2\tscore\n" + "".join(f"a{i}\tb\t{i / 3:.3f}\n" for i in range(12))
    assert task(tmp_path, scores, scores, name="x.tsv").kind == "regression"
    few = "sentence\tlabel\n" + "".join(f"a{i}\t{i % 2}.0\n" for i in range(12))  # two classes, not scores
    assert task(tmp_path, few, few, name="x.tsv").kind == "classify"
    with pytest.raises(UsageError, match="--task ner: .* is a tsv file; ner reads conll"):
        task(tmp_path, few, few, name="x.tsv", task="ner")
