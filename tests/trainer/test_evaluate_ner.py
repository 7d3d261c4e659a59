"""Named entities: CoNLL-2003 and IOB2 (UNER, WikiANN) column files read as they ship, the tag column found
or named, the scheme told (IOB1, IOB2, BIOES), and entity-level scores equal to seqeval's default mode on
thousands of random tag sequences and on real data when it is there."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

from bench.yardsticks import PUBLIC_DATA
from corpusprep.errors import DataError, UsageError
from tests.trainer.test_evaluate_data import task
from trainer.evaluate.compare import baseline_scores
from trainer.evaluate.data import Sentence
from trainer.evaluate.readers import read_task
from trainer.evaluate.settings import EvalSettings
from trainer.evaluate.tasks import task_kind

CONLL2003 = """\
-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O
. . O O

# NN B-NP O
Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER
Jan NNP I-NP B-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP I-LOC
"""  # the word `#` is a token, not a comment; `Jan` after `Blackburn` starts a second PER (IOB1's B-)

UNER = """\
# newdoc id = answers-1
# sent_id = answers-1-0001
# text = where can I get morcillas in tampa bay
1\twhere\tO\t-\t-
2\tcan\tO\t-\t-
3\tI\tO\t-\t-
4\tget\tO\t-\t-
5\tmorcillas\tO\t-\t-
6\tin\tO\t-\t-
7\ttampa\tB-LOC\t-\tstephen
8\tbay\tI-LOC\t-\tstephen

# sent_id = answers-1-0002
1\tJohn\tB-PER\t-\t-
2\tleft\tO\t-\t-
"""


def ner(tmp_path: Path, train: str, dev: str, name: str = "x.txt", **settings):
    return task(tmp_path, train, dev, name=name, **settings)


def test_conll_2003_as_it_ships(tmp_path):
    data = ner(tmp_path, CONLL2003, CONLL2003, name="eng.train")
    assert data.kind == "ner" and data.train.scheme == "IOB1" and data.train.fields == "column 1 -> column 4"
    first, second, third = data.train.examples
    assert first == Sentence(("EU", "rejects", "German", "call", "."), ("I-ORG", "O", "I-MISC", "O", "O"),
                             (3, 4, 5, 6, 7))
    assert second.words == ("#", "Peter", "Blackburn", "Jan") and second.labels[3] == "B-PER"
    assert third.words == ("BRUSSELS",)
    assert data.labels == ("B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O")
    assert data.task.size(data.train) == "3 sentences (10 words, 5 entities, IOB1)"
    chunks = ner(tmp_path, CONLL2003, CONLL2003, name="eng.train", task="tag", label_column="3")
    assert chunks.kind == "tag" and chunks.train.examples[0].labels == ("B-NP", "B-VP", "B-NP", "I-NP", "O")


def test_iob2_files_as_uner_and_wikiann_ship_them(tmp_path):
    data = ner(tmp_path, UNER, UNER, name="x.iob2")
    assert data.kind == "ner" and data.train.scheme == "IOB2" and data.train.fields == "column 2 -> column 3"
    first, second = data.train.examples
    assert first.words[6:] == ("tampa", "bay") and second.labels == ("B-PER", "O")
    wikiann = "en:John B-PER\nen:left O\n\nen:Paris B-LOC\nen:is O\n"  # space-separated, no index
    data = ner(tmp_path, wikiann, wikiann, name="tsv")
    assert data.train.examples[1].words == ("en:Paris", "en:is")
    assert data.train.fields == "column 1 -> column 2"


def test_bioes_and_iob2_schemes_are_told():
    from trainer.evaluate.columns import scheme

    def sentence(*tags):
        return Sentence(tuple("w" * len(tags)), tags, tuple(range(len(tags))))

    assert scheme([sentence("B-PER", "E-PER", "O", "S-LOC")]) == "BIOES"
    assert scheme([sentence("B-PER", "I-PER", "O", "B-LOC")]) == "IOB2"
    assert scheme([sentence("O", "I-PER", "B-PER")]) == "IOB1"


@pytest.mark.parametrize(("line", "message"), [
    ("Peter NNP B-NP", "3 fields, the file's token lines have 4"),
    ("Peter NNP B-NP PERSON", "tag 'PERSON' of word 'Peter' is no O, B-X, I-X, E-X or S-X"),
])
def test_a_malformed_token_line_names_file_and_line_or_is_a_counted_skip(tmp_path, line, message):
    bad = CONLL2003.replace("Peter NNP B-NP I-PER", line)
    with pytest.raises(DataError) as error:
        ner(tmp_path, bad, CONLL2003)
    assert str(error.value).startswith(f"{tmp_path / 'train.x.txt'}:10: {message}")
    data = ner(tmp_path, bad, CONLL2003, on_error="skip")
    assert [s.words[0] for s in data.train.examples] == ["EU", "BRUSSELS"]
    assert data.train.skips.counts == {"malformed_line": 1}


def test_an_entity_type_never_trained_on_is_a_fault_or_leaves_out_its_sentence(tmp_path):
    dev = CONLL2003.replace("BRUSSELS NNP B-NP I-LOC", "BRUSSELS NNP B-NP I-GPE")
    with pytest.raises(DataError, match=r"dev\.x\.txt:16: label 'I-GPE' of word 'BRUSSELS' is not in the"):
        ner(tmp_path, CONLL2003, dev)
    data = ner(tmp_path, CONLL2003, dev, on_error="skip")
    assert len(data.dev.examples) == 2 and data.dev.skips.counts == {"unknown_label": 1}


def test_no_tag_column_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"no column holds tags .*--label-column N"):
        ner(tmp_path, "a x\nb y\n\nc z\n", "a x\nb y\n\nc z\n", name="txt")


def random_tags(rng: random.Random, n: int) -> list[str]:
    """A sequence in any of the schemes, and malformed ones too (I- after O, E- without B-...)."""
    types = ["PER", "LOC", "ORG", "MISC"]
    return ["O" if rng.random() < 0.5 else f"{rng.choice('BIES')}-{rng.choice(types)}" for _ in range(n)]


@pytest.mark.slow  # ~3 s: seqeval is pure Python
def test_entity_scores_equal_seqeval_on_thousands_of_random_sequences():
    """The reporting path (the ner kind's `score`) against seqeval's own functions, default mode, over
    3,000 random sentences in 30 corpora: micro P/R/F1 and every type's report equal, to the last bit."""
    rng = random.Random(1)
    kind = task_kind("ner")
    for _ in range(30):
        golds = [random_tags(rng, rng.randint(1, 12)) for _ in range(100)]
        preds = [[t if rng.random() < 0.7 else random_tags(rng, 1)[0] for t in g] for g in golds]
        found = kind.score(None, golds, preds)
        assert found["entity_f1"] == f1_score(golds, preds)
        assert found["entity_precision"] == precision_score(golds, preds)
        assert found["entity_recall"] == recall_score(golds, preds)
        report = classification_report(golds, preds, output_dict=True, zero_division=0)
        assert found["n"] == report["micro avg"]["support"]
        for name, row in found["per_type"].items():
            theirs = report[name]
            assert (row["precision"], row["recall"], row["f1"], row["n"]) == (
                theirs["precision"], theirs["recall"], theirs["f1-score"], theirs["support"])


def test_conlleval_rules_by_hand():
    """An I- after O starts an entity (conlleval, seqeval's default mode); a type change ends one."""
    gold = [["O", "I-PER", "I-PER", "B-PER", "O", "B-LOC", "I-ORG"]]  # PER(1-2), PER(3), LOC(5), ORG(6)
    pred = [["O", "B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC"]]  # PER(1-3), LOC(5-6)
    found = task_kind("ner").score(None, gold, pred)
    assert (found["entity_precision"], found["entity_recall"]) == (0.0, 0.0) and found["n"] == 4
    found = task_kind("ner").score(None, gold, gold)
    assert found["entity_f1"] == 1.0 and found["per_type"]["PER"]["n"] == 2


CONLL = PUBLIC_DATA / "conll2003"


@pytest.mark.slow  # ~10 s: 300,000 tokens read and scored
@pytest.mark.skipif(not (CONLL / "eng.train").is_file(), reason=f"CoNLL-2003 is not in {PUBLIC_DATA}")
def test_conll_2003_real_files_count_as_published_and_score_as_seqeval():
    """eng.train/testa as distributed (IOB1): the sentence, token and entity counts of Tjong Kim Sang and De
    Meulder 2003 (Table 1), and the most frequent tag per word scored by the kind equals seqeval."""
    data = read_task(EvalSettings(train=str(CONLL / "eng.train"), dev=str(CONLL / "eng.testa")))
    assert data.train.scheme == "IOB1" and (len(data.train.examples), data.train.units) == (14_041, 203_621)
    assert (len(data.dev.examples), data.dev.units) == (3_250, 51_362)
    assert "5,942 entities" in data.task.size(data.dev)
    assert baseline_scores(data, "dev")["entity_f1"] == 0.0
    golds = [list(s.labels) for s in data.dev.examples]
    preds = task_kind("tag").baseline(data, data.dev)
    assert data.task.score(data, golds, preds)["entity_f1"] == f1_score(golds, preds) > 0.5
