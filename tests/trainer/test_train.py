from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from corpusprep.engine import faults
from corpusprep.errors import DataError, UsageError
from tests.trainer.conftest import build_shards
from tests.trainer.test_data import row_keys
from trainer import checkpoint
from trainer.config import load_config
from trainer.resume import resume_conflicts
from trainer.train import train

REPO = Path(__file__).resolve().parents[2]


def small_run(shards: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        f'data.shards="{shards}"',
        f'logging.run_dir="{run_dir}"',
        "data.batch_size=8",
        "data.chunk_rows=64",
        "schedule.steps=12",
        "schedule.warmup_steps=3",
        "optim.lr=1e-3",
        "checkpoint.every=4",
        "eval.every=6",
        "eval.max_batches=2",
        "logging.every=1",
        'device="cpu"',
        *extra,
    ]


def train_losses(run_dir: Path) -> list[tuple[int, float, float]]:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"], r["lr"]) for r in lines if "loss" in r]


@pytest.mark.slow  # ~3.3 s idle (all cases): trains twice
@pytest.mark.parametrize(
    "extra",
    [
        [],
        ['optim.name="lamb"', "schedule.grad_accum=2", "data.dynamic_masking=true", "model.pre_ln=true"],
        ["schedule.grad_accum=4", "schedule.batch_ramp_fraction=0.9", "data.batch_size=4"],
    ],
    ids=["adamw", "lamb-accum-dynamic-preln", "batch-ramp"],
)
def test_resumed_run_equals_uninterrupted_run(tiny_shards, tmp_path, extra):
    """Dropout on, so the RNG state must come back too; data position, optimizer, schedule likewise; with a
    batch ramp, resumed in the middle of it (step 8 of 12, the ramp over the first 90%)."""
    whole = train(load_config(None, small_run(tiny_shards, tmp_path / "whole", *extra)))
    assert whole["steps"] == 12

    # the same run "killed" after its step-8 checkpoint: drop what came after, then --resume
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "whole", cut)
    shutil.rmtree(cut / "checkpoints" / "step-0000012")
    resumed = train(load_config(None, small_run(tiny_shards, cut, *extra, "checkpoint.resume=true")))

    assert train_losses(cut) == train_losses(tmp_path / "whole")  # every step, exactly
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    final = checkpoint.load(checkpoint.latest(cut), "model")
    for name, tensor in checkpoint.load(checkpoint.latest(tmp_path / "whole"), "model").items():
        assert torch.equal(final[name], tensor), name


def test_checkpoints_are_kept_complete_and_rotated(tiny_shards, tmp_path):
    summary = train(load_config(None, small_run(tiny_shards, tmp_path, "checkpoint.keep=2")))
    found = checkpoint.list_checkpoints(tmp_path)
    assert [step for step, _ in found] == [8, 12]
    names = {p.name for p in found[-1][1].iterdir()}
    assert names == {"weights.safetensors", "trainer.safetensors", "trainer.json", "config.json"}
    state = checkpoint.load(found[-1][1], "model")
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in state)
    saved = checkpoint.read_config(found[-1][1])
    assert saved["train"]["schedule"]["steps"] == 12 and saved["model"]["hidden_size"] == 128
    assert {"val_mlm_loss", "val_mlm_acc", "val_nsp_loss", "val_nsp_acc"} <= set(summary)

    # rerunning a finished run does nothing; an unfinished one needs --resume
    assert train(load_config(None, small_run(tiny_shards, tmp_path)))["status"] == "done"
    with pytest.raises(UsageError, match="pass --resume"):
        train(load_config(None, small_run(tiny_shards, tmp_path, "schedule.steps=20")))


def test_config_from_toml_pipeline_table_and_overrides(tmp_path):
    toml = tmp_path / "train.toml"
    toml.write_text('seed = 4\n[model]\npreset = "mini"\nhidden_size = 64\n[optim]\nlr = 5e-4\n')
    c = load_config(toml, ["optim.lr=2e-4", 'model.preset="small"', "data.dynamic_masking=true"])
    assert (c.seed, c.model.preset, c.model.hidden_size, c.optim.lr, c.data.dynamic_masking) == (
        4,
        "small",
        64,
        2e-4,
        True,
    )
    assert c.model.bert_config(100).num_layers == 4
    pipeline_table = {"schedule": {"steps": 7, "warmup_steps": 2}}  # what a pipeline file passes
    assert load_config(pipeline_table, []).schedule.steps == 7
    (tmp_path / "pipe.toml").write_text("[train]\nseed = 9\n")
    assert load_config(tmp_path / "pipe.toml", []).seed == 9
    for bad, message in [
        (["optim.lrr=1"], "unknown config key 'lrr'"),
        (["optim.lr=fast"], "expected float"),
        (["schedule.steps=1.5"], "expected an integer"),
        (['model.preset="huge"'], "unknown model preset"),
        (["nokey"], "expected section.key=value"),
    ]:
        with pytest.raises(UsageError, match=message):
            load_config(None, bad)


def run_cli(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trainer.run", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.slow  # ~6.2 s idle
def test_cli_prints_config_and_reports_errors_in_one_line(tmp_path):
    done = run_cli("--print-config", "--preset", "mini", "--lr", "3e-4", "--run-dir", "123")
    config = json.loads(done.stdout)
    assert (config["model"]["preset"], config["optim"]["lr"], config["logging"]["run_dir"]) == (
        "mini",
        3e-4,
        "123",
    )
    bad = run_cli("--shards", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "r"))
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "manifest" in bad.stderr


@pytest.mark.slow  # a subprocess importing torch (~2.6 s idle)
def test_training_import_path_needs_only_torch_numpy_pyarrow():
    code = (
        "import sys, trainer.run, trainer.train, trainer.data, trainer.checkpoint;"
        "heavy = ('polars', 'typer', 'rich', 'matplotlib', 'tokenizers', 'transformers');"
        "bad = [m for m in heavy if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def torchrun(*args: str, env: dict | None = None, ranks: int = 2) -> subprocess.CompletedProcess:
    """Two CPU ranks (or `ranks`) under torchrun. --standalone binds its rendezvous store to a free port
    itself (no port picked here and raced for); the timeouts leave room for a machine shared with others."""
    worker = REPO / "tests" / "trainer" / "ddp_worker.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks),
               "--rdzv-conf", "join_timeout=300", str(worker), *args]
    env = os.environ | {"OMP_NUM_THREADS": "1"} | (env or {})
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)


def assert_clean_exit(done: subprocess.CompletedProcess) -> None:
    """Exit code 0 of torchrun itself (every rank exited 0), and no rank aborted at shutdown."""
    assert done.returncode == 0, done.stderr[-3000:]
    for sign in ("terminate called", "ChildFailedError", "Traceback"):
        assert sign not in done.stderr, done.stderr[-3000:]


@pytest.mark.slow  # ~10 s: one torchrun rank
def test_one_torchrun_rank_trains_through_ddp_as_n_would(tiny_shards, tmp_path):
    """Under torchrun even a single process joins a process group and wraps the model in DDP (the code path
    of N ranks; on a GPU, NCCL's), and ends with the weights of a plain run, which has no DDP."""
    args = small_run(tiny_shards, tmp_path / "one", "schedule.steps=4", "checkpoint.every=4", "eval.every=4")
    done = torchrun(*args, ranks=1)
    assert_clean_exit(done)
    assert "1 rank(s) on cpu (DDP over gloo)" in done.stdout
    plain = train(load_config(None, small_run(tiny_shards, tmp_path / "plain", "schedule.steps=4")))
    one = json.loads((tmp_path / "one" / "summary-rank0.json").read_text())
    assert one["steps"] == plain["steps"] == 4
    assert one["weights_sha256"] == plain["weights_sha256"]  # DDP over one rank averages over one: no change
    state = checkpoint.load(checkpoint.latest(tmp_path / "one"), "trainer")
    assert state["data"] == {"epoch": 0, "examples": 4 * 8}


@pytest.mark.slow
def test_torchrun_two_cpu_ranks_agree_on_weights(tiny_shards, tmp_path):
    """Two ranks end with the same weights, with a batch ramp (1, 2, 2, 2 micro-batches a step: every rank
    takes as many, or DDP's gradient sync would wait forever), finished, rerun and killed and resumed."""
    run_dir = tmp_path / "ddp"
    ramp = ("schedule.grad_accum=2", "schedule.batch_ramp_fraction=1.0", "schedule.batch_ramp_start=0.5")
    args = small_run(tiny_shards, run_dir, "schedule.steps=4", "checkpoint.every=2", "eval.every=4", *ramp)
    assert_clean_exit(torchrun(*args))
    summaries = [json.loads((run_dir / f"summary-rank{r}.json").read_text()) for r in range(2)]
    assert summaries[0]["weights_sha256"] == summaries[1]["weights_sha256"]
    assert summaries[0]["steps"] == 4
    state = checkpoint.load(checkpoint.latest(run_dir), "trainer")
    assert state["data"] == {"epoch": 0, "examples": 7 * 8 * 2}  # one place in the global order
    # a rerun of the finished run returns at once on every rank; the process group still ends cleanly
    again = torchrun(*args)
    assert_clean_exit(again)
    assert "nothing to do" in again.stdout
    assert json.loads((run_dir / "summary-rank1.json").read_text())["status"] == "done"
    # killed (rank 0, in the middle of writing checkpoint 4), then resumed under torchrun: the same weights
    killed = tmp_path / "killed"
    resumed_args = small_run(tiny_shards, killed, "schedule.steps=4", "checkpoint.every=2", "eval.every=4",
                             *ramp)
    died = torchrun(*resumed_args, env=faults.spec("checkpoint_file", 5))
    assert died.returncode != 0 and checkpoint.latest(killed).name.endswith("2")
    assert_clean_exit(torchrun(*resumed_args, "checkpoint.resume=true"))
    resumed = [json.loads((killed / f"summary-rank{r}.json").read_text()) for r in range(2)]
    assert resumed[0]["weights_sha256"] == resumed[1]["weights_sha256"] == summaries[0]["weights_sha256"]
    # and the weights moved away from their initialisation: a single-process run from the same seed
    single = train(load_config(None, small_run(tiny_shards, tmp_path / "one", "schedule.steps=4")))
    assert single["weights_sha256"] != summaries[0]["weights_sha256"]  # twice the data per step


@pytest.mark.slow  # ~10-18 s (2 cores under load): torchrun of 2 CPU ranks, then one process
def test_a_two_rank_run_resumes_in_one_process(tiny_shards, tmp_path, capsys):
    """Elastic resume: 4 steps of 2 ranks x 4 examples under torchrun, resumed by one process with batches
    of 8 (the same global batch), where a changed rank count used to be refused: it goes on at example 32
    of the global order, its first batch is examples 32..39, and the checkpoint says 32 + 4 x 8."""
    from trainer.config import DataConfig
    from trainer.data import Position, ShardStream
    from trainer.dist import Dist
    from trainer.shards import open_shards
    from trainer.train import Trainer

    run = tmp_path / "run"
    args = small_run(tiny_shards, run, "data.batch_size=4", "schedule.steps=4", "checkpoint.every=2",
                     "eval.every=4")
    assert_clean_exit(torchrun(*args))
    assert checkpoint.load(checkpoint.latest(run), "trainer")["data"] == {"epoch": 0, "examples": 32}
    config = load_config(None, small_run(tiny_shards, run, "schedule.steps=8", "checkpoint.resume=true"))
    trainer = Trainer(config, Dist(), torch.device("cpu"))
    assert "saved by 2 rank(s), resumed on 1: data go on at epoch 0, example 32" in capsys.readouterr().out
    trainer.train_step()
    shards = open_shards(tiny_shards)
    order = ShardStream(shards, "train", DataConfig(batch_size=8, chunk_rows=64), config.seed,
                        start=Position(0, 32))
    assert row_keys(trainer.last_batch) == row_keys(next(iter(order)))
    del trainer
    assert train(config)["steps"] == 8
    assert checkpoint.load(checkpoint.latest(run), "trainer")["data"] == {"epoch": 0, "examples": 64}


@pytest.mark.slow  # ~6.5 s idle
def test_warmup_follows_steps_unless_given(tiny_shards, tmp_path):
    assert load_config(None, []).schedule.warmup == 100  # 10% of the default 1,000 steps
    assert load_config(None, ["schedule.steps=10"]).schedule.warmup == 1
    assert load_config(None, ["schedule.steps=10", "schedule.warmup_steps=0"]).schedule.warmup == 0
    with pytest.raises(UsageError, match=r"warmup_steps=20 must be in \[0, steps=10\]"):
        load_config(None, ["schedule.steps=10", "schedule.warmup_steps=20"])
    # what a newcomer types first: only --steps
    run_dir = tmp_path / "run"
    flags = ["--device", "cpu", "--batch-size", "8", "--log-every", "1"]
    done = run_cli("--shards", str(tiny_shards), "--run-dir", str(run_dir), "--steps", "10", *flags)
    assert done.returncode == 0, done.stderr
    lrs = [lr for _, _, lr in train_losses(run_dir)]
    assert len(lrs) == 10 and lrs[0] == pytest.approx(1e-3) and lrs[-1] < lrs[1]  # tiny's 1e-3, then decay


@pytest.mark.slow  # ~5.9 s idle
def test_a_run_that_fails_at_start_leaves_no_run_directory(tiny_shards, tmp_path):
    missing = run_cli("--shards", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "a"))
    assert missing.returncode == 2 and not (tmp_path / "a").exists()
    # shards of up to 64 tokens, a model with 32 positions: refused before the model is built
    short = run_cli("--shards", str(tiny_shards), "--run-dir", str(tmp_path / "b"), "--device", "cpu",
                    "--set", "model.max_position=32")
    assert short.returncode == 2 and not (tmp_path / "b").exists()
    assert short.stderr.count("\n") == 1 and "Traceback" not in short.stderr
    assert "up to 64 tokens" in short.stderr and "max_position 32" in short.stderr


@pytest.mark.slow  # ~5.7 s idle
def test_resume_refuses_shards_of_another_vocab_naming_it(tmp_path):
    """Shards rebuilt in the same place from other text, with a vocab of the same size but other tokens:
    the run would go on silently on ids that mean other words. The checkpoint records the shards' vocab
    sha256, objective, length and training content; a resume names what differs."""
    shards = tmp_path / "shards"
    built = [build_shards(tmp_path / n, max_mb=mb, vocab_size=500) for n, mb in (("a", 0.2), ("b", 0.3))]
    shutil.copytree(built[0], shards)
    run = tmp_path / "run"
    train(load_config(None, small_run(shards, run, "schedule.steps=4")))
    shutil.rmtree(shards)
    shutil.copytree(built[1], shards)
    with pytest.raises(UsageError, match=r"trained on other shards \(vocab_sha256 \w+ -> \w+; train_shards"):
        train(load_config(None, small_run(shards, run, "checkpoint.resume=true")))


@pytest.mark.slow  # ~3 s idle: trains twice
def test_resume_with_other_workers_is_the_uninterrupted_run(tiny_shards, tmp_path):
    """(d) A run killed after step 4 and resumed with 2 DataLoader workers, where it had none: no refusal,
    and every loss and the final weights are the uninterrupted run's (the global order does not depend on
    the workers; dropout's RNG comes back as the ranks are the same)."""
    whole = train(load_config(None, small_run(tiny_shards, tmp_path / "whole")))
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "whole", cut)
    for step in ("step-0000008", "step-0000012"):
        shutil.rmtree(cut / "checkpoints" / step)
    assert checkpoint.load(checkpoint.latest(cut), "trainer")["data"] == {"epoch": 0, "examples": 32}
    resumed = train(load_config(None, small_run(tiny_shards, cut, "data.num_workers=2",
                                                 "checkpoint.resume=true")))
    assert resumed["steps"] == 12 and resumed["weights_sha256"] == whole["weights_sha256"]
    assert train_losses(cut) == train_losses(tmp_path / "whole")


@pytest.mark.slow  # ~2 s idle
def test_resume_with_another_batch_size_continues_at_the_next_example(tiny_shards, tmp_path):
    """(d) 4 steps of 8 examples, then resumed with batches of 12 and 2 DataLoader workers: the position
    counts examples, so the resumed run's first batch is examples 32..43 of the global order, and its
    checkpoint says 32 + 8 x 12 (not a step count)."""
    from trainer.config import DataConfig
    from trainer.data import Position, ShardStream
    from trainer.dist import Dist
    from trainer.shards import open_shards
    from trainer.train import Trainer

    run = tmp_path / "run"
    train(load_config(None, small_run(tiny_shards, run, "schedule.steps=4")))
    config = load_config(None, small_run(tiny_shards, run, "data.batch_size=12", "data.num_workers=2",
                                         "checkpoint.resume=true"))
    trainer = Trainer(config, Dist(), torch.device("cpu"))
    trainer.train_step()
    shards = open_shards(tiny_shards)
    order = ShardStream(shards, "train", DataConfig(batch_size=12, chunk_rows=64), config.seed,
                        start=Position(0, 32))
    assert row_keys(trainer.last_batch) == row_keys(next(iter(order)))
    assert trainer.position == Position(0, 44)
    del trainer
    train(load_config(None, small_run(tiny_shards, run, "data.batch_size=12", "checkpoint.resume=true")))
    state = checkpoint.load(checkpoint.latest(run), "trainer")
    assert state["step"] == 12 and state["data"] == {"epoch": 0, "examples": 32 + 8 * 12}


def as_earlier_trainer(run: Path, step: str, positions: list[dict]) -> None:
    """Rewrite checkpoint `step` of `run` as the trainer before the global order wrote it: a position per
    rank, in rows per DataLoader worker role (config.json's record of trainer.json updated to match)."""
    where = run / "checkpoints" / step
    state = json.loads((where / "trainer.json").read_text())
    del state["data"]
    (where / "trainer.json").write_text(json.dumps(state | {"positions": positions}))
    record = json.loads((where / "config.json").read_text())
    data = (where / "trainer.json").read_bytes()
    record["files"]["trainer.json"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (where / "config.json").write_text(json.dumps(record))


@pytest.mark.slow  # ~3 s idle: trains twice
def test_an_earlier_trainers_position_converts_exactly_or_is_one_line(tiny_shards, tmp_path):
    """A checkpoint of the trainer before the global order: one stream's position (one rank, no worker)
    was a place in the order this trainer reads, and converts exactly: resumed, the run is the
    uninterrupted one. Several streams read other orders: one line says why it cannot resume, as does a
    position no run reaches."""
    whole = train(load_config(None, small_run(tiny_shards, tmp_path / "whole")))
    runs = {}
    earlier = {"one": [{"batches": 4, "rows": [32]}], "roles": [{"batches": 4, "rows": [16, 16]}],
               "ranks": [{"batches": 4, "rows": [32]}] * 2,
               "far": [{"batches": 4, "rows": [10**17]}]}
    for name, positions in earlier.items():
        runs[name] = tmp_path / name
        shutil.copytree(tmp_path / "whole", runs[name])
        for step in ("step-0000008", "step-0000012"):
            shutil.rmtree(runs[name] / "checkpoints" / step)
        as_earlier_trainer(runs[name], "step-0000004", positions)
    resumed = train(load_config(None, small_run(tiny_shards, runs["one"], "checkpoint.resume=true")))
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    assert train_losses(runs["one"]) == train_losses(tmp_path / "whole")
    assert checkpoint.load(checkpoint.latest(runs["one"]), "trainer")["data"] == {"epoch": 0, "examples": 96}
    refused = {"roles": r"positions: a data position per worker stream \(1 rank\(s\) x 2 DataLoader worker",
               "ranks": r"positions: a data position per worker stream \(2 rank\(s\) x 1 DataLoader worker",
               "far": r"positions\[0\]: 4 batches of 100000000000000000 rows, not what"}
    for name, says in refused.items():
        with pytest.raises(DataError, match=r"step-0000004/trainer.json: " + says) as caught:
            train(load_config(None, small_run(tiny_shards, runs[name], "checkpoint.resume=true")))
        assert "\n" not in str(caught.value)


def test_the_trainers_parts_work_alone(tiny_shards, tmp_path):
    """train_step, evaluate and state_dict / load_state_dict, without the loop: a step moves the weights
    and the step count, evaluate leaves them alone, and a state saved and loaded into a fresh Trainer gives
    the same next step."""
    from trainer.dist import Dist
    from trainer.train import Trainer

    torch.set_num_threads(1)
    config = load_config(None, small_run(tiny_shards, tmp_path / "run", "model.dropout=0.0",
                                         "model.attention_dropout=0.0"))
    trainer = Trainer(config, Dist(), torch.device("cpu"))
    before = {k: v.clone() for k, v in trainer.raw_model.state_dict().items()}
    values = trainer.train_step()
    assert trainer.step == 1 and (trainer.position.epoch, trainer.position.examples) == (0, 8)
    assert set(values) == {"loss", "mlm_loss", "nsp_loss", "lr", "grad_norm"}
    assert all(v.shape == () for k, v in values.items() if k != "lr")  # device tensors: no host read
    assert float(values["loss"]) == pytest.approx(float(values["mlm_loss"] + values["nsp_loss"]), rel=1e-6)
    assert any(not torch.equal(before[k], v) for k, v in trainer.raw_model.state_dict().items())
    after_step = {k: v.clone() for k, v in trainer.raw_model.state_dict().items()}
    scores = trainer.evaluate()
    assert set(scores) == {"val_mlm_loss", "val_mlm_acc", "val_mlm_acc_se", "val_nsp_loss", "val_nsp_acc",
                           "val_nsp_acc_se"}
    assert all(torch.equal(after_step[k], v) for k, v in trainer.raw_model.state_dict().items())
    trainer.save_checkpoint()
    fresh = Trainer(load_config(None, small_run(tiny_shards, tmp_path / "run", "model.dropout=0.0",
                                                "model.attention_dropout=0.0", "checkpoint.resume=true")),
                    Dist(), torch.device("cpu"))
    assert fresh.step == 1 and fresh.position == trainer.position
    assert float(fresh.train_step()["loss"]) == float(trainer.train_step()["loss"])


def test_resume_accepts_the_same_run_said_otherwise(tiny_shards, tmp_path, monkeypatch):
    """What a resume compares is what the run used: the shards by resolved path (a resume from another
    working directory with the absolute path is the same run), the model as resolved (giving the default
    preset by name is no change) and the warm-up as resolved from the steps; what differs is named once."""
    run = tmp_path / "run"
    monkeypatch.chdir(tiny_shards.parent)
    train(load_config(None, small_run(Path(tiny_shards.name), run, "schedule.steps=4")))
    warmup = {"schedule": {"steps": 20, "warmup_steps": None}}  # the default: 10% of the steps
    assert resume_conflicts(warmup, {"schedule": {"steps": 20, "warmup_steps": 2}}) == []
    assert resume_conflicts(warmup, {"schedule": {"steps": 20, "warmup_steps": 3}}) == [
        "schedule warm-up: 2 steps of 20 (the default) -> 3 steps of 20 (schedule.warmup_steps=3)"]
    monkeypatch.chdir(tmp_path)
    again = small_run(tiny_shards, run, "schedule.steps=6", 'model.preset="tiny"', "model.hidden_size=128",
                      "checkpoint.resume=true")
    resumed = train(load_config(None, again))
    assert resumed["steps"] == 6
    with pytest.raises(UsageError, match=r"model.hidden_size: 128 -> 64"):
        train(load_config(None, [*again, "model.hidden_size=64", "model.num_heads=2", "schedule.steps=8"]))
