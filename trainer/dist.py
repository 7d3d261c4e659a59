"""Distributed set-up: this process's rank, world and device (`Dist`), and the process group it joins for
a run under torchrun (`distributed`), left cleanly however the run ends. Single process: rank 0 of 1."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from corpusprep.errors import UsageError
from trainer.config import TrainConfig


@dataclass
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    launched: bool = False  # in a process group (torchrun), so training goes through DDP, even at world 1

    @property
    def main(self) -> bool:
        return self.rank == 0


@contextlib.contextmanager
def distributed(config: TrainConfig) -> Iterator[tuple[Dist, torch.device]]:
    """This process's rank and device; under torchrun (WORLD_SIZE > 1) it joins the process group (NCCL on
    GPU, gloo on CPU) for the run and leaves it cleanly: a gloo group still alive at interpreter exit
    aborts the process ("terminate called without an active exception", exit -6)."""
    want_cuda = config.device == "cuda" or (config.device == "auto" and torch.cuda.is_available())
    if config.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("device=cuda but no CUDA device is available")
    env = os.environ
    ranks = Dist(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)))
    # under torchrun even one process joins a group and trains through DDP: the path of N ranks, on 1
    ranks.launched = ranks.world > 1 or "TORCHELASTIC_RUN_ID" in env
    if want_cuda:
        torch.cuda.set_device(ranks.local_rank)
    backend = "nccl" if want_cuda else "gloo"
    owned = ranks.launched and not dist.is_initialized()  # a caller's own group is left to the caller
    if owned:
        dist.init_process_group(backend)
    try:
        yield ranks, torch.device("cuda", ranks.local_rank) if want_cuda else torch.device("cpu")
    except BaseException:
        # gloo's destroy closes this rank's connections, so peers waiting in a collective fail at once; NCCL's
        # would wait for those peers (a hang), so there torchrun's teardown of the failed job does it
        if owned and backend == "gloo":
            dist.destroy_process_group()
        raise
    if owned:
        # DDP's reducer sits in reference cycles: free it while its group is alive (freed at interpreter exit,
        # after the group, it aborts the process), and let every rank arrive before the group goes.
        gc.collect()
        dist.barrier()
        dist.destroy_process_group()


def log(ranks: Dist, message: str) -> None:
    if ranks.main:
        print(message, flush=True)
