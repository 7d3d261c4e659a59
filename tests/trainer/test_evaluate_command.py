"""`python -m trainer.evaluate`: the page it prints, its output directory (an artifact: a rerun does nothing,
a stopped one resumes), and one line for every bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep.engine.manifest import sha256_file
from corpusprep.engine.outputs import validate as validate_output
from corpusprep.errors import UsageError
from tests.interop.helpers import one_thread
from tests.trainer.evaluate_helpers import (
    fast_settings,
    stand_in_run,
    write_run,
    write_toy_task,
    write_toy_vocab,
)
from trainer.evaluate import compare, finetune
from trainer.evaluate.__main__ import main
from trainer.export import export

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("toy")
    train, dev = write_toy_task(root)
    vocab = write_toy_vocab(root / "vocab")
    return {"root": root, "train": train, "dev": dev, "vocab": vocab, "run": write_run(root / "run", vocab)}


class Calls(list):
    stop_at: int | None = None  # raise KeyboardInterrupt at this call (a Ctrl-C during that run)


@pytest.fixture
def fake_runs(monkeypatch) -> Calls:
    """finetune.run replaced by a stand-in: pretrained scores 0.9 + seed/1000, random 0.8 + seed/1000 (the
    cheap baseline's predictions)."""
    calls = Calls()

    def run(hf_dir, data, settings, init, seed):
        calls.append((init, seed))
        if calls.stop_at == len(calls):
            raise KeyboardInterrupt
        score = (0.9 if init == "pretrained" else 0.8) + (seed - settings.seed) / 1000
        return stand_in_run(data, settings, score)

    monkeypatch.setattr(finetune, "run", run)
    return calls


def args(toy, *more: str) -> list[str]:
    return [str(toy["run"].parent.parent), "--train", str(toy["train"]), "--dev", str(toy["dev"]),
            "--vocab", str(toy["vocab"]), "--workers", "1", *more]


def test_the_page_says_scores_gain_verdict_baseline_and_cost(toy, fake_runs, capsys):
    assert main(args(toy, "--seeds", "3")) == 0
    out = capsys.readouterr().out
    assert fake_runs == [("pretrained", 12345), ("random", 12345), ("pretrained", 12346), ("random", 12346),
                         ("pretrained", 12347), ("random", 12347)]
    assert "| pre-trained | 0.9000 | 0.9010 | 0.9020 | 0.9010 | 0.9010 | 0.0010 |" in out
    assert "| random init | 0.8000 | 0.8010 | 0.8020 | 0.8010 | 0.8010 | 0.0010 |" in out
    assert "| gain | +0.1000 | +0.1000 | +0.1000 | +0.1000 | +0.1000 | 0.0000 |" in out
    assert "dev: pre-training helps: +0.100 ± 0.000 accuracy over 3 seeds" in out
    assert "| most frequent tag per word |" in out
    assert "pre-training cost: 20 steps, 320 sequences, 12,800 tokens, 0.3 min of training" in out
    assert "step-0000020, step 20" in out


def test_a_hugging_face_directory_is_used_as_it_is(toy, fake_runs, tmp_path, capsys):
    hf = export(toy["run"], tmp_path / "hf", toy["vocab"])
    argv = args(toy)
    argv[0] = str(hf)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"model: {hf} (a Hugging Face directory)" in out
    assert "pre-training cost: a Hugging Face directory records none; evaluate the run dir to see it" in out
    config = json.loads((hf / "config.json").read_text())
    (hf / "config.json").write_text(json.dumps(config | {"model_type": "roberta"}))
    assert main(argv) == 2
    assert "model_type is 'roberta'; corpusprep reads only 'bert' BERT" in capsys.readouterr().err


def test_skipped_input_and_replaced_bytes_are_on_the_page(toy, fake_runs, tmp_path, capsys):
    broken = toy["train"].read_bytes().replace(b"\t_\t_\n", b"\t_\n", 1).replace(b"the", b"th\xff", 1)
    (tmp_path / "train.conllu").write_bytes(broken)
    argv = args(toy, "--on-error", "skip")
    argv[argv.index("--train") + 1] = str(tmp_path / "train.conllu")
    assert main(argv) == 0
    out = capsys.readouterr().out
    where = tmp_path / "train.conllu"
    assert f"skipped in train (--on-error skip): 1 malformed_line; e.g. {where}:3: 9 " in out
    assert "train: 1 invalid UTF-8 sequence(s) replaced by U+FFFD" in out


def test_an_output_directory_is_done_once_and_resumes_after_a_stop(toy, fake_runs, tmp_path):
    out = tmp_path / "eval"
    settings = fast_settings(toy["train"], toy["dev"], toy["vocab"])
    fake_runs.stop_at = 3  # Ctrl-C during the third run
    with pytest.raises(KeyboardInterrupt):
        compare.evaluate(toy["run"], settings, out, workers=1)
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["pretrained-seed12345.json",
                                                                "random-seed12345.json"]
    fake_runs.clear()
    fake_runs.stop_at = None
    result = compare.evaluate(toy["run"], settings, out, workers=1)
    assert fake_runs == [("pretrained", 12346), ("random", 12346)]  # the finished runs are not run again
    assert result["splits"]["dev"]["pretrained"]["scores"] == pytest.approx([0.9, 0.901])
    assert (out / "evaluation.md").read_text().startswith("model: ")
    fake_runs.clear()
    assert compare.evaluate(toy["run"], settings, out, workers=1) == result and fake_runs == []
    changed = fast_settings(toy["train"], toy["dev"], toy["vocab"], epochs=3.0)
    with pytest.raises(UsageError, match=r"settings\.epochs: 2\.0 -> 3\.0.*--overwrite"):
        compare.evaluate(toy["run"], changed, out, workers=1)
    toy_dev = toy["dev"].read_text()
    try:  # an edited dev file is other data: refused too
        toy["dev"].write_text(toy_dev + "\n")
        with pytest.raises(UsageError, match=r"dev\.conllu: modified"):
            compare.evaluate(toy["run"], settings, out, workers=1)
    finally:
        toy["dev"].write_text(toy_dev)
    compare.evaluate(toy["run"], changed, out, overwrite=True, workers=1)
    assert len(fake_runs) == 4


def test_damaged_evaluation_records_are_one_line_naming_the_field(toy, fake_runs, tmp_path, capsys):
    """A run's marker and a finished evaluation.json are read back through their schemas (records kinds
    "evaluate_run" and "evaluation"), never indexed as they are."""
    out = tmp_path / "eval"
    argv = [*args(toy, "--seeds", "2"), "-o", str(out)]
    fake_runs.stop_at = 3
    assert main(argv) == 130  # a Ctrl-C during the third run
    marker = out / ".work" / "markers" / "pretrained-seed12345.done.json"
    record = json.loads(marker.read_text())
    record["stats"]["scores"]["dev"]["accuracy"] = "high"
    marker.write_text(json.dumps(record))
    fake_runs.stop_at = None
    capsys.readouterr()
    assert main(argv) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(marker) in errors[0] and 'scores["dev"].accuracy: a string' in errors[0]
    marker.unlink()
    assert main(argv) == 0
    assert validate_output(out) == ("evaluation directory", [], "2 seeds, dev gain +0.1000 (helps)")
    result = out / "evaluation.json"
    damaged = json.loads(result.read_text()) | {"splits": {}}
    result.write_text(json.dumps(damaged))
    manifest = json.loads((out / "artifact.json").read_text())  # its checksum rewritten to match
    manifest["files"]["evaluation.json"] = {"size": result.stat().st_size, "sha256": sha256_file(result)}
    (out / "artifact.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(argv) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {result}: splits: no dev split"]
    assert validate_output(out)[1] == ["evaluation.json: splits: no dev split"]


@pytest.mark.slow  # ~18 CPU-s: 4 real fine-tuning runs, a pool whose workers import transformers
def test_the_scores_do_not_depend_on_how_many_runs_go_at_once(toy, tmp_path):
    """Real fine-tuning, in this process and in two pool workers: the same numbers (one thread a run)."""
    settings = fast_settings(toy["train"], toy["dev"], toy["vocab"], seeds=1, epochs=1.0)
    alone = compare.evaluate(toy["run"], settings, tmp_path / "alone", workers=1)
    pooled = compare.evaluate(toy["run"], settings, tmp_path / "pooled", workers=2)
    assert pooled["runs_at_once"] == 2 and alone["splits"] == pooled["splits"]
    assert [r["scores"] for r in alone["runs"]] == [r["scores"] for r in pooled["runs"]]


@pytest.mark.parametrize(
    ("case", "code", "message"),
    [
        ("no model", 2, "nope: no such file or directory"),
        ("not a checkpoint", 2, "(not a trainer checkpoint directory)"),
        ("bad data", 1, "train.conllu:3: 9 tab-separated fields, CoNLL-U has 10"),
        ("bad setting", 2, "seeds=0: must be > 0"),
        ("no transformers", 2, "needs transformers and accelerate (transformers is missing): "
                               "pip install -e '.[eval]'"),
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(toy, tmp_path, monkeypatch, capsys, case, code, message):
    argv = args(toy)
    if case == "no model":
        argv[0] = str(tmp_path / "nope")
    if case == "not a checkpoint":
        argv[0] = str(tmp_path)
    if case == "bad data":
        bad = tmp_path / "train.conllu"
        bad.write_text(toy["train"].read_text().replace("\t_\t_\n", "\t_\n", 1))
        argv[argv.index("--train") + 1] = str(bad)
    if case == "bad setting":
        argv += ["--seeds", "0"]
    if case == "no transformers":
        monkeypatch.setitem(sys.modules, "transformers", None)
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err


@pytest.mark.slow  # ~12 CPU-s: two processes importing torch and transformers, two real runs
def test_the_command_as_a_user_runs_it(toy, tmp_path):
    """The real entry point, really fine-tuning: one seed, one epoch (a few seconds)."""
    quick = args(toy, "--seeds", "1", "--epochs", "1", "--max-length", "32", "--device", "cpu")
    run = subprocess.run([sys.executable, "-m", "trainer.evaluate", *quick], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "dev: one seed: gain" in run.stdout and "| random init |" in run.stdout
    assert "pretrained seed 12345: dev 0." in run.stderr and "Traceback" not in run.stderr
    bad = subprocess.run([sys.executable, "-m", "trainer.evaluate", *args(toy)[1:], str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a trainer checkpoint" in bad.stderr


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield
