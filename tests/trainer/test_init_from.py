"""checkpoint.init_from: start a run from saved weights (a previous run, or a Hugging Face BERT imported with
`python -m trainer.import_hf`), with a fresh optimizer and schedule, and refuse what would not fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from corpusprep.errors import UsageError
from trainer import checkpoint
from trainer.config import load_config
from trainer.import_hf import import_hf
from trainer.run import main as run_main
from trainer.train import train


def run_config(shards: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        f'data.shards="{shards}"',
        f'logging.run_dir="{run_dir}"',
        "data.batch_size=8",
        "data.chunk_rows=64",
        "schedule.steps=4",
        "schedule.warmup_steps=0",
        "optim.lr=1e-3",
        "checkpoint.every=2",
        "eval.every=0",
        "eval.max_batches=1",
        'device="cpu"',
        *extra,
    ]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return checkpoint.load(checkpoint.latest(path) if (path / "checkpoints").is_dir() else path, "model")


def assert_equal_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


@pytest.fixture(scope="module")
def previous_run(tiny_shards, tmp_path_factory) -> Path:
    """A finished 4-step run of the tiny preset: the "phase 1" to start from."""
    run_dir = tmp_path_factory.mktemp("phase1")
    train(load_config(None, run_config(tiny_shards, run_dir, 'model.preset="tiny"')))
    return run_dir


@pytest.fixture(scope="module")
def hf_dir(tiny_shards, tmp_path_factory) -> Path:
    """A small `transformers` BertForPreTraining saved with save_pretrained, over the shards' vocab."""
    transformers = pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("hf")
    vocab = tiny_shards.parent / "vocab" / "vocab.txt"
    size = len(vocab.read_text(encoding="utf-8").splitlines())
    config = transformers.BertConfig(
        vocab_size=size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    transformers.BertForPreTraining(config).save_pretrained(out)
    shutil.copy(vocab, out / "vocab.txt")
    return out


def test_init_from_an_imported_hugging_face_model(tiny_shards, hf_dir, tmp_path):
    imported = tmp_path / "init"
    import_hf(hf_dir, imported)
    # lr 0: the one step changes nothing, so the checkpoint holds exactly the weights training started from
    args = run_config(tiny_shards, tmp_path / "run", f'checkpoint.init_from="{imported}"', "optim.lr=0.0")
    summary = train(load_config(None, [*args, "schedule.steps=1", "checkpoint.every=1"]))
    assert summary["steps"] == 1
    assert_equal_weights(weights(tmp_path / "run"), weights(imported))
    saved = checkpoint.read_config(checkpoint.latest(tmp_path / "run"))
    assert (saved["model"]["hidden_size"], saved["model"]["num_layers"]) == (32, 1)  # not the tiny preset
    manifest_vocab = json.loads((tiny_shards / "manifest.json").read_text())["vocab"]
    assert saved["vocab"]["sha256"] == manifest_vocab["sha256"]  # recorded, for the next phase's check
    # a fresh optimizer: one step of state, not the source's
    optimizer = checkpoint.load(checkpoint.latest(tmp_path / "run"), "optimizer")
    assert {int(s["step"]) for s in optimizer["state"].values()} == {1}


@pytest.mark.slow  # ~1.9 s idle: trains twice
def test_init_from_a_previous_run_then_resume(tiny_shards, previous_run, tmp_path):
    source = weights(previous_run)
    start = tmp_path / "start"
    # the run directory (its newest checkpoint) and the step directory are the same source
    for i, path in enumerate([previous_run, checkpoint.latest(previous_run)]):
        args = run_config(tiny_shards, start / str(i), f'checkpoint.init_from="{path}"', "optim.lr=0.0")
        train(load_config(None, [*args, "schedule.steps=1", "checkpoint.every=1"]))
        assert_equal_weights(weights(start / str(i)), source)
        state = checkpoint.load(checkpoint.latest(start / str(i)), "trainer")
        # step 0 of a new run, data from the start
        assert state["step"] == 1 and state["data"] == {"epoch": 0, "examples": 8}

    # a phase-2 run that is interrupted resumes from its own checkpoint, not from the init weights again
    args = run_config(tiny_shards, tmp_path / "whole", f'checkpoint.init_from="{previous_run}"')
    whole = train(load_config(None, args))
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "whole", cut)
    shutil.rmtree(cut / "checkpoints" / "step-0000004")
    args = run_config(tiny_shards, cut, f'checkpoint.init_from="{previous_run}"', "checkpoint.resume=true")
    resumed = train(load_config(None, args))
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    assert not any(torch.equal(weights(cut)[k], v) for k, v in source.items() if v.ndim == 2)  # it trained


def test_the_architecture_comes_from_the_source(tiny_shards, previous_run, tmp_path):
    init = f'checkpoint.init_from="{previous_run}"'
    # repeating the source's architecture is fine; dropout is a training setting and may change
    same = ['model.preset="tiny"', "model.hidden_size=128", "model.dropout=0.0", "schedule.steps=1"]
    train(load_config(None, run_config(tiny_shards, tmp_path / "same", init, *same)))
    assert checkpoint.read_config(checkpoint.latest(tmp_path / "same"))["model"]["dropout"] == 0.0
    for bad, message in [
        ('model.preset="mini"', r"model\.num_layers=4 \(saved: 2\)"),
        ("model.max_position=128", r"model\.max_position=128 \(saved: 512\)"),
        ("model.pre_ln=true", r"model\.pre_ln=True \(saved: False\)"),
    ]:
        with pytest.raises(UsageError, match=message):
            train(load_config(None, run_config(tiny_shards, tmp_path / "bad", init, bad)))
    assert not (tmp_path / "bad" / "checkpoints").exists()


def test_a_source_with_another_vocab_is_refused(tiny_shards, hf_dir, tmp_path):
    tokens = (hf_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    for name, changed in [("size", [*tokens, "qqextra"]), ("sha256", [*tokens[:-1], "qqrenamed"])]:
        other = tmp_path / f"hf-{name}"
        shutil.copytree(hf_dir, other)
        (other / "vocab.txt").write_text("".join(t + "\n" for t in changed), encoding="utf-8")
        if name == "size":  # a model whose embedding table matches its (larger) vocab
            config = json.loads((other / "config.json").read_text())
            config["vocab_size"] = len(changed)
            (other / "config.json").write_text(json.dumps(config))
            transformers = pytest.importorskip("transformers")
            model = transformers.BertForPreTraining(transformers.BertConfig(**config))
            model.save_pretrained(other)
        import_hf(other, tmp_path / f"init-{name}")
        args = run_config(tiny_shards, tmp_path / name, f'checkpoint.init_from="{tmp_path / f"init-{name}"}"')
        with pytest.raises(UsageError, match="tokens" if name == "size" else "vocab sha256"):
            train(load_config(None, args))


def test_cli_flag_and_errors(tiny_shards, tmp_path, capsys):
    args = ["--shards", str(tiny_shards), "--run-dir", str(tmp_path / "r"), "--device", "cpu"]
    assert run_main([*args, "--init-from", str(tmp_path / "nowhere")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "nowhere" in error and "weights.safetensors" in error
    assert run_main(["--init-from", "runs/x", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint"]["init_from"] == "runs/x"


def test_init_from_the_runs_own_run_dir_is_refused_up_front(tiny_shards, previous_run, tmp_path, capsys,
                                                            monkeypatch):
    """issue 39: init_from the run's own run dir, or a checkpoint in it, said another way (relative), is one
    line and exit 2 before anything is written: the run writes and removes checkpoints where its weights
    come from. The check a pipeline makes when it plans (trainer.resume.check_init_from)."""
    run = tmp_path / "run"
    shutil.copytree(previous_run, run)
    files = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    args = ["--shards", str(tiny_shards), "--run-dir", str(run), "--device", "cpu", "--steps", "8"]
    for source in ("run", f"run/checkpoints/{checkpoint.latest(run).name}"):
        for more in ([], ["--resume"]):
            assert run_main([*args, "--init-from", source, *more]) == 2
            error = capsys.readouterr().err.strip()
            assert "\n" not in error and f"checkpoint.init_from {source}: this run's own run dir" in error
            assert "pass --resume with more --steps" in error
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == files
    fresh = ["--shards", str(tiny_shards), "--run-dir", "new", "--init-from", "new/checkpoints/step-0000004"]
    assert run_main(fresh) == 2 and "this run's own run dir" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
