"""The README's own commands run as written: every command block of its Quick start and of the manual's
Hugging Face page (docs/manual/huggingface.md, where the Quick start sends a reader), in one shell as a user
types them (so `source .venv/bin/activate` holds for the blocks after it), in a copy of this checkout, and
that page's Python example.

What differs from a user's run, and why:
- `./scripts/demo` gets `--set` overrides (documented by `corpusprep run`) that shorten the demo: a 0.5 MB
  corpus and 20 training steps instead of 4 MB and 1,500 (minutes on a CPU). Its second run must find every
  stage complete, as the Quick start says.
- `./scripts/test` is this suite: it is skipped here, not run inside itself.
- `.venv` in the copy stands for the virtual environment running this test (linked, with the stamp that
  `scripts/env.sh` looks for), so nothing is installed; pip is held to a dry run should it be reached anyway.
- The Python example trains for 2 steps (`max_steps=2`) instead of three epochs of BERT-base on a CPU.
4.5 minutes on the project's 2-core machine shared with other jobs (load 15; about 70 CPU-seconds of its own),
so it is marked slow.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# (file, section): None for the whole page. In this order, as a user reads them.
SOURCES = (("README.md", "Quick start"), ("docs/manual/huggingface.md", None))
SHORTER_DEMO = ("--set input.demo_mb=0.5 --set train.schedule.steps=20 --set train.eval.every=10 "
                "--set train.eval.max_batches=2 --set train.checkpoint.every=10")
SKIPPED = {"./scripts/test": "the whole test suite: this test is part of it"}


def fenced_blocks(text: str, section: str | None) -> list[tuple[str, str]]:
    """(language, code) of every fenced block in the `## section` of a Markdown page (None: the whole
    page), in order."""
    parts = [text] if section is None else [
        part for part in re.split(r"^## ", text, flags=re.M) if part.split("\n", 1)[0].strip() == section]
    return [block for part in parts for block in re.findall(r"^```(\w+)\n(.*?)^```", part, flags=re.M | re.S)]


def documented_blocks() -> list[tuple[str, str]]:
    """The blocks of every SOURCE, in order; each source must hold some (a moved or renamed section fails)."""
    blocks = []
    for name, section in SOURCES:
        found = fenced_blocks((REPO / name).read_text(), section)
        assert found, f"{name}: no command blocks in {section or 'the page'}"
        blocks += found
    return blocks


def commands(code: str) -> list[str]:
    """The commands of a shell block: comments and continuation-only lines dropped."""
    lines = [line.split("  #")[0].rstrip() for line in code.splitlines()]
    return [line for line in lines if line and not line.lstrip().startswith("#")]


def copy_checkout(clone: Path) -> None:
    """The files of this checkout as git sees them (tracked, and new ones not ignored), uncommitted edits
    included; no .venv, no runs/."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)


def stand_in_venv(clone: Path) -> Path:
    """clone/.venv: the environment running this test seen through another path (its pyvenv.cfg, its
    packages and programs linked: a Python finds its environment from where it was started), and the stamp
    that tells scripts/env.sh (for the demo's extras "" and the suite's "test") that it is installed."""
    venv, real = clone / ".venv", Path(sys.prefix)
    (venv / "bin").mkdir(parents=True)
    shutil.copy(real / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(real / "lib")
    for program in (real / "bin").iterdir():
        (venv / "bin" / program.name).symlink_to(program)
    # scripts/env.sh: sha256 of pyproject.toml and scripts/env.sh, its first 16 hex digits, then [EXTRAS]
    digest = hashlib.sha256((clone / "pyproject.toml").read_bytes() + (clone / "scripts/env.sh").read_bytes())
    stamp = venv / ".corpusprep-stamp"
    stamp.write_text("".join(f"{digest.hexdigest()[:16]} [{extras}]\n" for extras in ("", "test")))
    return stamp


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a virtual environment to stand in for .venv")
def test_the_readmes_commands_run_as_written(tmp_path):
    pytest.importorskip("transformers")  # the Hugging Face section's --verify and Python example
    pytest.importorskip("datasets")
    blocks = documented_blocks()
    shell = [line for language, code in blocks if language == "bash" for line in commands(code)]
    python = [code for language, code in blocks if language == "python"]
    assert "./scripts/demo" in shell and any("trainer.export" in line for line in shell) and python, blocks

    clone = tmp_path / "corpusprep"
    copy_checkout(clone)
    stamp = stand_in_venv(clone)
    stamped = stamp.read_text()
    script, skipped = ["set -euo pipefail"], []
    for line in shell:
        if line in SKIPPED:
            skipped.append(line)
            continue
        script.append(f"{line} {SHORTER_DEMO}" if line == "./scripts/demo" else line)
        if line == "./scripts/demo":
            script.append(f'[[ "$({line} {SHORTER_DEMO} 2>&1)" == *"every stage complete; nothing to do"* ]]')
    assert skipped == ["./scripts/test"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "CORPUSPREP_", "PYTHON"))}
    env |= {"PIP_DRY_RUN": "1", "PIP_NO_INDEX": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert stamp.read_text() == stamped  # scripts/env.sh found the environment installed: nothing was
    assert (clone / "runs/demo/report.md").is_file() and (clone / "runs/demo/plot/curves.png").is_file()
    for out in ("runs/demo/hf", "runs/demo/hf-checked"):
        assert (clone / out / "config.json").is_file() and (clone / out / "model.safetensors").is_file()
    assert (clone / "runs/demo/init/config.json").is_file()  # the import, for --init-from

    for code in python:  # the training example, 2 steps
        call = 'TrainingArguments("out", '
        assert call in code
        short = code.replace(call, f"{call}max_steps=2, report_to=[], ")
        (clone / "example.py").write_text(short)
        done = subprocess.run([clone / ".venv/bin/python", "example.py"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
