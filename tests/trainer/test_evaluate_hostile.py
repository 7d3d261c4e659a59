"""`python -m trainer.evaluate` on what a hostile user hands it: a Hugging Face directory whose config lies
about its sizes or whose weights are cut short, a run whose metrics.jsonl or config.json holds absurd
numbers, an output whose run records were edited between a kill and the resume. One line (or an unknown
cost with a note), never a traceback, a hang or a negative count."""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict, replace

import pytest
import torch

from corpusprep.engine.records import MAX_INT
from corpusprep.errors import DataError
from tests.trainer.evaluate_helpers import conllu, fast_settings, toy_config, write_run
from tests.trainer.test_evaluate_command import args, fake_runs, toy  # noqa: F401 - fixtures
from trainer.evaluate import __main__ as command
from trainer.evaluate import data as data_module
from trainer.evaluate import finetune
from trainer.evaluate.data import MAX_LABELS, MAX_WORDS, Row
from trainer.evaluate.model import model_shape, pretrained, pretraining_cost
from trainer.evaluate.readers import read_task
from trainer.evaluate.settings import EvalSettings
from trainer.evaluate.tasks.classify import encode_rows
from trainer.evaluate.tasks.tag import CHARS_PER_PIECE
from trainer.export import export
from trainer.model import BertForPreTraining

main = command.main


def _hf(toy, tmp_path):  # noqa: F811 - the fixture's value
    return export(toy["run"], tmp_path / "hf", toy["vocab"])


def _config(change):
    def apply(hf):
        config = json.loads((hf / "config.json").read_text())
        (hf / "config.json").write_text(json.dumps(config | change))
    return apply


def _cut(hf):
    data = (hf / "model.safetensors").read_bytes()
    (hf / "model.safetensors").write_bytes(data[: len(data) - 100])


def _pickled(hf):
    (hf / "model.safetensors").rename(hf / "pytorch_model.bin")


def _vocab_bytes(hf):
    with open(hf / "vocab.txt", "ab") as f:
        f.write(b"\xff\xfe\n")


HF_CASES = {
    "hidden size 2^31 - 2": (_config({"hidden_size": 2**31 - 2}), 1, "with 2 layers has ~"),
    "layers 2^31 - 1": (_config({"num_hidden_layers": 2**31 - 1}), 1, "layers has ~"),
    "hidden size of other weights": (_config({"hidden_size": 64}), 1, "config.json gives [64"),
    "weights cut short": (_cut, 1, "model.safetensors: "),
    "a pickle only": (_pickled, 2, "holds pickled (or TensorFlow) weights"),
    "vocab not UTF-8": (_vocab_bytes, 2, "vocab.txt:"),
}


@pytest.mark.parametrize("case", HF_CASES)
def test_a_lying_hugging_face_directory_is_one_line_before_any_run(case, toy, fake_runs, tmp_path,  # noqa: F811
                                                                    capsys):
    damage, code, says = HF_CASES[case]
    hf = _hf(toy, tmp_path)
    damage(hf)
    argv = args(toy)
    argv[0] = str(hf)
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"error: {hf}") and says in err, err
    assert fake_runs == []


METRICS = {
    "rates overflow": ('{"step": 10, "seq_per_s": 1e-300, "tokens_per_s": 1e300}', "beyond any run"),
    "a rate that is a word": ('{"step": 10, "seq_per_s": "fast", "tokens_per_s": 1.0}',
                              "seq_per_s is not a finite number > 0"),
    "a negative rate": ('{"step": 10, "seq_per_s": 16.0, "tokens_per_s": -5}',
                        "tokens_per_s is not a finite number > 0"),
    "steps going back": ('{"step": 10, "seq_per_s": 16.0, "tokens_per_s": 640.0}\n'
                         '{"step": 5, "seq_per_s": 16.0, "tokens_per_s": 640.0}', "step 5 after 10"),
}


@pytest.mark.parametrize("case", METRICS)
def test_a_cost_from_absurd_metrics_is_unknown_with_a_note(case, toy, tmp_path):  # noqa: F811
    text, says = METRICS[case]
    checkpoint = write_run(tmp_path / "run", toy["vocab"])
    (tmp_path / "run" / "metrics.jsonl").write_text(text + "\n")
    cost = pretraining_cost(checkpoint)
    assert cost["tokens"] is None and cost["seconds"] is None and says in cost["note"], cost
    assert cost["examples"] == 320


@pytest.mark.parametrize("size", ["1e400", "-8", "true", "8.5", str(MAX_INT)])
def test_a_batch_size_no_run_had_leaves_the_cost_unknown(size, toy, tmp_path):  # noqa: F811
    checkpoint = write_run(tmp_path / "run", toy["vocab"])
    config = (checkpoint / "config.json").read_text()
    (checkpoint / "config.json").write_text(config.replace('"batch_size": 8', f'"batch_size": {size}'))
    cost = pretraining_cost(checkpoint)
    assert cost == {"known": True, "steps": 20, "note": "no batch size in its config.json (or not a whole "
                    "number > 0): examples, tokens and time unknown"}


def test_the_cost_of_a_lying_run_is_written_and_read_back(toy, fake_runs, tmp_path, capsys):  # noqa: F811
    """`tokens_per_s: -5` once made a first run write what its rerun refused to read back."""
    run = tmp_path / "run"
    write_run(run / "train", toy["vocab"])
    (run / "train" / "metrics.jsonl").write_text('{"step": 10, "seq_per_s": 16.0, "tokens_per_s": -5}\n')
    argv = args(toy, "-o", str(tmp_path / "ev"))
    argv[0] = str(run / "train")
    assert main(argv) == 0
    assert main(argv) == 0 and "complete, nothing to do" in capsys.readouterr().err


@pytest.mark.parametrize("edit, says", [
    (lambda stats: stats | {"seed": 999}, "run of pretrained seed 999, not of its task pretrained-seed12345"),
    (lambda stats: stats | {"scores": {"x": stats["scores"]["dev"]}}, "scores: no dev split"),
])
def test_a_resumed_run_record_of_another_task_is_one_line(edit, says, toy, fake_runs, tmp_path,  # noqa: F811
                                                          capsys):
    out = tmp_path / "ev"
    argv = args(toy, "-o", str(out))
    assert main(argv) == 0
    (out / "evaluation.json").unlink()
    manifest = json.loads((out / "artifact.json").read_text())
    task = manifest["tasks"]["pretrained-seed12345"]
    task["stats"] = edit(task["stats"])
    (out / "artifact.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "pretrained-seed12345.done.json" in err[-1] and says in err[-1]
    shutil.rmtree(out)


# ---------------------------------------------------------------- issue 39: crashes, bounds, verdicts


def test_a_pad_token_beyond_the_vocab_is_one_line_before_any_run(toy, fake_runs, tmp_path, capsys):  # noqa: F811
    """transformers builds the embedding with pad_token_id as its padding index: one beyond the vocab was an
    AssertionError (a traceback) in the first run."""
    hf = _hf(toy, tmp_path)
    _config({"pad_token_id": 10**6})(hf)
    argv = args(toy)
    argv[0] = str(hf)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    vocab = json.loads((hf / "config.json").read_text())["vocab_size"]
    assert err == f"error: {hf}/config.json: pad_token_id 1000000 is beyond the vocab (0 to {vocab - 1})"
    assert fake_runs == []


@pytest.mark.parametrize(("flags", "says"), [
    (["--epochs", "inf"], "epochs=inf: must be > 0 and at most 1,000"),
    (["--epochs", "1e9"], "epochs=1000000000.0: must be > 0 and at most 1,000"),
    (["--lr", "inf"], "lr=inf: must be > 0 and at most 1"),
    (["--lr", "nan"], "lr=nan: must be > 0"),
    (["--batch-size", "0"], "batch_size=0: must be > 0"),
    (["--max-length", "99999999"], "max_length=99999999: must be 8 to 1,048,576"),
    (["--metric", "entity_f1"], "--metric entity_f1: tag reports accuracy"),
])
def test_settings_no_run_can_honour_are_one_line_before_any_run(flags, says, toy, fake_runs, capsys):  # noqa: F811
    """`--epochs inf` was an OverflowError (after every other stage of a pipeline ran); `--lr inf` trained
    and scored 0.5 without a word."""
    assert main(args(toy, *flags)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and fake_runs == []


def test_a_run_that_collapsed_or_diverged_is_a_warning_on_the_page(toy, fake_runs, monkeypatch,  # noqa: F811
                                                                   capsys):
    """SST-2's 0.5500 is its majority class: a run that learnt nothing must not read as a score."""
    run = finetune.run

    def collapsing(hf_dir, data, settings, init, seed):
        found = run(hf_dir, data, settings, init, seed)
        if init == "random":
            found |= {"collapsed": {"dev": "'NOUN' for every word"}, "diverged": "training loss nan"}
        return found

    monkeypatch.setattr(finetune, "run", collapsing)
    assert main(args(toy, "--seeds", "2")) == 0
    out = capsys.readouterr().out
    assert "dev: warning: random seed 12345 predicts 'NOUN' for every word: it collapsed to one answer" in out
    assert "dev: warning: random seed 12346: training diverged (training loss nan)" in out


@pytest.mark.slow  # ~3 s: a real fine-tuning run
def test_a_diverging_run_is_detected(toy, tmp_path, monkeypatch):  # noqa: F811
    """A weight that is not finite makes every loss NaN: the run says it diverged, and scores (of a model
    that predicts one tag) are still written, never a crash."""
    settings = fast_settings(toy["train"], toy["dev"], toy["vocab"], seeds=1, epochs=1.0)
    data = read_task(settings)
    build = finetune.build_model

    def poisoned(hf_dir, data, init, seed):
        model = build(hf_dir, data, init, seed)
        with torch.no_grad():
            model.classifier.weight[0, 0] = float("nan")
        return model

    monkeypatch.setattr(finetune, "build_model", poisoned)
    with pretrained(toy["run"], toy["vocab"]) as model:
        found = finetune.run(model.hf_dir, data, settings, "random", seed=1)
    assert found["diverged"] == "training loss nan" and found["training_loss"] is None
    assert 0 <= found["scores"]["dev"]["accuracy"] <= 1


def test_a_line_over_the_bound_is_a_fault_never_held_whole(tmp_path, monkeypatch):
    """One 60 MB TSV line took 6 GB: a line over MAX_LINE_BYTES is a fault of its line (read in pieces of the
    bound, never whole), or a counted skip."""
    monkeypatch.setattr(data_module, "MAX_LINE_BYTES", 1000)
    rows = "sentence\tlabel\n" + "good .\t1\nbad .\t0\n" * 3
    (tmp_path / "train.tsv").write_text(rows + "x" * 5000 + "\t1\n" + "fine .\t1\n")
    (tmp_path / "dev.tsv").write_text(rows)
    settings = EvalSettings(train=str(tmp_path / "train.tsv"), dev=str(tmp_path / "dev.tsv"))
    with pytest.raises(DataError, match=r"train\.tsv:8: a line over 1,000 bytes"):
        read_task(settings)
    data = read_task(EvalSettings(**(asdict(settings) | {"on_error": "skip"})))
    assert data.train.skips.counts == {"long_line": 1} and data.train.examples[-1].text == "fine ."


def test_more_labels_than_the_bound_is_one_line(tmp_path):
    """A million distinct labels were accepted (4.5 GB, still in epoch 1 after 5 minutes)."""
    rows = "sentence\tlabel\n" + "".join(f"s\tlabel{i}\n" for i in range(MAX_LABELS + 1))
    (tmp_path / "train.tsv").write_text(rows)
    with pytest.raises(DataError, match=r"train\.tsv: more than 10,000 distinct labels \(a column of free "):
        read_task(EvalSettings(train=str(tmp_path / "train.tsv"), dev=str(tmp_path / "train.tsv")))


@pytest.mark.parametrize("name", ["x.conllu", "x.iob2"])
def test_a_sentence_over_the_word_bound_is_a_fault(tmp_path, name):
    """A CoNLL-U sentence of 10^6 words took 2.4 GB: beyond MAX_WORDS it is a fault, or a counted skip."""
    if name.endswith(".conllu"):
        def line(i):
            return f"{i}\tw\tw\t{'NOUN' if i % 2 else 'VERB'}\t_\t_\t0\tdep\t_\t_"
    else:
        def line(i):
            return f"w\t{'B-X' if i % 2 else 'O'}"
    long = "\n".join(line(i) for i in range(1, MAX_WORDS + 2))
    short = "\n".join(line(i) for i in range(1, 4))
    (tmp_path / f"train.{name}").write_text(f"{short}\n\n{long}\n\n{short}\n")
    settings = EvalSettings(train=str(tmp_path / f"train.{name}"), dev=str(tmp_path / f"train.{name}"))
    says = rf"train\.{name}:{MAX_WORDS + 5}: a sentence of more than 1,000 words"
    with pytest.raises(DataError, match=says):
        read_task(settings)
    data = read_task(EvalSettings(**(asdict(settings) | {"on_error": "skip"})))
    assert len(data.train.examples) == 2 and data.train.skips.counts == {"malformed_line": 1}


def test_texts_are_cut_before_tokenizing_and_no_length_warning_is_printed(toy, tmp_path):  # noqa: F811
    """Everything was tokenized before truncation (200 bytes of memory per input byte), and transformers
    printed "Token indices sequence length is longer than the specified maximum" six times per evaluation."""
    transformers = finetune.require_transformers()
    hf = _hf(toy, tmp_path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf))
    seen = []
    call = type(tokenizer).__call__

    def spy(self, text, pair=None, **kwargs):
        seen.extend(len(t) for t in [*text, *(pair or [])])
        return call(self, text, pair, **kwargs)

    rows = [Row("the dog " * 100_000, "a cat " * 10, "1", 1), Row("we run", "they walk", "0", 2)]
    said: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = said.append
    root = transformers.utils.logging.get_logger()  # the library's own root logger (it does not propagate)
    root.addHandler(handler)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(type(tokenizer), "__call__", spy)
            encoded = encode_rows(tokenizer, rows, [1, 0], max_length=32)
    finally:
        root.removeHandler(handler)
    assert max(seen) <= CHARS_PER_PIECE * 32 and encoded.truncated == 1
    assert len(encoded.features[0]["input_ids"]) == 32
    assert not [r for r in said if "Token indices sequence length" in r.getMessage()]


@pytest.mark.slow  # ~6 s: four real fine-tuning runs
def test_a_model_of_64_positions_evaluates_sentences_longer_than_that(toy, tmp_path, capsys):  # noqa: F811
    """A model trained at 64 tokens with the default --max-length 128 crashed on any sentence over 64 pieces
    (`The size of tensor a (128) must match ... (64)`): max_length is capped at the model's positions, and
    the page says so."""
    long = " ".join(["the", "red", "dog", "sees", "a", "cat"] * 20)
    rows = "sentence\tlabel\n" + "".join(f"{long if i % 3 == 0 else 'we run .'}\t{i % 2}\n"
                                         for i in range(24))
    (tmp_path / "train.tsv").write_text(rows)
    (tmp_path / "long.conllu").write_text(conllu([[(w, "NOUN" if w in ("dog", "cat") else "X")
                                                   for w in long.split()]] * 6))
    for train in ("train.tsv", "long.conllu"):
        argv = [str(toy["run"]), "--train", str(tmp_path / train), "--dev", str(tmp_path / train),
                "--vocab", str(toy["vocab"]), "--seeds", "1", "--epochs", "1", "--workers", "1",
                "--device", "cpu"]
        assert main(argv) == 0
        assert "note: max_length 128 capped at 64: the model has 64 positions" in capsys.readouterr().out


def test_a_checkpoint_trained_shorter_than_its_positions_is_capped_at_that_length(toy, tmp_path):  # noqa: F811
    """The CPU recipe's model has 128 positions and trained on rows of 64: its export ends at 64, so the
    evaluation must cap max_length at 64, not 128 (it crashed with `The size of tensor a (128) must match
    the size of tensor b (64)` on every run)."""
    from trainer.checkpoint import save

    config = replace(toy_config(toy["vocab"]), max_position=128)
    model = BertForPreTraining(config)
    optimizer = torch.optim.AdamW(model.parameters())
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    states = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "scheduler": schedule.state_dict(),
              "trainer": {"step": 1, "data": {"epoch": 0, "examples": 8}, "last_metrics": {},
                          "rng": [{"cpu": torch.get_rng_state(), "cuda": None}]}}
    saved = {"model": asdict(config), "shards": {"max_seq_length": 40},
             "train": {"data": {"shards": ""}, "checkpoint": {"init_from": ""}}}
    checkpoint = save(tmp_path / "run", 1, states, saved, keep=1)
    assert model_shape(checkpoint)["max_position"] == 40
    hf = export(checkpoint, tmp_path / "hf", toy["vocab"])
    assert json.loads((hf / "config.json").read_text())["max_position_embeddings"] == 40
