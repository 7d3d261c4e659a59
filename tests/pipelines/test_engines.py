"""Same pairs and shards, byte for byte, whichever engine and however many workers prepared them."""

from __future__ import annotations

import pytest

from corpusprep.engine.executor import ExecutorOptions
from corpusprep.engine.stage import RunContext
from pipelines.load import load_pipeline
from pipelines.runner import run_pipeline
from tests.conftest import local_ray
from tests.pipelines.helpers import (
    DEMO,
    pairs_digests,
    shard_digests,
    small_overrides,
    write_small_corpus,
    write_small_vocab,
)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_local_1_and_2_workers_and_ray_give_identical_shards(tmp_path):
    local_ray()
    corpus = write_small_corpus(tmp_path / "corpus.jsonl")
    vocab = write_small_vocab(corpus, tmp_path / "vocab")
    pipeline = load_pipeline(DEMO, small_overrides(corpus, vocab))
    results = {}
    for name, engine, workers in [("local-1", "local", 1), ("local-2", "local", 2), ("ray-2", "ray", 2)]:
        run_dir = tmp_path / name
        executor = ExecutorOptions(engine, workers).build()
        report = run_pipeline(pipeline, run_dir, until="shard", context=RunContext(executor, progress=False))
        assert {s["name"]: s["engine"] for s in report["stages"]}["shard"] == engine
        results[name] = (pairs_digests(run_dir / "pairs"), shard_digests(run_dir / "shards"))
    pairs, shards = results["local-1"]
    assert len(pairs) >= 10 and len(shards) >= 4  # several partitions: the workers really split the work
    assert results["local-2"] == results["local-1"]
    assert results["ray-2"] == results["local-1"]
    import ray

    ray.shutdown()
