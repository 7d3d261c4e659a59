"""Optimizers and the learning-rate schedule."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from trainer.config import DECAY_SHAPES, OptimConfig, ScheduleConfig

# What each parameter's state holds, with both optimizers (AdamW without amsgrad, which OptimConfig never
# sets; Lamb below): a checkpoint's optimizer state must hold exactly these (trainer.checkpoint)
STATE_KEYS = ("step", "exp_avg", "exp_avg_sq")


class Lamb(torch.optim.Optimizer):
    """LAMB (You et al. 2019): Adam's update, with weight decay, scaled per tensor by the trust ratio
    ||w|| / ||update|| so that every layer moves by a similar *relative* amount; built for large batches."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(param.grad, 1 - beta1)
                v.mul_(beta2).addcmul_(param.grad, param.grad, value=1 - beta2)
                m_hat = m / (1 - beta1 ** state["step"])
                v_hat = v / (1 - beta2 ** state["step"])
                update = m_hat / (v_hat.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update.add_(param, alpha=group["weight_decay"])
                w_norm, u_norm = param.norm(), update.norm()
                # a zero norm (fresh bias, or no update) gives no information: fall back to plain Adam
                trust = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
                param.add_(update * trust, alpha=-group["lr"])
        return loss


def build_optimizer(model: nn.Module, config: OptimConfig, fused: bool) -> torch.optim.Optimizer:
    """AdamW (fused on CUDA) or LAMB; no weight decay on biases and LayerNorm weights (1-d tensors)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": config.weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    betas = (config.beta1, config.beta2)
    if config.name == "lamb":
        return Lamb(groups, lr=config.lr, betas=betas, eps=config.eps)
    return torch.optim.AdamW(groups, lr=config.lr, betas=betas, eps=config.eps, fused=fused or None)


def build_scheduler(
    optimizer: torch.optim.Optimizer, config: ScheduleConfig, progress: Callable[[], float] | None = None
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up to the peak lr, then down to 0 at the end of the run: over all the rest by default
    (BERT's triangle), or, with `decay_fraction` (warm-up-stable-decay), at the peak until the last share of
    the run and down over it; the decay's shape `decay_shape`.

    By steps: over the warm-up steps, then to 0 at `steps`. With a budget, the lr is a function of the run's
    progress (0 to 1, read from `progress()` whenever the scheduler steps: the elapsed share of the budget,
    or of the steps when those end sooner), warm-up over the first `warmup_share` of it."""
    shape = DECAY_SHAPES[config.decay_shape]
    if config.budget:
        if progress is None:
            raise ValueError("a budgeted schedule needs the run's progress")
        warmup, decay = config.warmup_share, config.decay_fraction
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: budget_factor(progress(), warmup, decay,
                                                                                      shape))
    warmup, steps, decay = config.warmup, config.max_steps, config.decay

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return shape(min(1.0, max(0.0, (steps - step) / max(1, decay))))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def lr_at_step(scheduler: torch.optim.lr_scheduler.LRScheduler) -> None:
    """Set every param group's lr to the one the schedule gives at the scheduler's step (as its `step()`
    does, recomputed), after a resume loaded the saved one: the same value for a run resumed with its own
    settings; for a finished run continued with larger limits, the new limits' schedule at that step
    (the saved lr is the old schedule's last, about 0)."""
    scheduler.last_epoch -= 1
    scheduler.step()


def micro_batches(progress: float, schedule: ScheduleConfig) -> int:
    """The micro-batches of the step taken at `progress` (0 to 1: ScheduleConfig.progress): grad_accum, or
    with a batch ramp (`batch_ramp_fraction` > 0) `batch_ramp_start` of them at the start, rising linearly
    to all of them at `batch_ramp_fraction` of the run, rounded up to whole micro-batches."""
    accum, fraction, start = schedule.grad_accum, schedule.batch_ramp_fraction, schedule.batch_ramp_start
    if not fraction:
        return accum
    share = start + (1 - start) * min(1.0, progress / fraction)
    return max(1, math.ceil(accum * share - 1e-9))  # 1e-9: 10 * 0.3 is 3.0000000000000004, 3 micro-batches


def budget_factor(progress: float, warmup: float, decay: float | None = None,
                  shape: Callable[[float], float] = DECAY_SHAPES["linear"]) -> float:
    """The share of the peak lr at `progress` through a budgeted run: up linearly over the first `warmup`
    of it, then at the peak until the last `decay` of it (None: no stable phase) and down to 0 at its end
    in `shape` (the steps' schedule, over time)."""
    if progress < warmup:
        return progress / warmup
    span = 1 - warmup if decay is None else decay
    return shape(min(1.0, max(0.0, (1 - progress) / span)))
