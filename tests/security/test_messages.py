"""Messages that say what happened: a file name with a newline stays on its one line; a dead worker is blamed
on the signal that killed it (the OOM killer only for SIGKILL); SIGTERM is handled as Ctrl-C (one line, exit
143, resumable); a stopped worker cannot hang Ctrl-C; no checkpoint ever holds diverged weights."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from corpusprep.engine.executor import Task, death, run_tasks
from corpusprep.errors import DataError, printable
from tests.pair.helpers import make_vocab, synthetic_documents, write_bert
from tests.reliability.helpers import REPO, corpusprep, environment, output_files


def test_printable_escapes_control_characters_and_bytes_that_are_not_utf8():
    assert printable("dir/new\nline\r\tx\x1b[31m\x07.txt") == "dir/new\\nline\\r\\tx\\x1b[31m\\x07.txt"
    assert printable("line\u2028sep \x85 caf\udce9") == "line\\u2028sep \\x85 caf\\xe9"
    assert printable("plain ünïcödé, 猫, and a space") == "plain ünïcödé, 猫, and a space"


@pytest.mark.slow  # ~1.3 s idle
def test_printable_gives_a_folded_url_its_two_slashes_and_leaves_other_names_alone():
    from corpusprep.engine import storage  # noqa: F401  (its table of schemes: loaded by every URL's use)

    folded = f"{Path('s3://bkt/v/vocab.txt')}: 6 bytes; rerun the command that wrote {Path('gs://b/v')}"
    assert printable(folded) == "s3://bkt/v/vocab.txt: 6 bytes; rerun the command that wrote gs://b/v"
    for text in ("see s3://b/k", "/tmp/s3:/x", "notes:/x", "file:/tmp/x", "s3:/", "a/b.s3:/c"):
        assert printable(text) == text


def test_a_file_name_holding_a_newline_keeps_every_message_on_one_line(tmp_path):
    bad = tmp_path / "two\nlines\r.jsonl"
    bad.write_text('{"text": "A good line."}\nnot json\n')
    result = corpusprep("sentences", bad, "-o", tmp_path / "out.txt", "--on-error", "fail", "--no-progress")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("corpusprep: error: "), result.stderr
    assert "two\\nlines\\r.jsonl:2: not valid JSON" in result.stderr
    result = corpusprep("sentences", bad, "-o", tmp_path / "out.txt", "--no-progress")  # a warning, then done
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert result.returncode == 0 and warnings == [
        f"corpusprep: warning: {tmp_path}/two\\nlines\\r.jsonl:2: not valid JSON (Expecting value: line 1 "
        "column 1)"], result.stderr


def test_a_dead_worker_is_blamed_on_its_signal():
    assert "out-of-memory killer" in death(-signal.SIGKILL) and "fewer --workers" in death(-signal.SIGKILL)
    for code in (-signal.SIGTERM, -signal.SIGSEGV, -signal.SIGABRT, 3):
        assert "out-of-memory" not in death(code) and death(code).endswith("rerun to continue")
    assert death(-signal.SIGTERM).startswith("was killed by SIGTERM (sent by another process")
    assert death(-signal.SIGSEGV).startswith("was killed by SIGSEGV (a crash in native code")
    assert death(3) == "exited with status 3; rerun to continue"


def terminate_own_worker(task: Task) -> dict:
    if task.args == 1:
        os.kill(os.getpid(), signal.SIGTERM)
    return {}


@pytest.mark.slow  # ~1.1 s idle
def test_a_worker_killed_by_sigterm_is_reported_as_such(tmp_path):
    tasks = [Task(f"t{i}", i) for i in range(2)]
    with pytest.raises(DataError) as caught:
        run_tasks(terminate_own_worker, tasks, marker_dir=tmp_path / "markers", workers=2)
    message = str(caught.value)
    assert "was killed by SIGTERM (sent by another process" in message and "out-of-memory" not in message


# The real entry point, with a signal at the moment the pool's workers start (the child sends it itself).
_SIGNAL_AT_POOL = """
import os, signal, sys, threading, time
from corpusprep.engine import faults
how = sys.argv.pop(1)
def workers():
    pids = []
    for task in os.listdir("/proc/self/task"):
        for child in open(f"/proc/self/task/{task}/children").read().split():
            cmdline = open(f"/proc/{child}/cmdline", "rb").read()
            if b"forkserver" in cmdline:
                pids += [int(c) for t in os.listdir(f"/proc/{child}/task")
                         for c in open(f"/proc/{child}/task/{t}/children").read().split()]
    return pids
def stop_a_worker_then_ctrl_c():
    while not workers():
        time.sleep(0.01)
    worker = workers()[0]
    os.kill(worker, signal.SIGSTOP)
    print(f"stopped {worker}", flush=True)
    os.kill(os.getpid(), signal.SIGINT)
real_reached = faults.reached
def reached(name):
    if name == "pool_started":
        if how == "term":
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            threading.Thread(target=stop_a_worker_then_ctrl_c, daemon=True).start()
            time.sleep(5)  # the Ctrl-C arrives here, in the middle of the pool's work
    real_reached(name)
faults.reached = reached
from corpusprep.launch import main
sys.argv[0] = "corpusprep"
main()
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("signals")
    return {"vocab": make_vocab(root / "vocab"),
            "corpus": write_bert(root / "corpus.txt", synthetic_documents(300, seed=3))}


def pairs(corpus: dict[str, Path], out: Path, workers: str = "2") -> list[str]:
    return ["build-pairs", str(corpus["corpus"]), "--vocab", str(corpus["vocab"]), "-o", str(out),
            "--input-format", "bert", "--workers", workers, "--dupe-factor", "2",
            "--docs-per-partition", "40", "--no-progress"]


def signalled(how: str, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SIGNAL_AT_POOL, how, *argv], cwd=REPO, env=environment(),
                          capture_output=True, text=True, timeout=60, start_new_session=True)


@pytest.mark.slow  # ~4.5 s idle
def test_sigterm_is_one_line_exit_143_and_the_rerun_continues(corpus, tmp_path):
    """A job scheduler's time limit sends SIGTERM: said as such (not a silent 143), and resumable."""
    result = signalled("term", pairs(corpus, tmp_path / "out"))
    assert result.returncode == 143, result.stderr
    assert result.stderr.strip().splitlines() == ["corpusprep: terminated (SIGTERM); rerun to continue"]
    rerun = corpusprep(*pairs(corpus, tmp_path / "out"))
    assert rerun.returncode == 0, rerun.stderr
    clean = corpusprep(*pairs(corpus, tmp_path / "clean", workers="1"))
    assert clean.returncode == 0 and output_files(tmp_path / "out") == output_files(tmp_path / "clean")


@pytest.mark.slow  # ~1.7 s idle
def test_ctrl_c_with_a_stopped_worker_does_not_hang(corpus, tmp_path):
    """A worker stopped (SIGSTOP, a debugger) acts on no signal but SIGKILL and SIGCONT: the first Ctrl-C
    used to wait for it forever."""
    result = signalled("stop", pairs(corpus, tmp_path / "out"))  # the timeout is the hang
    stopped = int(result.stdout.split()[1])
    assert not Path(f"/proc/{stopped}").exists() or "T" not in Path(f"/proc/{stopped}/stat").read_text()
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "corpusprep: interrupted; rerun to continue"


def test_no_checkpoint_holds_diverged_weights(tmp_path):
    """lr 1e6: the first step's loss is finite but its weights give nan; checkpoint-every 1 used to save
    them (docs/guarantees.md says no checkpoint holds a diverged step)."""
    from tests.trainer.conftest import build_shards
    from trainer.config import load_config
    from trainer.train import train

    text = tmp_path / "text.jsonl"
    text.write_text("".join(json.dumps({"text": "\n".join(s + "." for s in sentences)}) + "\n"
                            for sentences in synthetic_documents(300, seed=1)))
    shards = build_shards(tmp_path / "data", text, num_shards=1, vocab_size=300)
    config = load_config(None, [f"data.shards={shards}", f"logging.run_dir={tmp_path / 'run'}",
                                "optim.lr=1e6", "checkpoint.every=1", "schedule.steps=4", "device=cpu",
                                "eval.max_batches=1"])
    with pytest.raises(DataError, match=r"training diverged at lr .*; no checkpoint holds"):
        train(config)
    assert not list((tmp_path / "run").glob("checkpoints/step-*"))
