"""The one progress reporter (`engine.progress`): disabled it imports nothing and does nothing; a phase's bar
counts tasks and items; a transient line is drawn only on a terminal; nothing is drawn before it is used."""

from __future__ import annotations

import subprocess
import sys

from corpusprep.engine.progress import Reporter


def test_a_disabled_reporter_never_imports_rich():
    code = (
        "import sys\n"
        "from corpusprep.engine.progress import Reporter\n"
        "with Reporter(False) as r:\n"
        "    r.phase('read', None, 'docs')(None, {'documents': 3}, False)\n"
        "    r.finish('read')\n"
        "with Reporter(False, transient=True) as r:\n"
        "    r.stream('reading')(10, 2_000_000, phase='merging')\n"
        "print('rich' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_a_phase_counts_tasks_and_items_and_a_finish_closes_an_open_one():
    with Reporter(True) as reporter:
        assert reporter._progress is None  # nothing drawn (not even an empty line) before the first phase
        on_done = reporter.phase("pairs", 2, "pairs", count=lambda stats: stats["pairs"])
        on_done(None, {"pairs": 5}, False)
        on_done(None, {"pairs": 7}, True)  # a task done by an earlier run counts too
        tick = reporter.phase("read", None, "docs")
        tick(None, {"documents": 4}, False)
        reporter.finish("read")
        bars = {task.description: task for task in reporter._progress.tasks}
    assert (bars["pairs"].completed, bars["pairs"].total) == (2, 2)
    assert bars["pairs"].fields["items"].startswith("12 pairs ")
    assert (bars["read"].completed, bars["read"].total) == (1, 1) and bars["read"].finished


def test_a_transient_line_is_drawn_only_on_a_terminal(monkeypatch):
    reporter = Reporter(True, transient=True)  # pytest's stderr is no terminal
    assert not reporter.enabled
    reporter.stream("reading")(10, 1_000_000)
    assert reporter._progress is None
    monkeypatch.setattr("corpusprep.engine.progress.show_progress", lambda requested: requested)
    with Reporter(True, transient=True) as shown:
        shown.stream("reading")(10, 2_000_000, "3 sentences", phase="merging")
        (line,) = shown._progress.tasks
        assert (line.description, line.fields["documents"], line.fields["mb"]) == ("merging", 10, 2.0)
        assert line.fields["items"] == "3 sentences"
