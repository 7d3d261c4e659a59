"""`corpusprep curate` on a corpus with planted duplicates, near-copies, shared paragraphs, evaluation
sentences and foreign documents: what it removes, what it keeps, and the same bytes whatever the engine."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from corpusprep.curate.build import curate
from corpusprep.curate.options import CurateOptions
from corpusprep.engine import manifest
from corpusprep.engine.executor import ExecutorOptions
from corpusprep.engine.stage import RunContext
from corpusprep.read import ReadOptions, iter_documents
from tests.contexts import quiet
from tests.curate.planted import planted_corpus


def digests(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file() and not p.name.startswith(".")}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    p = planted_corpus(seed=3)
    corpus = p.write(root / "corpus.jsonl")
    evaluation = root / "eval.tsv"
    evaluation.write_text("sentence\tlabel\n" + "".join(f"{s}\t1\n" for s in p.eval_sentences))
    options = CurateOptions(decontaminate=(str(evaluation),), languages=("en",))
    out = root / "out"
    stats = curate([str(corpus)], out, options, ReadOptions(), context=quiet(1))
    removed = {r["id"]: r for r in map(json.loads, (out / "removed.jsonl").read_text().splitlines())}
    ids = {d["id"]: f"corpus.jsonl:{i}" for i, d in enumerate(p.documents)}  # the reader's ids
    return p, ids, removed, stats, out, (corpus, evaluation, options)


@pytest.mark.slow  # ~1.5 s: language identification loads its model
def test_planted_duplicates_contamination_and_languages(planted):
    p, ids, removed, stats, out, _ = planted

    def found(pairs, reason):
        hits = [removed.get(ids[copy], {}) for _, copy in pairs]
        return sum(r.get("reason") == reason and r.get("kept") == ids[orig]
                   for r, (orig, _) in zip(hits, pairs, strict=True)) / len(pairs)

    assert found(p.exact, "exact-duplicate") >= 0.95
    assert found(p.near, "near-duplicate") >= 0.95
    assert not {ids[d] for pair in p.shared for d in pair} & set(removed)  # sharing a paragraph is no copy
    assert all(removed[ids[d]]["reason"] == "contaminated" for d in p.contaminated)
    assert not {ids[d] for d in p.fragments} & set(removed)  # an 8-word fragment is no match
    foreign = sum(removed.get(ids[d], {}).get("reason") == "language" for d in p.foreign)
    assert foreign >= 0.95 * len(p.foreign) and len(p.foreign) >= 30
    english = sum(removed.get(ids[d], {}).get("reason") == "language" for d in p.english)
    assert english < 0.01 * len(p.english)
    # counts add up; the report names every evaluation example found, by file and line
    assert stats["documents"] == stats["kept"] + sum(stats["removed"].values()) == len(p.documents)
    assert stats["evaluation"]["found"] == len(p.contaminated)
    assert {e["text"] for e in stats["evaluation"]["found_examples"]} == set(
        p.eval_sentences[: len(p.contaminated)])
    assert "## evaluation examples found in the corpus" in (out / "report.md").read_text()
    assert (out / "report.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_the_output_directory_reads_as_its_kept_documents_with_their_ids(planted):
    p, ids, removed, stats, out, _ = planted
    docs = list(iter_documents([str(out)], ReadOptions()))
    assert len(docs) == stats["kept"]
    assert {d.id for d in docs} == set(ids.values()) - set(removed)
    source = {ids[d["id"]]: d["text"] for d in p.documents}
    assert all(d.text == source[d.id] for d in docs)


@pytest.mark.slow
def test_workers_and_a_rerun(planted, tmp_path):
    p, ids, removed, stats, out, (corpus, evaluation, options) = planted
    two = tmp_path / "two"
    curate([str(corpus)], two, options, ReadOptions(), context=quiet(2))
    assert digests(two) == digests(out)
    again = curate([str(corpus)], two, options, ReadOptions(), context=quiet(2))
    assert again.get("nothing_to_do")


@pytest.mark.slow  # ~15 s: starts a Ray cluster
@pytest.mark.xdist_group("ray")
def test_ray_gives_the_local_bytes(planted, tmp_path):
    from tests.conftest import local_ray

    p, ids, removed, stats, out, (corpus, evaluation, options) = planted
    local_ray()
    executor = ExecutorOptions("ray", 2).build()
    curate([str(corpus)], tmp_path / "ray", options, ReadOptions(),
           context=RunContext(executor, progress=False))
    assert digests(tmp_path / "ray") == digests(out)
    import ray

    ray.shutdown()


def test_several_chunks_and_buckets_keep_the_decisions(tmp_path, monkeypatch):
    """Dedup across chunks and buckets: the same kept set whatever the chunking, and a small chunk size."""
    from corpusprep.curate import dedup

    p = planted_corpus(seed=5, originals=60, near=12, exact=6, shared=4, evaluation=0, foreign=0)
    corpus = p.write(tmp_path / "c.jsonl")
    kept = {}
    for name, per_chunk, per_bucket in (("one", 4096, dedup.BUCKET_BYTES), ("many", 7, 16 * 464)):
        monkeypatch.setattr(dedup, "BUCKET_BYTES", per_bucket)
        out = tmp_path / name
        curate([str(corpus)], out, CurateOptions(docs_per_chunk=per_chunk), ReadOptions(), context=quiet(1))
        kept[name] = (out / "removed.jsonl").read_text()
        assert manifest.load_manifest(out)["kind"] == "curate"
        buckets = json.loads((out / "curate.json").read_text())["duplicates"]["buckets"]
        assert (buckets > 1) == (name == "many")
    assert kept["many"] == kept["one"]
    assert len(kept["one"].splitlines()) >= len(p.exact) + len(p.near) - 2  # 12 pairs: recall ~0.96 each


def test_lines_repeated_across_documents_are_taken_out_but_in_the_first(tmp_path, monkeypatch):
    """--lines: a long line held by many documents stays in the first only (a document left with nothing
    goes, `shared-lines`); unique lines, short repeated ones and one repeated inside a single document stay;
    the same whatever the chunks and buckets, and without dedup (this corpus has no duplicates)."""
    import random

    from corpusprep.curate import dedup
    from tests.curate.planted import document

    rng = random.Random(4)
    notice = "This page was last edited on a Tuesday; its text is available under a free licence."
    own = "A line of sixty characters or more that only the first document holds, twice over."
    texts = [document(rng, 2) for _ in range(12)]
    texts[0] += f"\n{own}\n{own}\nSee also"
    texts = texts[:2] + [f"{t}\n{notice}\nSee also" if i % 2 else f"{notice.upper()}\n{t}"
                         for i, t in enumerate(texts[2:])] + [notice]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    outputs = {}
    for name, per_chunk, buckets, dedup_too in (("one", 4096, 1, True), ("many", 3, 3, False)):
        monkeypatch.setattr(dedup, "bucket_count", lambda keys, size, buckets=buckets: buckets)
        out = tmp_path / name
        options = CurateOptions(lines=True, docs_per_chunk=per_chunk, exact=dedup_too, near=dedup_too)
        curate([str(corpus)], out, options, ReadOptions(), context=quiet(1))
        outputs[name] = ([(d.id, d.text) for d in iter_documents([str(out)], ReadOptions())],
                         (out / "removed.jsonl").read_text())
    assert outputs["many"] == outputs["one"]
    kept = dict(outputs["one"][0])
    removed = [json.loads(x) for x in outputs["one"][1].splitlines()]
    assert removed == [{"id": "c.jsonl:12", "reason": "shared-lines"}]
    assert kept["c.jsonl:0"] == texts[0] and kept["c.jsonl:1"] == texts[1]  # its own repeat, "See also"
    assert kept["c.jsonl:2"] == texts[2]  # the first to hold the notice keeps it (upper case: one line)
    for i in range(3, 12):
        left = [x for x in texts[i].split("\n") if x.lower() != notice.lower()]
        assert kept[f"c.jsonl:{i}"] == "\n".join(left)
    assert sum(t.endswith("See also") for t in kept.values()) == 6



def test_the_report_plot_of_all_removed_or_a_few_warns_of_nothing(tmp_path):
    """The outcome chart is log-scaled so that a few removals beside thousands kept show; a bar of 0 (all
    removed) must not make matplotlib warn on the user's terminal."""
    import warnings

    (tmp_path / "in.jsonl").write_text('{"text": "one two three four"}\n' * 3)
    for name, options in (("few", CurateOptions()), ("none-kept", CurateOptions(filters=("gopher",)))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            stats = curate([str(tmp_path / "in.jsonl")], tmp_path / name, options, ReadOptions(),
                           context=quiet(1))
        assert (stats["documents"], stats["kept"]) == (3, 1 if name == "few" else 0)
        assert (tmp_path / name / "report.png").read_bytes()[:4] == b"\x89PNG"
