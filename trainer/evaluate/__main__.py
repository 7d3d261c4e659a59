"""`python -m trainer.evaluate MODEL --train FILE --dev FILE [--test FILE] [options]`: is my BERT better
than nothing? See trainer/evaluate/__init__.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from corpusprep.errors import UsageError
from trainer.command import Command
from trainer.evaluate.data import FORMATS, ON_ERROR
from trainer.evaluate.published import BENCHMARKS
from trainer.evaluate.settings import DEVICES, SELECT, EvalSettings
from trainer.evaluate.tasks import METRICS, TASKS

D = EvalSettings()  # the defaults, shown in --help


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, help="a trainer run dir (its newest checkpoint), a step-N "
                        "checkpoint, a pipeline run dir or a Hugging Face directory (trainer.export "
                        "output)")
    data_options(parser.add_argument_group("data (CoNLL-U, CoNLL columns, TSV, CSV, JSONL, SQuAD JSON; "
                                           ".gz/.xz too)"))
    tuning_options(parser.add_argument_group("fine-tuning, the same for both models"))
    parser.add_argument("--workers", type=int, metavar="N", help="fine-tuning runs at once (default: one per "
                        "CPU on a CPU, one on a GPU); does not change the scores")
    parser.add_argument("--random-runs", metavar="DIR", help="keep the random init's runs in DIR and reuse "
                        "them: an evaluation of another checkpoint of the same architecture and vocab, with "
                        "the same data, settings and seeds, copies them rather than fine-tuning again (they "
                        "read no pre-trained weight); does not change the scores")
    parser.add_argument(
        "--vocab", metavar="DIR", help="the checkpoint's vocab dir when its shards have moved"
    )
    parser.add_argument("-o", "--output", type=Path, metavar="DIR", help="also write evaluation.json, "
                        "evaluation.md, each run's record and predictions there (a rerun does nothing; a "
                        "killed one resumes)")
    parser.add_argument("--overwrite", action="store_true", help="replace an --output of other settings")


def data_options(data) -> None:
    data.add_argument("--train", metavar="FILE", help="labelled data to fine-tune on")
    data.add_argument("--dev", metavar="FILE", help="labelled data to score after each epoch; the epoch is "
                      "chosen on it")
    data.add_argument("--test", metavar="FILE", help="a held-back split, scored once with that epoch")
    data.add_argument("--glue", metavar="DIR", help="instead of --train/--dev: every GLUE task of a "
                      "directory laid out as GLUE's (TASK/train.tsv, TASK/dev.tsv; WNLI left out), then a "
                      "table like BERT's Table 1")
    data.add_argument("--glue-tasks", metavar="A,B", help="with --glue: only these tasks (CoLA,SST-2,MRPC,"
                      "QQP,STS-B,MNLI,QNLI,RTE)")
    data.add_argument("--task", choices=TASKS, default=D.task, help="default: auto (CoNLL-U: tag; columns: "
                      "ner; tables: classify, or regression for scores; SQuAD JSON: qa)")
    data.add_argument("--format", choices=FORMATS, default=D.format, metavar="FORMAT",
                      help=f"{', '.join(FORMATS)}; default: auto, from the names (else the first lines; a "
                      ".json file: SQuAD's JSON or JSON lines, by its content)")
    data.add_argument("--metric", choices=METRICS, metavar="NAME", help="the headline score, chosen on and "
                      f"judged by: {', '.join(METRICS)} (default: the task's first: accuracy for tag and "
                      "classify, entity_f1 for ner, pearson for regression, f1 for qa)")
    data.add_argument("--benchmark", choices=BENCHMARKS, metavar="NAME", help="the public set these files "
                      f"are ({', '.join(BENCHMARKS)}): a BERT-base or -large shaped model is shown beside "
                      "the published figure")
    data.add_argument("--label-column", metavar="NAME|N", help="CoNLL-U: upos (default), xpos, feats, deprel "
                      "or a field number; columns: the tag column's number (default: the last of tags); "
                      "tables: default recognised from the header")
    data.add_argument("--text-column", metavar="NAME|N", help="the text (default: sentence, sentence1, "
                      "question, #1 String, text...); columns: the word column's number")
    data.add_argument("--pair-column", metavar="NAME|N", help="the second text of a pair task")
    data.add_argument("--no-header", dest="header", action="store_false", default=argparse.SUPPRESS,
                      help="TSV/CSV without a header row: name columns by number, from 1")
    data.add_argument("--on-error", choices=ON_ERROR, default=D.on_error,
                      help="a malformed line, a wrong field count, a label not in --train, a SQuAD answer "
                      "that is not its context's text: fail (one line naming file:line or the question id, "
                      "exit 1) or skip it, counted (default: %(default)s)")


def tuning_options(tune) -> None:
    def option(name: str, kind: type, metavar: str, text: str = "") -> None:
        default = getattr(D, name.removeprefix("--").replace("-", "_"))
        shown = "by model size (trainer/evaluate/settings.py)" if default is None else "%(default)s"
        tune.add_argument(name, type=kind, default=default, metavar=metavar,
                          help=f"{text} (default: {shown})" if text else f"default: {shown}")

    option("--seeds", int, "N", "runs per model, seeds --seed, --seed + 1, ...; the median is reported")
    option("--seed", int, "N", "the first seed")
    option("--epochs", float, "X", "dev is scored after each")
    option("--batch-size", int, "N")
    option("--lr", float, "X", "peak learning rate")
    tune.add_argument("--select", choices=SELECT, default=D.select, help="the epoch whose weights are "
                      "scored: best on dev (test scored once with it) or last (default: "
                      "%(default)s)")
    tune.add_argument("--grid", action="store_true", default=D.grid, help="BERT's search: learning rate x "
                      "batch 16, 32 x epochs (by model size), each model's chosen on dev")
    option("--warmup", float, "X", "linear warm-up, share of the steps")
    option("--weight-decay", float, "X")
    option("--max-length", int, "N", "word pieces per example, at most the model's positions; longer "
           "sentences are tagged in windows, longer SQuAD contexts read in overlapping windows")
    tune.add_argument("--doc-stride", type=int, default=D.doc_stride, metavar="N", help="qa: the word pieces "
                      "consecutive windows of a context share (default: 128 where it fits, else half the "
                      "smallest window)")
    option("--max-answer-length", int, "N", "qa: the longest answer span, in word pieces")
    tune.add_argument("--device", choices=DEVICES, default=D.device, help="default: %(default)s")


def run(args: argparse.Namespace) -> int:
    from trainer.evaluate.compare import evaluate  # torch and the model code: after the usage checks
    from trainer.evaluate.summary import markdown

    names = {f: getattr(args, f) for f in vars(args) if f in EvalSettings.__dataclass_fields__}
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers {args.workers}: must be >= 1")
    options = {"overwrite": args.overwrite, "workers": args.workers, "random_runs": args.random_runs}
    if args.glue is not None:
        from trainer.evaluate import glue

        if args.train or args.dev or args.test:
            raise UsageError("--glue DIR reads each task's files: leave out --train, --dev and --test")
        base = EvalSettings(**(names | {"train": "", "dev": ""}))
        print(glue.table(glue.run_suite(args.model, args.glue, base, args.output, args.glue_tasks,
                                        **options)), end="")
        return 0
    if not args.train or not args.dev:
        raise UsageError("--train and --dev are needed (or --glue DIR)")
    result = evaluate(args.model, EvalSettings(**names), args.output, **options)
    print(markdown(result), end="")
    return 0


DESCRIPTION = ("Fine-tune a pre-trained BERT and the same model randomly initialised on a labelled task, "
               "with the same settings and seeds, and say whether pre-training helped.")
CLI = Command("trainer.evaluate", DESCRIPTION, add_arguments, run)
build_parser, main = CLI.parser, CLI.main


if __name__ == "__main__":
    sys.exit(main())
