"""Stage kinds: one object per kind says how to check its settings, run it (the library function of the
stage's command) and validate its output. `STAGE_KINDS[kind].run(stage, ctx) -> StageResult`.

Every stage writes its output directory through `corpusprep.engine.artifact` (the commands do it
themselves; corpus and train are wrapped here), so skip, resume, repair and overwrite follow one rule.
Imports are local so that planning a pipeline (or `--until pairs`) never imports torch.
"""

from __future__ import annotations

import subprocess
import sys

from corpusprep import objectives
from corpusprep.engine import artifact, storage
from corpusprep.engine import manifest as manifests
from corpusprep.engine.files import write_json
from corpusprep.engine.records import load_record
from corpusprep.errors import DataError, UsageError
from pipelines.config import Stage
from pipelines.stage_kind import StageContext, StageKind, StageResult, _options, _read_options
from pipelines.train_stage import TrainStage


class CorpusStage(StageKind):
    kind = "corpus"

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.demo_corpus import DEFAULT_MAX_MB, write_demo_corpus

        settings = {"settings": stage.settings}
        with artifact.Artifact(ctx.out, "corpus", settings, overwrite=ctx.overwrite) as out:
            if out.complete is None:
                stats = write_demo_corpus(ctx.out / "demo.jsonl", stage.settings["max_mb"] or DEFAULT_MAX_MB)
                write_json(ctx.out / "demo_stats.json", stats.to_dict())
                out.commit(files=["demo.jsonl", "demo_stats.json"])
        stats = load_record(ctx.out / "demo_stats.json", "demo_stats")
        counts = {k: stats[k] for k in ("modules", "docstrings", "documents", "dropped")}
        return StageResult({**counts, "MB": round(stats["bytes"] / 1e6, 3)}, unit="documents")


class CurateStage(StageKind):
    kind = "curate"
    parallel = True

    def check(self, stage: Stage) -> None:
        from corpusprep.curate.options import CurateOptions

        super().check(stage)
        _options(CurateOptions, stage.settings["curate"], "curate")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.curate.build import curate
        from corpusprep.curate.options import CurateOptions

        options = _options(CurateOptions, stage.settings["curate"], "curate")
        stats = curate(ctx.corpus(stage), ctx.out, options, _read_options(stage), context=ctx)
        counts = {"documents": stats["documents"], "kept": stats["kept"], "removed": stats["removed"]}
        return StageResult(counts, unit="documents")

    def input_files(self, stage: Stage) -> list[str]:
        return list(stage.settings["curate"].get("decontaminate", []))


class VocabStage(StageKind):
    kind = "vocab"

    def check(self, stage: Stage) -> None:
        from corpusprep.tokenize.options import VocabOptions

        super().check(stage)
        _options(VocabOptions, stage.settings["vocab"], "vocab")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.tokenize.options import VocabOptions
        from corpusprep.tokenize.vocab import build_vocab

        options = _options(VocabOptions, stage.settings["vocab"], "vocab")
        report = build_vocab(ctx.corpus(stage), ctx.out, options, _read_options(stage), context=ctx)
        docs = report["documents"]
        counts = {
            "vocab_size": report["vocab_size"],
            "documents_read": docs["read"],
            "documents_used": docs["used"],
            "documents_skipped": sum(docs["skipped"].values()),
            "skipped": docs["skipped"],
            "MB": round(report["bytes_read"] / 1e6, 3),
        }
        return StageResult(counts, unit="MB")

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        from corpusprep.tokenize import VocabInfo

        try:
            VocabInfo.load(ctx.out).tokenizer()
        except UsageError as error:
            return [str(error)]
        return super().validate(stage, ctx)


class PairsStage(StageKind):
    kind = "pairs"
    parallel = True

    def check(self, stage: Stage) -> None:
        from corpusprep.pair.build import PairOptions

        super().check(stage)
        _options(PairOptions, stage.settings["pairs"], "pairs")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.pair.build import PairOptions, build_pairs

        options = _options(PairOptions, stage.settings["pairs"], "pairs")
        stats = build_pairs(
            ctx.corpus(stage),
            ctx.need(stage, "vocab"),
            ctx.out,
            options,
            _read_options(stage),
            context=ctx,
        )
        skipped = stats.get("documents_skipped", {})
        read_skipped = stats["read"]["skipped"]
        every_skip = {k: skipped.get(k, 0) + read_skipped.get(k, 0) for k in {*skipped, *read_skipped}}
        counts = {
            # documents_read = documents_used + documents_skipped: the reader's skips (bad lines, empty
            # documents) and the pairing's (no sentences, no partner) together, so every input document
            # is accounted for; `documents` are those the reader passed on
            "documents_read": stats["read"]["documents_seen"],
            "documents": stats["documents"],
            "documents_used": stats["documents_used"],
            "documents_skipped": sum(every_skip.values()),
            "skipped": dict(sorted(every_skip.items())),
            "read_skipped": stats["read"]["skipped"],
            "files_skipped": stats["read"]["skipped_files"],
            "objective": stats.get("objective", objectives.DEFAULT),
            "pairs": stats["pairs"],  # the rows of the files, whatever the objective
            # the objective's own counts: IsNext/NotNext, in order/swapped, or pieces and fill
            **{k: stats[k] for k in OBJECTIVE_COUNTS if k in stats},
            "MB": round(stats["read"]["bytes"] / 1e6, 3),
        }
        return StageResult(counts, unit="pairs")

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:

        problems = super().validate(stage, ctx)
        if problems:
            return problems
        parts = storage.glob(ctx.out, "*/part-*.parquet")
        rows = sum(storage.parquet_file(f).metadata.num_rows for f in parts)
        expected = load_record(ctx.out / "stats.json", "pairs_stats").get("pairs")
        if rows != expected:
            return [f"{ctx.out}: {rows} pairs in the Parquet files, stats.json says {expected}"]
        return [] if rows else [f"{ctx.out}: no pairs"]


OBJECTIVE_COUNTS = ("is_next", "not_next", "not_swapped", "swapped", "rows", "pieces", "fill")


class ShardStage(StageKind):
    kind = "shard"
    parallel = True

    def check(self, stage: Stage) -> None:
        from corpusprep.shard.options import ShardOptions

        _options(ShardOptions, stage.settings["shard"], "shard")

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from corpusprep.shard.build import ShardOptions, build_shards

        options = _options(ShardOptions, stage.settings["shard"], "shard")
        manifest = build_shards(
            ctx.need(stage, "pairs"),
            ctx.need(stage, "vocab"),
            ctx.out,
            options,
            context=ctx,
        )
        counts = dict(manifest["totals"])
        for split, info in manifest["splits"].items():
            counts[f"{split}_examples"] = info["examples"]
            counts[f"{split}_shards"] = len(info["shards"])
        return StageResult(counts, unit="examples")

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        from corpusprep.shard.validate import validate_shards

        return [str(p) for p in validate_shards(ctx.out)]


class PlotStage(StageKind):
    """The train stage's curves (`python -m trainer.plot`) into an artifact of their own, so a rerun
    replaces them and the train stage's directory holds only what training wrote."""

    kind = "plot"
    curves = "curves.png"

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        train = ctx.need(stage, "train")
        identity = {"train": manifests.content_digest(train)}
        with artifact.Artifact(ctx.out, "plot", identity, inputs=[train], overwrite=ctx.overwrite) as out:
            if out.complete is None:
                # in its own process: keeps matplotlib out of the runner
                out_file = str(ctx.out / self.curves)
                command = [sys.executable, "-m", "trainer.plot", str(train), "--out", out_file]
                result = subprocess.run(command, capture_output=True, text=True)
                if result.returncode != 0:
                    last = (result.stderr.strip().splitlines() or ["no message"])[-1]
                    raise DataError(f"{stage.name}: {' '.join(command)} failed: {last}")
                out.commit(files=[self.curves])
        return StageResult({"plots": 1})


class EvaluateStage(StageKind):
    """`python -m trainer.evaluate` on the last train stage's model, into an artifact of its own (each
    fine-tuning run a task: a stopped evaluation resumes after its last finished run); with several tasks
    (`[evaluate.tasks.NAME]`), one artifact per task in `OUT/NAME/` (trainer/evaluate/multitask.py)."""

    kind = "evaluate"

    @staticmethod
    def settings(stage: Stage):
        """Each task's EvalSettings, by name ("" for the one task of a table without `tasks`)."""
        from trainer.evaluate import multitask

        return multitask.settings(stage.settings["evaluate"])

    def check(self, stage: Stage) -> None:
        self.settings(stage)

    def input_files(self, stage: Stage) -> list[str]:
        return [p for s in self.settings(stage).values() for p in (s.train, s.dev, s.test) if p]

    def validate(self, stage: Stage, ctx: StageContext) -> list[str]:
        names = [name for name in self.settings(stage) if name]
        return [p for out in ([ctx.out / n for n in names] or [ctx.out]) for p in manifests.problems(out)]

    def run(self, stage: Stage, ctx: StageContext) -> StageResult:
        from trainer.evaluate import multitask

        model = ctx.need(stage, "train")
        results = multitask.evaluate_tasks(model, self.settings(stage), ctx.out, overwrite=ctx.overwrite,
                                           model_identity=manifests.content_digest(model),
                                           workers=ctx.executor.workers)
        if multitask.ONE not in results:  # several tasks: every result for report.md's table across them
            files = tuple(f"{name}/{f}" for name in results
                          for f in (*manifests.owned_files(ctx.out / name), manifests.MANIFEST))
            helps = sum(s["outcome"] == "helps" for r in results.values() for s in r["splits"].values())
            return StageResult({"tasks": len(results), "splits_helped": helps, "evaluations": results},
                               files=files)
        result = results[multitask.ONE]
        dev = result["splits"]["dev"]
        # the dev means for the counts table; the whole result for report.md's evaluation section
        counts = {"seeds": len(result["seeds"]), "pretrained": dev["pretrained"]["mean"],
                  "random": dev["random"]["mean"], "gain": dev["gain"]["mean"],
                  "gain_std": dev["gain"]["std"], "baseline": dev["baseline"], "outcome": dev["outcome"],
                  "evaluation": result}
        return StageResult(counts)


STAGE_KINDS: dict[str, StageKind] = {
    k.kind: k for k in (CorpusStage(), CurateStage(), VocabStage(), PairsStage(), ShardStage(), TrainStage(),
                        PlotStage(), EvaluateStage())
}


def check(stage: Stage) -> None:
    STAGE_KINDS[stage.kind].check(stage)
