"""docs/cluster.md's rehearsal, run as written: a Ray cluster of three `ray start` processes on this machine
(a head that runs no task, two worker nodes), each with a temp directory, a working directory and a TMPDIR of
its own; the corpus, the vocab, the pairs and the shards on an S3 server (moto's, on 127.0.0.1: the
`s3_server` fixture); vocab, build-pairs and shard through corpusprep's Ray engine; then two CPU ranks under
`torchrun` training from the `s3://` shards.

What it checks:
- every command of the doc's block exits 0 (one bash script, as a user types them);
- vocab, pairs and shards are byte-identical, file for file, to a one-machine run of the same commands with
  `--engine local --workers 1` instead of the Ray cluster, written to the same URLs (downloaded and removed
  before the cluster's run): all but the lease (it names its writer) and the vocab's records (timings);
- the tasks ran on the two worker nodes, both of them, for both stages, the head none, and no process of a
  node touched a local path of another node or of the driver: each Python process of a node records the
  paths it hands to corpusprep's storage seam (the audit event `corpusprep.storage`: pyarrow's reads and
  writes too) or opens with Python (tests/rehearsal_audit/sitecustomize.py, on the nodes' PYTHONPATH), and
  every local one must lie in the node's own directories;
- training read the shards from S3 (fetched into the ranks' cache under the driver's TMPDIR, each named by
  the manifest's sha256), ran 2 ranks for 4 steps and saved step 4; the ranks agree on the weights (the
  trainer gathers every rank's weights digest at the end and fails the run when they differ);
- no process of the cluster outlives the doc's last line (`kill` of the three nodes); on a failure the test
  stops what is left, by process id (the nodes' processes carry the rehearsal's log directory in their
  environment), never with `ray stop`, which would stop every Ray process of the machine.

What it does not cover: nodes on other machines and a network between them (every node here has the same
corpusprep installation at the same path, and 127.0.0.1), a node lost mid-run (the Ray engine's task
retries, `max_retries=2`, are tested nowhere), GPUs, and the reading of the corpus by more than one process:
the driver's read phase reads it from S3 once and cuts it into chunks on S3, which the tasks then read.

What the test adds to the doc's commands: the variables the doc asks for, each `ray start` started in its
node's own directory with the audit on its PYTHONPATH, and a trap that stops the nodes if a command fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from corpusprep.demo_corpus import iter_demo_documents
from corpusprep.engine import storage
from corpusprep.engine.lock import LOCK_NAME
from tests.conftest import REPO, local_ray
from tests.test_readme_commands import commands, fenced_blocks
from trainer.cache import cache_folder

DOC = REPO / "docs" / "cluster.md"
SECTION = "Rehearsal on one machine"
AUDIT = REPO / "tests" / "rehearsal_audit"
NODES = ("head", "node1", "node2")
WORKER_NODES = NODES[1:]
RAY_OPTIONS = re.compile(r"--engine ray --ray-address \S+")


def rehearsal() -> list[str]:
    """The commands of the doc's rehearsal block, a line continued with `\\` joined to the next."""
    (code,) = [code for language, code in fenced_blocks(DOC.read_text(), SECTION) if language == "bash"]
    return commands(code.replace("\\\n", ""))


def node_line(line: str, root: Path) -> str:
    """A `... --temp-dir $NODES/NAME ... &` line run from the node's own directory, with its own TMPDIR and
    the audit on its PYTHONPATH; `exec`, so that the doc's `kill %N` reaches `ray start` itself."""
    name = re.search(r"--temp-dir \$NODES/(\w+)", line)[1]
    home = root / "disks" / name
    (home / "tmp").mkdir(parents=True)
    command = line.removesuffix("&").strip()
    return (f"(cd {home} && TMPDIR={home / 'tmp'} CORPUSPREP_REHEARSAL_NODE={name} PYTHONPATH={AUDIT} "
            f"exec {command}) &")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_corpus(url: str) -> None:
    """0.4 MB of the demo corpus as three JSONL files under `url`, nowhere else."""
    lines = [json.dumps({"text": text}) + "\n" for _, text in iter_demo_documents(0.4)]
    for i in range(3):
        storage.write_bytes(f"{url}/part-{i}.jsonl", "".join(lines[i::3]).encode())


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file()}


def ours(log_dir: Path) -> list[int]:
    """The processes alive now whose environment holds this rehearsal's log directory: the nodes' (Ray
    renames its workers' command lines, not their environments)."""
    mark = f"CORPUSPREP_REHEARSAL_LOG={log_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if mark in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours to read
                continue
    return found


def stop(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def touched(log_dir: Path) -> dict[str, list[tuple[str, str]]]:
    """node -> [(event, path)] from the audit logs of its processes."""
    found: dict[str, list[tuple[str, str]]] = {name: [] for name in NODES}
    for log in sorted(log_dir.glob("*.jsonl")):
        node = log.name.split("-")[0]
        for line in log.read_text().splitlines():
            event, path, _pid = json.loads(line)
            found[node].append((event, path))
    return found


def check_no_foreign_paths(found: dict[str, list[tuple[str, str]]], root: Path, data: str) -> None:
    """Every worker node ran tasks of both stages (its processes handed pairs and shards paths under `data`
    to the storage seam), the head none; no node's process touched a local path under `root` outside its own
    directories (its temp dir and its disk: cwd and TMPDIR)."""
    for node, paths in found.items():
        own = [f"{root / 'nodes' / node}/", f"{root / 'disks' / node}/"]
        for _, path in paths:
            assert storage.scheme_of(path) or any(path.startswith(p) for p in own), (node, path)
        seam = {storage.url(path) for event, path in paths if event == "corpusprep.storage"}
        for stage in ("pairs", "shards"):
            ran = any(path.startswith(f"{data}/{stage}/") for path in seam)
            assert ran == (node in WORKER_NODES), (node, stage, sorted(seam)[:20])


@pytest.fixture
def short_root():
    """A short directory in /tmp: Ray puts Unix sockets under each node's temp dir, and a socket's path
    must stay under 108 bytes (pytest's tmp_path is too deep)."""
    root = Path(tempfile.mkdtemp(prefix="rehearsal-", dir="/tmp" if Path("/tmp").is_dir() else None))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def environment(root: Path, s3_dir: str) -> dict[str, str]:
    """The variables the doc's block expects, the driver's TMPDIR, and the audit's settings."""
    return os.environ | {
        "CORPUS": f"{s3_dir}/corpus", "DATA": f"{s3_dir}/data", "RUNS": str(root / "runs"),
        "NODES": str(root / "nodes"), "RAY_PORT": str(free_port()), "TMPDIR": str(root / "driver" / "tmp"),
        "RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1",
        "CORPUSPREP_REHEARSAL_LOG": str(root / "audit"), "CORPUSPREP_REHEARSAL_ROOT": str(root),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }


def bash(lines: list[str], root: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", "\n".join(["set -euo pipefail", *lines])], cwd=root / "driver",
                          env=env, capture_output=True, text=True, timeout=900)


def download(url: str, local: Path, *, remove: bool = False) -> Path:
    """Every object under `url` as a file under `local` (then deleted from the store if `remove`)."""
    fs = pytest.importorskip("s3fs").S3FileSystem(skip_instance_cache=True)
    prefix = url.removeprefix("s3://")
    for key in fs.find(prefix):
        target = local / key.removeprefix(f"{prefix}/")
        target.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(key, str(target))
    if remove:
        fs.rm(prefix, recursive=True)
    return local


def one_machine(lines: list[str], root: Path, env: dict[str, str]) -> Path:
    """The doc's corpusprep commands with the local engine and one worker instead of the cluster, into the
    same DATA, then moved aside (to root/local): even the records that name their outputs must match."""
    local = [
        RAY_OPTIONS.sub("--engine local --workers 1", line) for line in lines if line.startswith("corpusprep")
    ]
    done = bash(local, root, env)
    assert done.returncode == 0, done.stderr[-3000:]
    return download(env["DATA"], root / "local", remove=True)


def on_the_cluster(lines: list[str], root: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The doc's block as one script; afterwards no process of the nodes may be left (any that is, is
    stopped by its id, and the test fails)."""
    script = ["trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT"]  # a command failed: stop the nodes
    script += [node_line(line, root) if line.startswith("ray start") else line for line in lines]
    try:
        done = bash(script, root, env)
    finally:
        time.sleep(1)  # the nodes' processes end a moment after `ray start` has
        left = ours(root / "audit")
        stop(left)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-4000:]}"
    assert not left, f"processes outlived the rehearsal: {left}"
    return done


def assert_same_outputs(cluster_dir: Path, local_dir: Path) -> None:
    """Every file the same but the lease (it names its writer) and the vocab's records (its timings:
    the driver trains the vocab in both runs, no engine involved)."""
    timed = {"vocab": {"artifact.json", "vocab_report.json"}}
    for output in ("vocab", "pairs", "shards"):
        cluster, one = files_of(cluster_dir / output), files_of(local_dir / output)
        assert sorted(cluster) == sorted(one), output
        differ = {name for name in cluster if cluster[name] != one[name]}
        assert differ <= {LOCK_NAME, *timed.get(output, ())}, (output, differ)
    shards = files_of(cluster_dir / "shards")
    assert sum(name.startswith("train/") and name.endswith(".parquet") for name in shards) == 4
    pairs = files_of(cluster_dir / "pairs")
    assert sum(name.endswith(".parquet") for name in pairs) >= 6, sorted(pairs)  # tasks for two nodes


def assert_trained_from_s3(done: subprocess.CompletedProcess, root: Path, shards: Path) -> None:
    manifest = json.loads((shards / "manifest.json").read_text())
    cache = root / "driver" / "tmp" / cache_folder()
    fetched = {p.name.removesuffix(".parquet") for p in cache.glob("*.parquet")}
    digests = {entry["sha256"] for split in manifest["splits"].values() for entry in split["shards"]}
    assert fetched and fetched <= digests, (fetched, digests)  # 4 steps need not reach every shard
    out = done.stdout + done.stderr
    assert "2 rank(s) on cpu" in out and "done: 4 steps" in out, out[-3000:]
    assert (root / "runs" / "rehearsal" / "checkpoints" / "step-0000004").is_dir()


@pytest.mark.slow  # 60 s alone, 98 s beside other tests (-n 2, 2 shared cores, load 5): 3 Ray nodes, 2 ranks
@pytest.mark.xdist_group("ray")
def test_the_docs_rehearsal_runs_on_three_ray_nodes_and_two_ranks(s3_dir, short_root):
    local_ray()
    lines = rehearsal()
    assert sum(line.startswith("ray start") for line in lines) == 3 and lines[-1].startswith("kill %1 %2 %3")
    root = short_root
    for name in ("driver/tmp", "audit", "runs"):
        (root / name).mkdir(parents=True)
    write_corpus(f"{s3_dir}/corpus")
    env = environment(root, s3_dir)
    local = one_machine(lines, root, env)
    done = on_the_cluster(lines, root, env)
    cluster = download(env["DATA"], root / "cluster")
    assert_same_outputs(cluster, local)
    check_no_foreign_paths(touched(root / "audit"), root, env["DATA"])
    assert_trained_from_s3(done, root, cluster / "shards")


def test_the_audit_records_what_a_process_touches(tmp_path):
    """The nodes' audit (tests/rehearsal_audit) sees a path handed to the storage seam and one opened with
    Python, under the root only; the check of its records flags a node touching another's directory and a
    worker node that ran no task."""
    (tmp_path / "audit").mkdir()
    code = (
        "from corpusprep.engine import storage; storage.is_file(r'{0}/seam'); open(r'{0}/x', 'w').close();"
        "storage.is_file('/elsewhere')"
    ).format(tmp_path / "disks" / "node1")
    (tmp_path / "disks" / "node1").mkdir(parents=True)
    env = os.environ | {
        "PYTHONPATH": str(AUDIT),
        "CORPUSPREP_REHEARSAL_LOG": str(tmp_path / "audit"),
        "CORPUSPREP_REHEARSAL_NODE": "node1",
        "CORPUSPREP_REHEARSAL_ROOT": str(tmp_path),
    }
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    found = touched(tmp_path / "audit")
    mine = tmp_path / "disks" / "node1"
    assert found["node1"] == [("corpusprep.storage", f"{mine}/seam"), ("open", f"{mine}/x")]
    data = "s3://bucket/data"
    ran = [("corpusprep.storage", "s3:/bucket/data/pairs/a"), ("corpusprep.storage", f"{data}/shards/b")]
    check_no_foreign_paths({"head": [], "node1": ran + found["node1"], "node2": ran}, tmp_path, data)
    elsewhere = ("open", f"{tmp_path}/disks/node2/x")  # another node's disk
    with pytest.raises(AssertionError, match="node1"):
        check_no_foreign_paths({"head": [], "node1": [*ran, elsewhere], "node2": ran}, tmp_path, data)
    with pytest.raises(AssertionError, match="node2"):  # ran no shard task
        check_no_foreign_paths({"head": [], "node1": ran, "node2": ran[:1]}, tmp_path, data)
    with pytest.raises(AssertionError, match="head"):  # ran a task
        check_no_foreign_paths({"head": ran, "node1": ran, "node2": ran}, tmp_path, data)
