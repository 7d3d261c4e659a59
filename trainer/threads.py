"""How many threads CPU training uses and how they wait: one policy for every training entry point
(`python -m trainer.run`, a pipeline's train stage), applied before torch is imported.

torch runs its CPU kernels on an OpenMP team as wide as the machine. By default GNU OpenMP's idle threads
spin for a while before sleeping, so when another process holds one of the cores the team's threads spin
at each of the thousands of small barriers a step of a small model has, waiting for the one thread that
shares its core: measured on a 2-core machine, the CPU recipe trained 13x slower beside one single-threaded
process. Passive waiting (threads sleep at once) gives a busy core back to its other process, so a shared
machine costs about its share (bench/cpu_threads.py measures both policies). The team is as wide as the
cores this process may use (its CPU affinity and its control group's quota: a container's 2 CPUs, not the
host's 64), divided among the processes torchrun starts on this machine.

An explicit OMP_NUM_THREADS or OMP_WAIT_POLICY in the environment wins. OpenMP reads its environment when
torch loads it, so `configure` must run before torch is imported to set the waiting policy (the thread
count is applied either way); it says so when it is too late.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

WAIT_POLICY = "PASSIVE"  # OpenMP's: idle threads sleep instead of spinning
CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")  # "QUOTA PERIOD" or "max PERIOD"
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def cgroup_cpus() -> float | None:
    """The CPUs this process's control group may use (its quota over its period); None without a quota."""
    fields = _read(CGROUP_V2).split()
    quota, period = (fields + ["", ""])[:2] if fields else (_read(CGROUP_V1[0]), _read(CGROUP_V1[1]))
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:  # "max", absent or unreadable: no quota
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by its control group's quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpus()
    return max(1, min(cores, math.ceil(quota)) if quota else cores)


def _explicit_threads() -> int | None:
    try:
        value = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:  # unset, or a list such as "4,2" (nested teams): OpenMP's own reading applies
        return None
    return value if value >= 1 else None


def thread_count(processes: int = 1) -> int:
    """Threads for one training process: OMP_NUM_THREADS when set, else the available cores shared among
    the `processes` of this machine."""
    return _explicit_threads() or max(1, available_cores() // max(1, processes))


def set_wait_policy() -> None:
    """OpenMP's waiting policy for this process and its children, unless the environment sets one: call it
    before torch is imported (a command's first lines)."""
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)


def configure(processes: int | None = None) -> tuple[int, str]:
    """Apply the policy to this process and return (threads, a line saying what was chosen). `processes`:
    training processes on this machine (default: torchrun's LOCAL_WORLD_SIZE, else 1)."""
    if processes is None:
        local = os.environ.get("LOCAL_WORLD_SIZE", "")
        processes = int(local) if local.isdigit() else 1
    late = "torch" in sys.modules and "OMP_WAIT_POLICY" not in os.environ  # OpenMP kept its default
    if not late:
        set_wait_policy()
    threads = thread_count(processes)
    import torch

    torch.set_num_threads(threads)
    policy = os.environ.get("OMP_WAIT_POLICY") or "OpenMP's default"
    note = " (torch was imported first: too late to set it)" if late else ""
    return threads, f"CPU threads: {threads} of {available_cores()} core(s), OpenMP waiting {policy}{note}"
