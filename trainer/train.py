"""Training, from small parts (as torchtitan): builders for the model and the data, and a `Trainer` whose
`train_step`, `evaluate`, `state_dict` / `load_state_dict` and `save_checkpoint` can be read and tested
alone; `Trainer.fit` is the loop. The objective (the sentence head and its loss, or none) comes from the
shards' manifest. Single process, or one process per device under torchrun.

What the loop uses lives beside it, one job a module: the ranks and devices (trainer.dist), the shards and
their stream (trainer.shards, trainer.data), a batch through the model (trainer.batch), the validation
statistics (trainer.validation), where a run starts from (trainer.resume: the run dir's rules, resume,
init_from) and the checkpoint format (trainer.checkpoint)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from corpusprep.engine import records, storage
from corpusprep.engine.lock import LOCK_NAME, exclusive_dir, shared_dir
from corpusprep.engine.placement import in_running_pipeline
from corpusprep.engine.rng import rng_for
from corpusprep.errors import DataError, UsageError
from corpusprep.mask import MaskVocab
from trainer import checkpoint
from trainer.batch import forward_loss, to_device
from trainer.checkpoint_checks import check_schedule, check_state, data_position, optimizer_state
from trainer.config import TrainConfig, parse_duration
from trainer.data import Position, ShardStream, loader_batches
from trainer.dist import Dist, distributed, log
from trainer.model import BertConfig, BertForPreTraining, compile_model, flops_per_token
from trainer.optim import build_optimizer, build_scheduler, lr_at_step, micro_batches
from trainer.resume import (
    SENTENCE_HEAD,
    Finished,
    check_resume_shards,
    check_run_dir,
    find_resume,
    init_weights,
    shards_record,
)
from trainer.shards import Shards, cache_for, open_shards
from trainer.validation import ratio_moments, ratio_se, score_rows

# dense bf16 peak FLOP/s by device name, for MFU in the progress line (bench/train_gpu.py measures instead)
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "A10": 125e12}


def new_window() -> dict:
    """What a progress record sums over its steps: sequences, tokens and losses, since `time`."""
    return {"seqs": 0, "tokens": 0, "time": time.time(), "steps": 0, "losses": {}}


class Metrics:
    """metrics.jsonl in the run dir (rank 0); on resume, records after the resumed step are dropped."""

    def __init__(self, run_dir: Path, enabled: bool, resume_step: int):
        self.path = run_dir / "metrics.jsonl"
        self.enabled = enabled
        if enabled and storage.exists(self.path):
            lines = records.read_bytes(self.path).decode("utf-8", "replace").splitlines()
            keep = [line for line in lines if _step(line) <= resume_step]
            storage.write_text(self.path, "".join(line + "\n" for line in keep))

    def write(self, record: dict) -> None:
        if self.enabled:
            with storage.open_file(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")


def _step(line: str) -> float:
    """The step of a metrics record; infinite (dropped on resume) for a line a kill cut short."""
    try:
        step = records.parse_json(line, "metrics.jsonl")["step"]
    except (DataError, KeyError, TypeError):
        return math.inf
    return step if isinstance(step, (int, float)) and not isinstance(step, bool) else math.inf


# ---------------------------------------------------------------- builders


def build_model(
    config: TrainConfig, shards: Shards, device: torch.device, rank: int
) -> tuple[BertConfig, BertForPreTraining, dict | None, Path | None]:
    """The model for these shards (vocab size, objective's head), initialised from the seed, and the
    weights of checkpoint.init_from (loaded later, after a resume had its say) with their path."""
    init_state = init_path = None
    if config.checkpoint.init_from:  # the architecture is the saved one (the weights load below)
        where = shards.directory / "manifest.json"
        vocab_size, vocab_sha = shards.vocab.size, shards.manifest["vocab"].get("sha256")
        bert, init_state, init_path = init_weights(
            config.checkpoint.init_from, config.model, vocab_size, vocab_sha, where, shards.objective.name
        )
    else:
        try:
            bert = config.model.bert_config(shards.vocab.size, shards.objective.name)
        except ValueError as e:  # with the shards' vocab, more than the machine holds (config.check_fits)
            raise UsageError(f"config: {e}") from None
    longest = int(shards.manifest.get("max_seq_length") or 0)
    if longest > bert.max_position:  # the position table has no row for the tokens beyond it
        raise UsageError(
            f"{shards.directory}: shards hold sequences of up to {longest} tokens, more than the model's "
            f"max_position {bert.max_position} (model.max_position)"
        )
    # one seed for torch (dropout, init), derived like every other draw; distinct per rank for dropout
    torch.manual_seed(int(rng_for(config.seed, "torch-init").integers(2**62)))
    model = BertForPreTraining(bert).to(device)
    torch.manual_seed(int(rng_for(config.seed, "torch-dropout", rank).integers(2**62)))
    return bert, model, init_state, init_path


def build_data(
    config: TrainConfig, shards: Shards, ranks: Dist, device: torch.device, start: Position
) -> Iterator[dict[str, torch.Tensor]]:
    """This rank's endless stream of training batches, continuing at `start`."""
    data = config.data
    stream = ShardStream(shards, "train", data, config.seed, ranks.rank, ranks.world, start=start)
    # the DataLoader draws a base seed when iterated; its own generator keeps that out of the global RNG,
    # which dropout uses and checkpoints restore (otherwise a resumed run would drift by one draw)
    return loader_batches(
        stream, num_workers=data.num_workers, pin_memory=device.type == "cuda", persistent_workers=False,
        prefetch_factor=4 if data.num_workers else None, generator=torch.Generator(),
    )


# ---------------------------------------------------------------- the trainer


class Trainer:
    """Model, optimizer, schedule and data for one rank, and the parts of a run: `train_step`, `evaluate`,
    `state_dict` / `load_state_dict`, `save_checkpoint`. `fit` is the loop.

    `elapsed` is the run's training time by `clock` (seconds; injected by tests): the time inside
    `train_step` only, so evaluation and checkpoint writes never count against a budget. It is saved in
    every checkpoint, so a resumed run continues the same time schedule."""

    def __init__(
        self, config: TrainConfig, ranks: Dist, device: torch.device,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.config, self.ranks, self.device, self.clock = config, ranks, device, clock
        self.run_dir = Path(config.logging.run_dir)
        self.resume_from = find_resume(config, ranks)
        self.shards = open_shards(config.data.shards, ("train", "validation"), verify=config.data.verify,
                                  cache=cache_for(config.data))
        self.objective = self.shards.objective
        if self.resume_from is not None:
            check_resume_shards(self.resume_from, shards_record(self.shards), self.shards.directory)
        self.bert, self.raw_model, init_state, init_path = build_model(config, self.shards, device,
                                                                       ranks.rank)
        self.optimizer = build_optimizer(self.raw_model, config.optim, fused=device.type == "cuda")
        # fused AdamW takes found_inf (a GradScaler's flag): a non-finite step is skipped on the device
        self.skips_on_device = bool(getattr(self.optimizer, "defaults", {}).get("fused"))
        self.nonfinite = torch.zeros(4, device=device)  # [step, loss, grad norm, lr]: the first skipped
        self.step, self.elapsed, self.position, self.last = 0, 0.0, Position(), {}
        self.epoch_examples = self.shards.examples("train")  # what a Position counts in
        self.scheduler = build_scheduler(self.optimizer, config.schedule, self.progress)
        every_time = config.checkpoint.every_time
        self.checkpoint_seconds = parse_duration(every_time) if every_time else None
        self.last_batch: dict | None = None  # the newest micro-batch: save_checkpoint tries the weights on it
        if self.resume_from is not None:  # every state, then the data stream continues where it stopped
            self.load_state_dict(self.resume_from)
            log(ranks, f"resumed from {self.resume_from} at step {self.step}")
        elif init_state is not None:  # weights only; optimizer, schedule and data start afresh
            missing, unexpected = self.raw_model.load_state_dict(init_state, strict=False)
            if any(not k.startswith(SENTENCE_HEAD) for k in [*missing, *unexpected]):
                raise DataError(f"{init_path}: weights do not fit the model ({[*unexpected, *missing][:3]})")
            if missing:  # init_from a model of another objective: this objective's head starts fresh
                log(ranks, f"sentence head of the {self.objective.name} objective starts fresh")
            if unexpected:  # init_from a model with a sentence head, for masked LM alone
                unused = ", ".join(sorted(unexpected))
                log(ranks, f"not used by the {self.objective.name} objective: {unused}")
            log(ranks, f"initialised from {init_path}")
        del init_state
        if ranks.main:  # only now: a run that fails at start leaves no empty run directory behind
            storage.makedirs(self.run_dir)
            checkpoint.remove_partial(self.run_dir)
        self.model: nn.Module = self.raw_model
        if ranks.launched:
            self.model = DistributedDataParallel(
                self.raw_model, device_ids=[ranks.local_rank] if device.type == "cuda" else None
            )
        if config.compile:  # in place, under DDP's wrapper: one graph, forward and backward
            compile_model(self.raw_model)
        cuda = device.type == "cuda"
        self.autocast = (
            (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if cuda else contextlib.nullcontext
        )
        self.batches = build_data(config, self.shards, ranks, device, self.position)
        self.has_validation = bool(self.shards.manifest["splits"].get("validation", {}).get("shards"))
        self.eval_maskings = config.eval.maskings
        self.eval_mask_vocab = self._eval_masking() if self.has_validation else None
        self.metrics = Metrics(self.run_dir, ranks.main, self.step)
        self.window = new_window()

    def _eval_masking(self) -> MaskVocab | None:
        """What evaluation masks the validation rows with: the vocab's tables (eval.maskings >= 1), or
        None, for the shard stage's own masking (eval.maskings = 0, or shards without their vocab)."""
        if not self.eval_maskings:
            return None
        try:
            return MaskVocab.from_vocab(self.shards.vocab_info(), self.shards.word_segmenter())
        except UsageError as e:  # shards from before the vocab copy: still a score, said to be one masking
            log(self.ranks, f"validation: the shards' one masking, not {self.eval_maskings} ({e})")
            self.eval_maskings = 0
            return None

    # -------------------------------------------------------- the parts

    def train_step(self) -> dict[str, torch.Tensor | float]:
        """One optimizer step over grad_accum micro-batches (fewer early on with a batch ramp: every rank
        takes as many, its progress the same); returns the step's mean losses and grad norm (0-d tensors on
        the device: read on the host only at logging steps, `log_progress`) and the lr.

        A loss or gradient norm that is not finite never reaches the weights. Where the optimizer can skip
        a step on the device (fused AdamW, the CUDA default, through `found_inf` as under a GradScaler) the
        step stays free of host reads: the update is skipped there, the first such step is noted on the
        device, and `check_finite` raises at the next logging step or checkpoint. Elsewhere (the CPU, where
        a host read costs nothing; LAMB) the step raises at once."""
        # grad_accum, or the ramp's
        accum, ranks = micro_batches(self.progress(), self.config.schedule), self.ranks
        started = self.clock()
        totals = torch.zeros(3, device=self.device)
        for micro in range(accum):
            batch = self.last_batch = to_device(next(self.batches), self.device)
            # every rank's micro-batch holds data.batch_size examples: the global order moves on by all ranks'
            self.position.advance(len(batch["rows"]) * ranks.world, self.epoch_examples)
            sync = micro == accum - 1 or ranks.world == 1
            with contextlib.nullcontext() if sync else self.model.no_sync():
                _, _, loss, mlm, sentence = forward_loss(self.model, batch, self.autocast)
                (loss / accum).backward()
            sentence = mlm.new_zeros(()) if sentence is None else sentence.detach()
            totals += torch.stack([loss.detach(), mlm.detach(), sentence]) / accum
            self.window["seqs"] += len(batch["rows"])
            self.window["tokens"] += batch["num_tokens"]
        clip = self.config.optim.grad_clip
        params = self.raw_model.parameters()
        grad_norm = nn.utils.clip_grad_norm_(params, clip) if clip > 0 else totals.new_full((), math.nan)
        lr = self.scheduler.get_last_lr()[0]
        # the norm of the all-reduced gradients is the same on every rank: every rank skips the same steps
        bad = ~totals[0].isfinite() | (~grad_norm.isfinite() if clip > 0 else False)
        self._guard_nonfinite(bad, totals[0], grad_norm, lr)
        self.optimizer.step()
        self.step += 1
        self.elapsed = self._agreed(self.elapsed + self.clock() - started)
        self.scheduler.step()  # the next step's lr: by step, or by the progress just measured
        self.optimizer.zero_grad(set_to_none=True)
        losses = {"loss": totals[0], "mlm_loss": totals[1], **self._sentence({"loss": totals[2]})}
        self.window["steps"] += 1  # the progress record gives the losses' mean over its window of steps
        self.window["losses"] = {k: self.window["losses"].get(k, 0.0) + v for k, v in losses.items()}
        return {**losses, "lr": lr, "grad_norm": grad_norm}

    def _guard_nonfinite(self, bad: torch.Tensor, loss: torch.Tensor, grad_norm: torch.Tensor, lr: float):
        """Keep a non-finite step out of the weights (`train_step`): on the device, or by raising now."""
        if not self.skips_on_device:
            if bool(bad):
                raise self.nonfinite_error(self.step + 1, float(loss), float(grad_norm), lr)
            return
        self.optimizer.found_inf = bad.float()  # fused AdamW: no update, and its step count stays
        step, lr_now = loss.new_full((), self.step + 1), loss.new_full((), lr)  # fill kernels, no copy
        noted = torch.stack([step, loss, grad_norm.float(), lr_now])
        self.nonfinite = torch.where(bad & (self.nonfinite[0] == 0), noted, self.nonfinite)

    def check_finite(self) -> None:
        """Raise for the first step whose loss or gradient norm was not finite (skipped on the device)."""
        step, loss, grad_norm, lr = self.nonfinite.tolist()
        if step:
            raise self.nonfinite_error(int(step), loss, grad_norm, lr)

    def nonfinite_error(self, step: int, loss: float, grad_norm: float, lr: float) -> DataError:
        what = f"the loss is {loss}" if not math.isfinite(loss) else f"the gradient norm is {grad_norm}"
        return self.diverged_error(f"step {step}: {what}", lr, "a step after it")

    def progress(self) -> float:
        """How far the run is, 0 to 1 (a budgeted schedule's clock; see ScheduleConfig.progress)."""
        return self.config.schedule.progress(self.step, self.elapsed)

    def _agreed(self, elapsed: float) -> float:
        """The training time every rank goes by: the slowest rank's, where time decides the lr, the stop or
        a checkpoint (ranks that disagreed would train with other lrs, or wait for each other forever)."""
        timed = self.config.schedule.budget or self.checkpoint_seconds
        if self.ranks.world == 1 or not timed:
            return elapsed
        value = torch.tensor([elapsed], dtype=torch.float64, device=self.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return float(value.item())

    def _sentence(self, values: dict[str, float], prefix: str = "") -> dict[str, float]:
        """Sentence-task metrics named by the objective (nsp_loss, val_sop_acc); none without one."""
        if not self.bert.sentence_head:
            return {}
        return {f"{prefix}{self.objective.name}_{k}": v for k, v in values.items()}

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """MLM loss and accuracy over masked tokens, and the sentence task's over rows, on the validation
        rows masked `eval.maskings` times afresh (masking k drawn from (seed, "eval", k), so every
        evaluation of every run with this seed sees the same masks), summed over all ranks; with standard
        errors of the accuracies (`ratio_se`: rows as the unit, each row's counts summed over maskings).
        `eval.maskings = 0`: the one masking the shard stage wrote."""
        ranks = self.ranks
        self.model.eval()
        rows = self._evaluate_masking(0)
        for k in range(1, self.eval_maskings):  # the same rows in the same order, masked otherwise
            rows += self._evaluate_masking(k)
        # per row: mlm loss sum, correct, masked tokens; sentence loss, correct, rows (0 without a task)
        totals = rows.sum(0)
        moments = torch.cat([ratio_moments(rows[:, 1], rows[:, 2]), ratio_moments(rows[:, 4], rows[:, 5])])
        sums = torch.cat([totals, moments]).to(self.device)
        if ranks.world > 1:
            dist.all_reduce(sums)
        self.model.train()
        s = sums.tolist()
        scores = {"val_mlm_loss": s[0] / max(s[2], 1), "val_mlm_acc": s[1] / max(s[2], 1),
                  "val_mlm_acc_se": ratio_se(s[6:12])}
        sentence = {"loss": s[3] / max(s[5], 1), "acc": s[4] / max(s[5], 1), "acc_se": ratio_se(s[12:18])}
        return scores | self._sentence(sentence, "val_")

    def _evaluate_masking(self, k: int) -> torch.Tensor:
        """[R, 6] per validation row of this rank (`score_rows`; up to eval.max_batches batches), masking k
        (the model in eval mode: `evaluate` sets it)."""
        config, ranks = self.config, self.ranks
        data = dataclasses.replace(config.data, dynamic_masking=False)  # masked by (seed, "eval", k) or not
        val = ShardStream(self.shards, "validation", data, config.seed, ranks.rank, ranks.world,
                          shuffle=False, loop=False, mask_vocab=self.eval_mask_vocab, mask_key=("eval", k))
        return score_rows(self.model, val, config.eval.max_batches, self.device, self.autocast)

    def state_dict(self) -> dict[str, dict]:
        """This rank's states as a checkpoint holds them (the trainer state gathers every rank's)."""
        rng = {
            "cpu": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state() if self.device.type == "cuda" else None,
        }
        gathered = [rng]
        if self.ranks.world > 1:
            gathered = [None] * self.ranks.world
            dist.all_gather_object(gathered, rng)
        return {
            "model": self.raw_model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "trainer": {
                "step": self.step,
                "elapsed": self.elapsed,
                "data": asdict(self.position),  # the same on every rank: a place in the global order
                "rng": gathered,
                "last_metrics": self.last,
            },
        }

    def load_state_dict(self, found: Path) -> None:
        """Every state of the checkpoint `found`, each checked against what this run holds before it is
        used (a checkpoint is data from disk: checkpoint.load_state checks its files and records)."""
        record = checkpoint.read_config(found)
        saved = record["model"]
        wanted = json.loads(json.dumps(asdict(self.bert)))
        differ = [f"model.{k}: {saved.get(k)!r} -> {v!r}" for k, v in wanted.items() if saved.get(k, v) != v]
        if differ:
            changes = "; ".join(differ[:3])
            raise UsageError(f"{found}: saved with another model ({changes}); use another run dir")
        weights = checkpoint.load_weights(found, self.device)
        check_state(weights, self.bert, found / checkpoint.WEIGHTS)
        state = checkpoint.load_state(found, self.device)
        where = found / checkpoint.STATE
        accum = self.config.schedule.grad_accum
        position = data_position(state, accum, where, self.epoch_examples)
        optimizer = optimizer_state(state["optimizer"], self.optimizer, f"{where}: optimizer")
        check_schedule(state["scheduler"], self.scheduler, state["step"], f"{where}: scheduler")
        self.raw_model.load_state_dict(weights)
        self.optimizer.load_state_dict(optimizer)
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = state["step"]
        self.elapsed = float(state.get("elapsed", 0.0))  # runs from before budgets: not counted
        lr_at_step(self.scheduler)  # this run's schedule at this step (and progress): a continuation's too
        self.position = position
        self.load_rng(state["rng"], where)

    def load_rng(self, saved: list[dict], where: Path) -> None:
        """Each rank's dropout RNG as it was saved, when the checkpoint has as many ranks as this run; with
        another rank count (an elastic resume) every rank draws afresh from (seed, rank, step)."""
        ranks = self.ranks
        if len(saved) != ranks.world:
            seed = rng_for(self.config.seed, "torch-dropout", ranks.rank, self.step).integers(2**62)
            torch.manual_seed(int(seed))
            at = f"epoch {self.position.epoch}, example {self.position.examples}"
            log(ranks, f"{where.parent.name}: saved by {len(saved)} rank(s), resumed on {ranks.world}: data "
                       f"go on at {at}; dropout draws afresh")
            return
        rng = saved[ranks.rank]
        try:
            torch.set_rng_state(rng["cpu"].cpu())
            if self.device.type == "cuda" and rng["cuda"] is not None:
                torch.cuda.set_rng_state(rng["cuda"].cpu())
        except (RuntimeError, TypeError) as error:
            raise DataError(f"{where}: rng[{ranks.rank}]: not a generator's state ({error})") from None

    def diverged_error(self, what: str, lr: float, held: str) -> DataError:
        return DataError(f"{what} (training diverged at lr {lr:.2e}; no checkpoint holds {held}); train "
                         f"again with a lower --lr (optim.lr={self.config.optim.lr:g}), a longer warm-up or "
                         "--pre-ln")

    def diverged(self) -> bool:
        """Whether the weights about to be saved are not finite or give a loss that is not, on the newest
        batch: a finite loss can still take one step to weights that give nan (lr 1e6). Every rank agrees."""
        model = self.raw_model
        bad = ~torch.stack([p.isfinite().all() for p in model.parameters()]).all()
        if not bad and self.last_batch is not None:
            model.eval()  # no dropout: no random draw, so the run's draws stay as they were
            with torch.no_grad():
                bad = ~forward_loss(model, self.last_batch, self.autocast)[2].isfinite()
            model.train()
        flag = bad.float().reshape(1)
        if self.ranks.world > 1:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def save_checkpoint(self) -> None:
        self.check_finite()
        if self.diverged():  # no checkpoint may hold diverged weights (docs/manual/training.md)
            raise self.diverged_error(f"step {self.step}: the weights are not finite or give a loss that is "
                                      "not", self.scheduler.get_last_lr()[0], "them")
        states = self.state_dict()  # every rank takes part in the gather; rank 0 writes
        if self.ranks.main:
            record = checkpoint.config_record(self.config, self.bert, self.shards.manifest["vocab"])
            record["shards"] = shards_record(self.shards)
            checkpoint.save(self.run_dir, self.step, states, record, self.config.checkpoint.keep)
        if self.ranks.world > 1:
            dist.barrier()

    def log_progress(self, values: dict[str, float]) -> None:
        """One progress line and one metrics record: the losses' mean over the steps since the last record
        (one step's loss zig-zags), the last step's lr and gradient norm, throughput (and MFU on a GPU), and
        the sequences a step took on average (all ranks': the batch, which a batch ramp changes)."""
        window, world = self.window, self.ranks.world
        values = values | {k: v / window["steps"] for k, v in window["losses"].items()}
        values = {k: float(v) for k, v in values.items()} | {"window_steps": window["steps"]}  # the host read
        elapsed = max(time.time() - window["time"], 1e-9)
        record = {"step": self.step, **values, "seq_per_s": window["seqs"] * world / elapsed,
                  "tokens_per_s": window["tokens"] * world / elapsed, "train_seconds": self.elapsed,
                  "seqs_per_step": window["seqs"] * world / window["steps"]}
        self.last = {k: v for k, v in values.items() if k.endswith("loss")}
        parts = " ".join(f"{k.removesuffix('_loss')} {v:.4f}" for k, v in self.last.items() if k != "loss")
        line = (f"step {self.step:>6} | loss {values['loss']:.4f} ({parts}) | lr {values['lr']:.2e} | "
                f"{record['seq_per_s']:,.0f} seq/s {record['tokens_per_s']:,.0f} tok/s")
        if self.config.schedule.budget:
            line += f" | {duration(self.elapsed)} of {self.config.schedule.budget}"
        if self.device.type == "cuda":
            name = torch.cuda.get_device_name(self.device)
            peak = next((v for k, v in PEAK_BF16.items() if k in name), None)
            if peak:
                seq_len = round(window["tokens"] / max(window["seqs"], 1))
                record["mfu"] = record["tokens_per_s"] * flops_per_token(self.bert, seq_len) / (peak * world)
                line += f" | MFU {record['mfu']:.1%}"
        self.metrics.write(record)
        log(self.ranks, line)
        self.window = new_window()

    def log_validation(self, scores: dict[str, float]) -> None:
        self.last |= scores
        self.metrics.write({"step": self.step, **scores})
        errors = {k.removesuffix("_se"): f" ±{v:.4f}" for k, v in scores.items() if k.endswith("_se")}
        values = {k: v for k, v in scores.items() if not k.endswith("_se")}
        shown = [f"{k.removeprefix('val_')} {v:.4f}{errors.get(k, '')}" for k, v in values.items()]
        log(self.ranks, f"step {self.step:>6} | validation {' '.join(shown)} (± standard error)")

    # -------------------------------------------------------- the loop

    def fit(self) -> dict:
        config, ranks, started = self.config, self.ranks, time.time()
        log(ranks, "config:\n" + config.to_json())
        log(ranks, f"model: {self.raw_model.num_params(False) / 1e6:.2f}M parameters "
                   f"({self.raw_model.num_params() / 1e6:.2f}M non-embedding), "
                   f"objective {self.objective.name}, {ranks.world} rank(s) on {self.device}{self._ddp()}, "
                   f"from step {self.step}")
        if config.schedule.budget:
            limit = f" or at step {config.schedule.max_steps:,}" if config.schedule.max_steps else ""
            log(ranks, f"budget: {config.schedule.budget} of training time (evaluation and checkpoints not "
                       f"counted), {duration(self.elapsed)} spent; stops when it is spent{limit}")
        self.model.train()
        while not config.schedule.finished(self.step, self.elapsed):
            before = self.elapsed
            values = self.train_step()
            last = config.schedule.finished(self.step, self.elapsed)
            if self.step % config.logging.every == 0 or last:
                self.check_finite()
                self.log_progress(values)
            if self.has_validation and ((config.eval.every and self.step % config.eval.every == 0) or last):
                self.log_validation(self.evaluate())
            every = self.checkpoint_seconds
            on_time = every and self.elapsed // every > before // every  # a multiple of every_time passed
            if self.step % config.checkpoint.every == 0 or on_time or last:
                self.save_checkpoint()
        return self.summary(time.time() - started)

    def _ddp(self) -> str:
        return f" (DDP over {dist.get_backend()})" if isinstance(self.model, DistributedDataParallel) else ""

    def summary(self, seconds: float) -> dict:
        digest = weights_digest(self.raw_model)
        if self.ranks.world > 1:  # data parallel means identical replicas: check it once, at the end
            digests = [None] * self.ranks.world
            dist.all_gather_object(digests, digest)
            if len(set(digests)) != 1:
                raise RuntimeError(f"ranks ended with different weights: {digests}")
        where = checkpoint.checkpoint_dir(self.run_dir)
        log(self.ranks, f"done: {self.step} steps in {seconds:.1f}s; checkpoints in {storage.url(where)}")
        summary = {"status": "trained", "steps": self.step, "run_dir": storage.url(self.run_dir),
                   "seconds": seconds, "train_seconds": self.elapsed}
        return summary | self.last | {"weights_sha256": digest}


def train(config: TrainConfig, clock: Callable[[], float] = time.monotonic) -> dict:
    """Train until the schedule's steps or budget are spent; returns {steps, losses/accuracies, run_dir,
    seconds, train_seconds, status}. `clock` measures the budget (tests inject one).

    The run holds the writer's lock on its run dir (rank 0; one run per run dir) and a reader's lock on its
    shards (every rank), so `corpusprep shard --overwrite` of those shards fails at start while it trains
    (engine.lock); each shard's identity is also checked as it is read (trainer.shards, trainer.data)."""
    run_dir = Path(config.logging.run_dir)
    new = not storage.exists(run_dir)
    with distributed(config) as (ranks, device), contextlib.ExitStack() as locks:
        try:
            check_run_dir(config)  # before the lock makes the directory
            if ranks.main and not in_running_pipeline(run_dir):  # a pipeline's stage holds it already
                locks.enter_context(exclusive_dir(run_dir))
            if config.data.shards and storage.scheme_of(config.data.shards) in (None, "file"):
                locks.enter_context(shared_dir(config.data.shards))  # (a store has no reader's lock yet)
            return Trainer(config, ranks, device, clock).fit()
        except Finished as done:
            log(ranks, f"{config.logging.run_dir}: finished at step {done.saved['step']} "
                       f"({done.found.name}); nothing to do")
            summary = {"status": "done", "steps": done.saved["step"], "run_dir": config.logging.run_dir}
            return summary | {"seconds": 0.0} | done.saved["last_metrics"]
        except BaseException:  # failed before writing anything (set-up, bad first batch): no run dir
            if new and ranks.main and storage.is_dir(run_dir) and all(
                p.name == LOCK_NAME for p in storage.list_dir(run_dir)
            ):
                storage.remove(run_dir / LOCK_NAME, missing_ok=True)
                storage.rmdir(run_dir)
            raise


def duration(seconds: float) -> str:
    """90 -> "1m30s", 5400 -> "1h30m0s": a training time as budgets are written."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s" if minutes else f"{secs}s"


def weights_digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()
