"""build-pairs + shard writing to a local S3 server (moto's) vs to local disk, on the same corpus, in one run.

    .venv/bin/python bench/object_store.py [--mb 8] [--repeat 2] [--workers 2]

Needs the [s3] and [test] extras (s3fs, moto[server]). Starts `python -m moto.server` on 127.0.0.1 as its
own process, then runs, alternately, each pair of commands to a fresh local directory and to a fresh prefix
of the server, each in a child process:

    corpusprep build-pairs CORPUS --vocab VOCAB -o OUT/pairs --workers W
    corpusprep shard OUT/pairs --vocab VOCAB -o OUT/shards --workers W

(OUT a directory or `s3://bench/runN`: on S3, shard reads the pairs it writes from the server.) Prints per
command the best wall and CPU seconds of its runs (CPU: the command's process tree, from rusage; on S3 also
the server's CPU, from /proc), the S3/disk ratios, and checks that both wrote the same shard bytes. The
corpus is the first --mb MB of ../shared/corpus/enwiki_AA.txt.xz with Google's vocab (the demo corpus and a
trained vocab without ../shared).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.build_pairs import SHARED, make_vocab, prefix_corpus  # noqa: E402

BUCKET = "bench"


def corpusprep(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "corpusprep", *map(str, args), "--no-progress"]


def inputs(work: Path, mb: float) -> tuple[Path, Path]:
    """(corpus, vocab directory) on local disk."""
    if (SHARED / "enwiki_AA.txt.xz").is_file():
        return prefix_corpus(mb, work / "corpus.txt"), make_vocab(work / "vocab")
    from corpusprep.demo_corpus import iter_demo_documents

    corpus = work / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for _, t in iter_demo_documents(mb)))
    subprocess.run(corpusprep("vocab", corpus, "-o", work / "vocab", "--vocab-size", "8000"), check=True,
                   stdout=subprocess.DEVNULL)
    return corpus, work / "vocab"


def commands(corpus: Path, vocab: Path, out: str, workers: int) -> dict[str, list[str]]:
    """The two commands, writing under `out` (a local directory or an S3 prefix)."""
    return {"build-pairs": corpusprep("build-pairs", corpus, "--vocab", vocab, "-o", f"{out}/pairs",
                                      "--workers", workers),
            "shard": corpusprep("shard", f"{out}/pairs", "--vocab", vocab, "-o", f"{out}/shards",
                                "--workers", workers)}


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(command: list[str], env: dict[str, str], server: int | None) -> tuple[float, float, float]:
    """(wall, CPU of the command's process tree, CPU of the server meanwhile) of one command."""
    before, served = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu(server) if server else 0.0
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed: {shlex.join(command)}\n{done.stderr.decode()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, (server_cpu(server) - served) if server else 0.0


def start_server(work: Path) -> tuple[subprocess.Popen, dict[str, str]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (work / "moto.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    env = os.environ | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
                        "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    make_bucket = "import s3fs; s3fs.S3FileSystem().mkdir('bench')"
    for _ in range(100):  # the server takes a moment to listen
        if subprocess.run([sys.executable, "-c", make_bucket], env=env, capture_output=True).returncode == 0:
            return server, env
        time.sleep(0.2)
    server.kill()
    sys.exit(f"moto server did not start: {(work / 'moto.log').read_text()[-2000:]}")


def shard_digests(out: str, env: dict[str, str]) -> dict[str, str]:
    """sha256 of every shard file under OUT/shards (a directory or a URL), read through the storage seam."""
    script = ("import hashlib, json, sys\nfrom corpusprep.engine import storage\nroot = sys.argv[1]\n"
              "print(json.dumps({p.name: hashlib.sha256(storage.read_bytes(p)).hexdigest()\n"
              "    for p in storage.rglob(root, 'shard-*.parquet')}))")
    done = subprocess.run([sys.executable, "-c", script, f"{out}/shards"], env=env, cwd=REPO,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=8.0, help="MB of the corpus (default 8)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each, the best kept (default 2)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-object-store-") as tmp:
        work = Path(tmp)
        corpus, vocab = inputs(work, args.mb)
        server, env = start_server(work)
        env["PYTHONPATH"] = str(REPO)
        best: dict[tuple[str, str], tuple[float, float, float]] = {}
        try:
            for run in range(args.repeat):
                for where in ("disk", "s3"):
                    out = str(work / f"run{run}") if where == "disk" else f"s3://{BUCKET}/run{run}"
                    for name, command in commands(corpus, vocab, out, args.workers).items():
                        got = timed(command, env, server.pid if where == "s3" else None)
                        key = (name, where)
                        best[key] = min(best.get(key, got), got)
                    if run == 0:
                        digests = shard_digests(out, env)
                        if where == "disk":
                            reference = digests
                        elif digests != reference or not digests:
                            sys.exit("the shards on S3 differ from those on disk")
        finally:
            server.kill()
            server.wait()
    report(best, args, corpus_name(args.mb), len(reference))


def corpus_name(mb: float) -> str:
    shared = (SHARED / "enwiki_AA.txt.xz").is_file()
    return f"first {mb:g} MB of enwiki_AA" if shared else f"demo corpus, {mb:g} MB"


def report(best: dict, args: argparse.Namespace, corpus: str, shards: int) -> None:
    print(f"{corpus}, {args.workers} workers, best of {args.repeat}; the {shards} shards byte-identical on "
          "disk and on S3")
    print("| command | disk wall s | disk CPU s | S3 wall s | S3 CPU s | server CPU s | wall S3/disk | "
          "CPU S3/disk |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    totals = [0.0] * 5
    for name in ("build-pairs", "shard"):
        (dw, dc, _), (sw, sc, ss) = best[(name, "disk")], best[(name, "s3")]
        totals = [a + b for a, b in zip(totals, (dw, dc, sw, sc, ss), strict=True)]
        print(f"| {name} | {dw:.2f} | {dc:.2f} | {sw:.2f} | {sc:.2f} | {ss:.2f} | {sw / dw:.2f}x | "
              f"{sc / dc:.2f}x |")
    dw, dc, sw, sc, ss = totals
    print(f"| both | {dw:.2f} | {dc:.2f} | {sw:.2f} | {sc:.2f} | {ss:.2f} | **{sw / dw:.2f}x** | "
          f"**{sc / dc:.2f}x** |")
    print("command:", shlex.join([sys.executable, *sys.argv]))


if __name__ == "__main__":
    main()
