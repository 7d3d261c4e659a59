"""The one progress display of every command, on stderr (`corpusprep.console`), in two shapes:

    with Reporter(progress) as reporter:            # a stage of tasks (build-pairs, shard)
        on_done = reporter.phase("pairs", len(tasks), "pairs", count=lambda stats: stats["pairs"])
        executor.run(fn, tasks, ..., on_done=on_done)    # a bar: tasks done/total, items, items/s

    with Reporter(progress, transient=True) as reporter:   # one pass over the input (vocab, sentences)
        tick = reporter.stream("reading")
        tick(documents, nbytes)                             # a spinner line: documents, MB, MB/s

A phase's bar stays when the run ends (drawn on any stderr: a log keeps the last state); a stream's line is
transient and drawn only on a terminal. Nothing is drawn before the first phase or stream, and disabled
(`--no-progress`), rich is never imported (~0.03 CPU-s) and every callback does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from corpusprep.console import console, show_progress

OnDone = Callable[[Any, dict, bool], None]  # (task, its stats, skipped: done by an earlier run)
Tick = Callable[..., None]  # (documents, bytes read, items="", phase=None)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


class Reporter:
    """Progress bars (`phase`) or a spinner line (`stream`, with transient=True) for one command's run."""

    def __init__(self, enabled: bool = True, *, transient: bool = False) -> None:
        self.transient = transient
        # a transient line left behind off a terminal would be an empty line in a log: drawn only there
        self.enabled = show_progress(enabled) if transient else enabled
        self._progress: Any = None
        self._bars: dict[str, Any] = {}

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def _started(self) -> Any:
        if self._progress is None:
            self._progress = _make_progress(self.transient)
            self._progress.__enter__()
        return self._progress

    def phase(
        self, name: str, total: int | None, unit: str, count: Callable[[dict], int] | None = None
    ) -> OnDone:
        """An `on_done(task, stats, skipped)` callback that advances the bar `name` by one task and adds
        `count(stats)` (default: stats["documents"]) to the items shown, with items/s. `total` None: a phase
        of unknown length, ended by `finish(name)`."""
        if not self.enabled:
            return _nothing
        progress = self._started()
        bar = self._bars[name] = progress.add_task(name, total=total, items="")
        start, items = time.perf_counter(), 0

        def on_done(task: Any, stats: dict, skipped: bool) -> None:
            nonlocal items
            items += stats["documents"] if count is None else count(stats)
            rate = items / max(time.perf_counter() - start, 1e-9)
            progress.update(bar, advance=1, items=f"{items:,} {unit}  {rate:,.0f} {unit}/s")

        return on_done

    def finish(self, name: str) -> None:
        """Mark the phase `name` of unknown length complete (stops its clock)."""
        if not self.enabled:
            return
        bar = self._bars[name]
        done = next(t.completed for t in self._progress.tasks if t.id == bar)
        self._progress.update(bar, total=done, completed=done)

    def stream(self, name: str) -> Tick:
        """A `tick(documents, nbytes, items="", phase=None)` callback for a pass over the input: shows the
        documents read, `items` (e.g. "1,234 sentences"), MB and MB/s; `phase` renames the line."""
        if not self.enabled:
            return _nothing
        progress = self._started()
        line = progress.add_task(name, documents=0, items="", mb=0.0, rate=0.0)
        start = time.perf_counter()

        def tick(documents: int, nbytes: int, items: str = "", phase: str | None = None) -> None:
            mb = nbytes / 1e6
            rate = mb / max(time.perf_counter() - start, 1e-9)
            progress.update(line, description=phase or name, documents=documents, items=items, mb=mb,
                            rate=rate)

        return tick


def _make_progress(transient: bool) -> Any:
    from rich.progress import (  # imported only when a bar is drawn
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    if transient:
        columns = (
            SpinnerColumn(),
            TextColumn("{task.description:<9}"),
            TextColumn("{task.fields[documents]:>10,} documents"),
            TextColumn("{task.fields[items]}"),
            TextColumn("{task.fields[mb]:>9.1f} MB"),
            TextColumn("{task.fields[rate]:>6.1f} MB/s"),
            TimeElapsedColumn(),
        )
    else:
        columns = (
            TextColumn("{task.description:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[items]}"),
            TimeElapsedColumn(),
        )
    return Progress(*columns, console=console(), transient=transient)
