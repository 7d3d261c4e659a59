"""The training loop: `train(config) -> summary`. Single process, or one process per device under torchrun."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader

from corpusprep.engine import artifact
from corpusprep.engine.rng import rng_for
from corpusprep.errors import UsageError
from trainer import checkpoint
from trainer.config import TrainConfig
from trainer.data import ShardStream, open_shards
from trainer.model import BertForPreTraining, flops_per_token, pretraining_loss
from trainer.optim import build_optimizer, build_scheduler

# dense bf16 peak FLOP/s by device name, for MFU in the progress line (bench/train_gpu.py measures instead)
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "A10": 125e12}


@dataclass
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

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
    d = Dist(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)))
    if want_cuda:
        torch.cuda.set_device(d.local_rank)
    backend = "nccl" if want_cuda else "gloo"
    owned = d.world > 1 and not dist.is_initialized()  # a caller's own group is left to the caller
    if owned:
        dist.init_process_group(backend)
    try:
        yield d, torch.device("cuda", d.local_rank) if want_cuda else torch.device("cpu")
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


def log(d: Dist, message: str) -> None:
    if d.main:
        print(message, flush=True)


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def forward_loss(model: nn.Module, batch: dict[str, torch.Tensor], autocast) -> tuple:
    with autocast():
        mlm_logits, nsp_logits = model(
            batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], batch["mlm_positions"]
        )
    losses = pretraining_loss(mlm_logits, batch["mlm_labels"], nsp_logits, batch["nsp_labels"])
    return mlm_logits, nsp_logits, *losses


@torch.no_grad()
def evaluate(
    model: nn.Module, loader: DataLoader, max_batches: int, device, autocast, d: Dist
) -> dict[str, float]:
    """MLM loss/accuracy over masked tokens and NSP loss/accuracy over pairs, summed over all ranks."""
    model.eval()
    # mlm loss sum, correct, count; nsp loss sum, correct, count
    sums = torch.zeros(6, dtype=torch.float64, device=device)
    for i, batch in enumerate(loader):
        if max_batches and i >= max_batches:
            break
        batch = to_device(batch, device)
        mlm_logits, nsp_logits, _, mlm, nsp = forward_loss(model, batch, autocast)
        m, n = len(batch["mlm_labels"]), len(batch["nsp_labels"])
        mlm_correct = (mlm_logits.argmax(-1) == batch["mlm_labels"]).sum()
        nsp_correct = (nsp_logits.argmax(-1) == batch["nsp_labels"]).sum()
        sums += torch.stack(
            [mlm * m, mlm_correct, mlm.new_tensor(m), nsp * n, nsp_correct, nsp.new_tensor(n)]
        ).double()
    if d.world > 1:
        dist.all_reduce(sums)
    model.train()
    s = sums.tolist()
    return {
        "val_mlm_loss": s[0] / max(s[2], 1),
        "val_mlm_acc": s[1] / max(s[2], 1),
        "val_nsp_loss": s[3] / max(s[5], 1),
        "val_nsp_acc": s[4] / max(s[5], 1),
    }


class Metrics:
    """metrics.jsonl in the run dir (rank 0); on resume, records after the resumed step are dropped."""

    def __init__(self, run_dir: Path, enabled: bool, resume_step: int):
        self.path = run_dir / "metrics.jsonl"
        self.enabled = enabled
        if enabled and self.path.exists():
            lines = self.path.read_text().splitlines()
            keep = [line for line in lines if json.loads(line)["step"] <= resume_step]
            self.path.write_text("".join(line + "\n" for line in keep))

    def write(self, record: dict) -> None:
        if self.enabled:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")


def train(config: TrainConfig) -> dict:
    """Train until config.schedule.steps; returns {steps, losses/accuracies, run_dir, seconds, status}."""
    with distributed(config) as (d, device):
        return _train(config, d, device)


def _train(config: TrainConfig, d: Dist, device: torch.device) -> dict:
    started = time.time()
    run_dir = Path(config.logging.run_dir)
    if config.data.shards:
        artifact.check_not_nested(run_dir, [config.data.shards], "trainer")  # never write into its input
    owner = artifact.read_manifest(run_dir)
    if owner is not None and owner["kind"] != "train":
        raise UsageError(f"{run_dir}: holds corpusprep {owner['kind']}, not a training run; pick another one")
    found = checkpoint.latest(run_dir)
    if found is not None:
        saved_config = checkpoint.read_config(found).get("train", {})
        conflicts = checkpoint.resume_conflicts(saved_config, asdict(config))
        if conflicts:
            raise UsageError(
                f"{found}: saved with other settings ({'; '.join(conflicts[:3])}); use another run dir, or "
                "the settings it was started with"
            )
        saved = checkpoint.load(found, "trainer")
        if len(saved["batches"]) != d.world:
            raise UsageError(f"{found}: saved by {len(saved['batches'])} rank(s), not {d.world}; resume with "
                             "as many processes as it was started with")
        if saved["step"] >= config.schedule.steps:
            log(d, f"{run_dir}: finished at step {saved['step']} ({found.name}); nothing to do")
            summary = {"status": "done", "steps": saved["step"], "run_dir": str(run_dir), "seconds": 0.0}
            return summary | saved.get("last_metrics", {})
        if not config.checkpoint.resume:
            raise UsageError(
                f"{run_dir}: has checkpoints up to {found.name}; pass --resume or use another run dir"
            )
    shards = open_shards(config.data.shards, ("train", "validation"), verify=config.data.verify)
    has_validation = bool(shards.manifest["splits"].get("validation", {}).get("shards"))
    vocab = shards.manifest["vocab"]
    init_state = None
    if config.checkpoint.init_from:  # the architecture is the saved one (the weights load below)
        where = shards.directory / "manifest.json"
        bert, init_state, init_path = checkpoint.init_weights(
            config.checkpoint.init_from, config.model, shards.vocab.size, vocab.get("sha256"), where
        )
    else:
        bert = config.model.bert_config(shards.vocab.size)
    longest = int(shards.manifest.get("max_seq_length") or 0)
    if longest > bert.max_position:  # the position table has no row for the tokens beyond it
        raise UsageError(
            f"{shards.directory}: shards hold sequences of up to {longest} tokens, more than the model's "
            f"max_position {bert.max_position} (model.max_position)"
        )
    # one seed for torch (dropout, init), derived like every other draw; distinct per rank for dropout
    torch.manual_seed(int(rng_for(config.seed, "torch-init").integers(2**62)))
    raw_model = BertForPreTraining(bert).to(device)
    torch.manual_seed(int(rng_for(config.seed, "torch-dropout", d.rank).integers(2**62)))
    optimizer = build_optimizer(raw_model, config.optim, fused=device.type == "cuda")
    scheduler = build_scheduler(optimizer, config.schedule)
    step, batches = 0, 0
    if found is not None:  # resume: every state, then the data stream continues where it stopped
        saved = checkpoint.read_config(found)["model"]
        if saved != json.loads(json.dumps(asdict(bert))):
            raise UsageError(f"{found}: saved with another model config than the one requested")
        raw_model.load_state_dict(checkpoint.load(found, "model", device))
        optimizer.load_state_dict(checkpoint.load(found, "optimizer", device))
        scheduler.load_state_dict(checkpoint.load(found, "scheduler"))
        state = checkpoint.load(found, "trainer")
        step, batches = state["step"], state["batches"][d.rank]
        torch.set_rng_state(state["rng"][d.rank]["cpu"])
        if device.type == "cuda" and state["rng"][d.rank].get("cuda") is not None:
            torch.cuda.set_rng_state(state["rng"][d.rank]["cuda"])
        log(d, f"resumed from {found} at step {step}")
    elif init_state is not None:  # weights only, strictly; optimizer, schedule and data start afresh
        raw_model.load_state_dict(init_state)
        log(d, f"initialised from {init_path}")
    del init_state
    if d.main:  # only now: a run that fails at start leaves no empty run directory behind
        run_dir.mkdir(parents=True, exist_ok=True)
        checkpoint.remove_partial(run_dir)

    model: nn.Module = raw_model
    if d.world > 1:
        model = DistributedDataParallel(
            raw_model, device_ids=[d.local_rank] if device.type == "cuda" else None
        )
    if config.compile:
        # per block, as in torchtitan: the unpadding layout (data-dependent shapes) stays eager, the
        # token-wise math fuses; Module.compile() also keeps state_dict names free of `_orig_mod.`
        for block in [*raw_model.layers, raw_model.mlm_head]:
            block.compile(dynamic=True)
    autocast = (
        (lambda: torch.autocast("cuda", dtype=torch.bfloat16))
        if device.type == "cuda"
        else contextlib.nullcontext
    )

    c = config.data
    stream = ShardStream(
        shards,
        "train",
        c.batch_size,
        config.seed,
        d.rank,
        d.world,
        c.chunk_rows,
        c.pad_multiple,
        c.dynamic_masking,
        start_batch=batches,
    )
    loader_args = dict(
        batch_size=None,
        num_workers=c.num_workers,
        pin_memory=device.type == "cuda",
        persistent_workers=False,
        prefetch_factor=4 if c.num_workers else None,
    )
    # the DataLoader draws a base seed when iterated; its own generator keeps that out of the global RNG,
    # which dropout uses and checkpoints restore (otherwise a resumed run would drift by one draw)
    batches_iter = iter(DataLoader(stream, generator=torch.Generator(), **loader_args))

    def val_loader() -> DataLoader:
        val = ShardStream(
            shards,
            "validation",
            c.batch_size,
            config.seed,
            d.rank,
            d.world,
            c.chunk_rows,
            c.pad_multiple,
            shuffle=False,
            loop=False,
        )
        return DataLoader(val, batch_size=None, num_workers=0, generator=torch.Generator())

    log(d, "config:\n" + config.to_json())
    log(
        d,
        f"model: {raw_model.num_params(False) / 1e6:.2f}M parameters ({raw_model.num_params() / 1e6:.2f}M "
        f"non-embedding), {d.world} rank(s) on {device}, from step {step}",
    )
    metrics = Metrics(run_dir, d.main, step)
    peak = (
        next((v for k, v in PEAK_BF16.items() if k in torch.cuda.get_device_name(device)), None)
        if device.type == "cuda"
        else None
    )
    last: dict[str, float] = {}
    window = {"seqs": 0, "tokens": 0, "time": time.time()}

    def save_checkpoint() -> None:
        # every rank's data position and RNG state, gathered to rank 0 which writes
        rng = {
            "cpu": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state() if device.type == "cuda" else None,
        }
        mine = {"batches": batches, "rng": rng}
        gathered = [mine]
        if d.world > 1:
            gathered = [None] * d.world
            dist.all_gather_object(gathered, mine)
        if d.main:
            states = {
                "model": raw_model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "trainer": {
                    "step": step,
                    "batches": [g["batches"] for g in gathered],
                    "rng": [g["rng"] for g in gathered],
                    "last_metrics": last,
                },
            }
            checkpoint.save(
                run_dir, step, states, checkpoint.config_record(config, bert, vocab), config.checkpoint.keep
            )
        if d.world > 1:
            dist.barrier()

    accum = config.schedule.grad_accum
    model.train()
    while step < config.schedule.steps:
        totals = torch.zeros(3, device=device)
        for micro in range(accum):
            batch = to_device(next(batches_iter), device)
            batches += 1
            sync = micro == accum - 1 or d.world == 1
            with contextlib.nullcontext() if sync else model.no_sync():
                _, _, loss, mlm, nsp = forward_loss(model, batch, autocast)
                (loss / accum).backward()
            totals += torch.stack([loss.detach(), mlm.detach(), nsp.detach()]) / accum
            window["seqs"] += len(batch["nsp_labels"])
            window["tokens"] += int(batch["attention_mask"].sum())
        if config.optim.grad_clip > 0:
            grad_norm = float(nn.utils.clip_grad_norm_(raw_model.parameters(), config.optim.grad_clip))
        else:
            grad_norm = float("nan")
        lr = scheduler.get_last_lr()[0]
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1

        if step % config.logging.every == 0 or step == config.schedule.steps:
            loss, mlm, nsp = totals.tolist()
            if not math.isfinite(loss):
                raise FloatingPointError(f"step {step}: loss is {loss}; lower the lr or try --pre-ln")
            elapsed = max(time.time() - window["time"], 1e-9)
            seq_s, tok_s = window["seqs"] * d.world / elapsed, window["tokens"] * d.world / elapsed
            last = {"loss": loss, "mlm_loss": mlm, "nsp_loss": nsp}
            record = {
                "step": step,
                "loss": loss,
                "mlm_loss": mlm,
                "nsp_loss": nsp,
                "lr": lr,
                "grad_norm": grad_norm,
                "seq_per_s": seq_s,
                "tokens_per_s": tok_s,
            }
            line = (
                f"step {step:>6} | loss {loss:.4f} (mlm {mlm:.4f} nsp {nsp:.4f}) | lr {lr:.2e} | "
                f"{seq_s:,.0f} seq/s {tok_s:,.0f} tok/s"
            )
            if peak:
                seq_len = window["tokens"] / max(window["seqs"], 1)
                record["mfu"] = tok_s * flops_per_token(bert, round(seq_len)) / (peak * d.world)
                line += f" | MFU {record['mfu']:.1%}"
            metrics.write(record)
            log(d, line)
            window = {"seqs": 0, "tokens": 0, "time": time.time()}
        evaluate_now = config.eval.every and step % config.eval.every == 0
        if has_validation and (evaluate_now or step == config.schedule.steps):
            scores = evaluate(model, val_loader(), config.eval.max_batches, device, autocast, d)
            last |= scores
            metrics.write({"step": step, **scores})
            log(d, f"step {step:>6} | validation " + " ".join(f"{k[4:]} {v:.4f}" for k, v in scores.items()))
        if step % config.checkpoint.every == 0 or step == config.schedule.steps:
            save_checkpoint()

    seconds = time.time() - started
    digest = weights_digest(raw_model)
    if d.world > 1:  # data parallel means identical replicas: check it once, at the end
        digests = [None] * d.world
        dist.all_gather_object(digests, digest)
        if len(set(digests)) != 1:
            raise RuntimeError(f"ranks ended with different weights: {digests}")
    log(d, f"done: {step} steps in {seconds:.1f}s; checkpoints in {checkpoint.checkpoint_dir(run_dir)}")
    summary = {"status": "trained", "steps": step, "run_dir": str(run_dir), "seconds": seconds}
    return summary | last | {"weights_sha256": digest}


def weights_digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()
