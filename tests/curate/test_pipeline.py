"""curate as a pipeline stage: the template's [curate] block, uncommented, plans a stage before vocab that
every later stage reads; run, vocab trains on the kept documents only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from corpusprep.errors import UsageError
from corpusprep.settings import parse_toml
from pipelines.config import plan
from pipelines.stages import check
from tests.contexts import quiet
from tests.curate.planted import planted_corpus

TEMPLATE = Path(__file__).resolve().parents[2] / "pipelines" / "template.toml"


def template_with_curate() -> dict:
    """The template with its commented [curate] block switched on."""
    text = TEMPLATE.read_text(encoding="utf-8")
    block = re.search(r"^# \[curate\]\n(?:# .*\n)+", text, flags=re.M).group()
    return parse_toml(text.replace(block, re.sub(r"^# ", "", block, flags=re.M)), TEMPLATE)


def test_the_templates_curate_block_plans_a_stage_before_vocab():
    raw = template_with_curate()
    assert raw["curate"]["languages"] == ["en"] and raw["curate"]["filters"] == ["gopher"]
    pipeline = plan(raw, TEMPLATE)
    kinds = [s.kind for s in pipeline.stages]
    assert kinds[:2] == ["curate", "vocab"]
    assert {s.kind: s.needs.get("corpus") for s in pipeline.stages if "corpus" in s.needs} == {
        "curate": "input", "vocab": "curate", "pairs": "curate"}
    for stage in pipeline.stages:
        check(stage)  # every [curate] key of the template is a known, valid option
    with pytest.raises(UsageError, match="--threshold 2"):
        check(plan({**raw, "curate": {"threshold": 2}}, TEMPLATE).stages[0])


def test_a_pipeline_curates_and_vocab_reads_the_kept_documents(tmp_path):
    from pipelines.runner import run_pipeline

    corpus = planted_corpus(seed=6, originals=30, near=5, exact=5, shared=0, evaluation=0,
                            foreign=0).write(tmp_path / "c.jsonl")
    raw = {"pipeline": {"name": "p"}, "input": {"paths": [str(corpus)]}, "curate": {},
           "vocab": {"vocab_size": 200}}
    run_pipeline(plan(raw, tmp_path / "p.toml"), tmp_path / "run", until="vocab", context=quiet())
    curated = json.loads(next((tmp_path / "run").rglob("curate.json")).read_text())
    assert curated["removed"].get("exact-duplicate", 0) + curated["removed"].get("near-duplicate", 0) >= 9
    report = json.loads(next((tmp_path / "run").rglob("vocab_report.json")).read_text())
    assert report["documents"]["used"] == curated["kept"] < curated["documents"]
