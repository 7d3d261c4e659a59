"""`python -m trainer.evaluate` on what a hostile user hands it: a Hugging Face directory whose config lies
about its sizes or whose weights are cut short, a run whose metrics.jsonl or config.json holds absurd
numbers, an output whose run records were edited between a kill and the resume. One line (or an unknown
cost with a note), never a traceback, a hang or a negative count."""

from __future__ import annotations

import json
import shutil

import pytest

from corpusprep.engine.records import MAX_INT
from tests.trainer.evaluate_helpers import write_run
from tests.trainer.test_evaluate_command import args, fake_runs, toy  # noqa: F401 - fixtures
from trainer.evaluate import __main__ as command
from trainer.evaluate.model import pretraining_cost
from trainer.export import export

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
                                                                    capsys):  # fmt: skip
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
                    "number > 0): examples, tokens and time unknown"}  # fmt: skip


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
])  # fmt: skip
def test_a_resumed_run_record_of_another_task_is_one_line(edit, says, toy, fake_runs, tmp_path,  # noqa: F811
                                                          capsys):  # fmt: skip
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
