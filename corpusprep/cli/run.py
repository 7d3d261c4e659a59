"""`corpusprep run PIPELINE.toml`: every stage of a named pipeline in order, resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from corpusprep.cli.app import app
from corpusprep.cli.options import Overwrite, with_executor
from corpusprep.console import refuse_stdout
from corpusprep.engine.executor import Executor
from corpusprep.engine.stage import RunContext


@app.command("run")
@with_executor
def run(
    pipeline: Annotated[
        Path, typer.Argument(help="Pipeline file, e.g. pipelines/demo.toml (see pipelines/template.toml).")
    ],
    run_dir: Annotated[
        Path | None, typer.Option(help="Where every stage writes (default: runs/NAME).", show_default=False)
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Change a setting: section.key=value (a TOML value), e.g. --set train.schedule.steps=50 "
            "--set input.paths='[\"corpus/\"]'. Repeatable.",
            show_default=False,
        ),
    ] = None,
    executor: Executor | None = None,  # --workers, --engine, --ray-address (with_executor): data prep
    until: Annotated[
        str | None,
        typer.Option(
            help="Stop after this stage (e.g. pairs-seq128) or stage kind (e.g. shard: no training)."
        ),
    ] = None,
    overwrite: Overwrite = False,
    extend: Annotated[
        bool,
        typer.Option(
            help="Continue finished training whose schedule.steps or schedule.budget grew from its last "
            "checkpoint, instead of training from step 0 (docs/manual/pipelines.md)."
        ),
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Run a named pipeline: (demo corpus ->) vocab -> build-pairs -> shard -> train -> plot -> report.

    Stages whose outputs are complete and whose settings and inputs are unchanged are skipped, so a killed
    run continues where it stopped and a second run does nothing. Changing a setting reruns that stage and
    every stage after it; the run says which and why before it starts. The report is RUN_DIR/report.md
    (and report.json).
    """
    from trainer.threads import set_wait_policy

    set_wait_policy()  # before anything imports torch: the train stage trains in this process
    from pipelines.load import load_pipeline
    from pipelines.runner import run_pipeline

    refuse_stdout(run_dir, "--run-dir", "a directory")
    spec = load_pipeline(pipeline, set_ or [])
    context = RunContext(executor, overwrite=overwrite, progress=progress)
    run_pipeline(spec, run_dir or Path("runs") / spec.name, context=context, until=until, extend=extend)
