"""trainer.evaluate's fine-tuning: labels on first word pieces, windows, two models that differ only by
their initial encoder weights, determinism for a seed, and the pre-training cost read from a run."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.interop.helpers import one_thread
from tests.trainer.evaluate_helpers import fast_settings, write_run, write_toy_task, write_toy_vocab
from trainer import checkpoint
from trainer.evaluate import finetune
from trainer.evaluate.data import Sentence
from trainer.evaluate.model import pretrained, pretraining_cost
from trainer.evaluate.readers import read_task
from trainer.evaluate.tasks import task_kind

pytest.importorskip("transformers")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("toy")
    train, dev = write_toy_task(root)
    vocab = write_toy_vocab(root / "vocab")
    runs = [write_run(root / f"run{seed}", vocab, seed=seed) for seed in (0, 1)]
    settings = fast_settings(train, dev, vocab)
    return {"root": root, "settings": settings, "data": read_task(settings), "checkpoints": runs}


@pytest.fixture(scope="module")
def hf(toy):
    with pretrained(toy["checkpoints"][0], toy["settings"].vocab) as model:
        yield model.hf_dir


@pytest.fixture(scope="module")
def tokenizer(hf):
    transformers = finetune.require_transformers()
    return transformers.AutoTokenizer.from_pretrained(str(hf))


def encode_tags(tokenizer, sentences: list[Sentence], max_length: int, labels=("NOUN", "VERB", "PRON")):
    """The tag kind's features of `sentences` (label ids: the index in `labels`)."""
    data, settings = SimpleNamespace(labels=labels), SimpleNamespace(max_length=max_length)
    return task_kind("tag").encode(tokenizer, data, sentences, settings, train=True)


def test_the_first_piece_of_each_word_carries_its_label(tokenizer):
    sentence = Sentence(("hes", "walking", "\x07", "dog"), ("PRON", "VERB", "NOUN", "NOUN"), (1, 2, 3, 4))
    encoded = encode_tags(tokenizer, [sentence], max_length=32)
    (feature,) = encoded.features
    assert tokenizer.convert_ids_to_tokens(feature["input_ids"]) == [
        "[CLS]", "he", "##s", "walk", "##ing", "dog", "[SEP]"]
    assert feature["labels"] == [-100, 2, -100, 1, -100, 0, -100]
    # a word the tokenizer drops (a control character) has no piece to carry its label: never scored right
    assert encoded.meta == [[(1, 0), (3, 1), (5, 3)]] and encoded.example == [0]


def test_a_long_sentence_is_tagged_in_windows_of_whole_words(tokenizer):
    sentence = Sentence(("hes", "walking", "dog", "hes", "cat"), ("PRON", "VERB", "NOUN", "PRON", "NOUN"),
                        (1, 2, 3, 4, 5))
    encoded = encode_tags(tokenizer, [sentence], max_length=5)
    tokens = [tokenizer.convert_ids_to_tokens(f["input_ids"]) for f in encoded.features]
    assert tokens == [["[CLS]", "he", "##s", "[SEP]"], ["[CLS]", "walk", "##ing", "dog", "[SEP]"],
                      ["[CLS]", "he", "##s", "cat", "[SEP]"]]
    assert sorted(wi for where in encoded.meta for _, wi in where) == [0, 1, 2, 3, 4]  # each word once
    assert all(len(f["input_ids"]) <= 5 for f in encoded.features)


def test_a_word_longer_than_the_model_raises_no_false_alarm(tokenizer, monkeypatch):
    """A word of more pieces than the model takes (a URL) is cut by the windows above: transformers' warning
    that running it "will result in indexing errors" would be false, and is not given."""
    said: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = said.append
    root = finetune.require_transformers().utils.logging.get_logger()  # the library's own root logger
    root.addHandler(handler)
    monkeypatch.setattr(tokenizer, "model_max_length", 1)  # "walking" is 2 pieces
    try:
        sentence = Sentence(("walking", "dog"), ("VERB", "NOUN"), (1, 2))
        encoded = encode_tags(tokenizer, [sentence], max_length=32)
    finally:
        root.removeHandler(handler)
    assert len(encoded.features) == 1
    assert not [r for r in said if "indexing errors" in r.getMessage()]


def test_pretrained_and_random_models_differ_only_by_their_initial_weights(toy, hf, tmp_path):
    data = toy["data"]
    saved = checkpoint.load_checkpoint(toy["checkpoints"][0])[1]
    pre = finetune.build_model(hf, data, "pretrained", seed=7)
    rand = finetune.build_model(hf, data, "random", seed=7)
    words = saved["embeddings.word_embeddings.weight"]
    exported = load_file(str(hf / "model.safetensors"))
    encoder = pre.bert.state_dict()
    assert all(torch.equal(v, exported[f"bert.{k}"]) for k, v in encoder.items() if f"bert.{k}" in exported)
    assert {f"bert.{k}" for k in encoder} - set(exported) <= {"bert.embeddings.position_ids"}  # every weight
    assert torch.equal(pre.bert.embeddings.word_embeddings.weight, words)
    assert not torch.allclose(rand.bert.embeddings.word_embeddings.weight, words, atol=1e-3)
    same = {k: v for k, v in pre.config.to_dict().items() if k != "_name_or_path"}
    assert same == {k: v for k, v in rand.config.to_dict().items() if k != "_name_or_path"}  # and dropout
    # the random model is drawn from the seed alone: another checkpoint of the same shape gives the same one
    with pretrained(toy["checkpoints"][1], toy["settings"].vocab) as other:
        assert not torch.equal(finetune.build_model(other.hf_dir, data, "pretrained", 7).bert.embeddings
                               .word_embeddings.weight, words)
        again = finetune.build_model(other.hf_dir, data, "random", seed=7)
    assert all(torch.equal(a, b) for a, b in zip(rand.state_dict().values(), again.state_dict().values(),
                                                 strict=True))
    other_seed = finetune.build_model(hf, data, "random", seed=8)
    assert not torch.equal(other_seed.classifier.weight, rand.classifier.weight)


def test_a_seed_gives_the_same_run_and_leaves_the_callers_random_state_alone(toy, hf):
    data, settings = toy["data"], toy["settings"]
    torch.manual_seed(99)
    random.seed(99)
    np.random.seed(99)
    before = torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()
    transformers = finetune.require_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf))
    encoded = data.task.encode(tokenizer, data, data.train.examples, settings, train=True)
    weights = []
    for seed in (5, 5, 6):
        model = finetune.build_model(hf, data, "pretrained", seed)
        finetune.train(model, tokenizer, data, encoded, settings, seed)
        weights.append(model.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(weights[0].values(), weights[1].values(), strict=True))
    assert not torch.equal(weights[0]["classifier.weight"], weights[2]["classifier.weight"])
    assert torch.equal(torch.get_rng_state(), before[0]) and random.getstate() == before[1]
    assert (np.random.get_state()[1] == before[2]).all()


def test_fine_tuning_learns_the_toy_task(toy, hf):
    settings = fast_settings(toy["settings"].train, toy["settings"].dev, toy["settings"].vocab, epochs=10.0)
    first = finetune.run(hf, toy["data"], settings, "random", seed=1)
    assert first == finetune.run(hf, toy["data"], settings, "random", seed=1)
    # 6 tags, none above 30% of the words: a model that learnt nothing scores far below 0.8
    scores = first["scores"]["dev"]
    assert scores["accuracy"] > 0.8 and scores["n"] == toy["data"].dev.units


def test_the_pre_training_cost_comes_from_the_run(toy):
    cost = pretraining_cost(toy["checkpoints"][0])
    # 20 steps of 8 x 2 sequences; two windows of 10 steps at 16 sequences/s and 640 tokens/s
    assert cost == {"known": True, "steps": 20, "examples": 320, "tokens": 12800, "seconds": 20.0,
                    "note": "one process; from metrics.jsonl"}
    (Path(toy["root"]) / "import").mkdir()
    imported = Path(toy["root"]) / "import"
    assert pretraining_cost(imported)["known"] is False
