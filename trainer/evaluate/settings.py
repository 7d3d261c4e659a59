"""Every setting of an evaluation and its default, in one place: the command's flags and a pipeline's
`[evaluate]` table are both this dataclass (`corpusprep.settings.check_settings` checks the table), and the
fine-tuning defaults by model size, with their sources, are SIZES below."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from corpusprep.errors import UsageError
from trainer.evaluate.data import FORMATS, ON_ERROR
from trainer.evaluate.published import BENCHMARKS
from trainer.evaluate.squad_features import MAX_ANSWER_LENGTH, check_windows
from trainer.evaluate.tasks import METRICS, TASKS, task_kind

DEVICES = ("auto", "cpu", "cuda")
SELECT = ("best", "last")
MAX_EPOCHS = 1_000  # bounds that no fine-tuning reaches, so that a typo fails up front, not in hour 3
MAX_SEEDS = 1_000
MAX_BATCH = 65_536
MAX_LENGTH = 1 << 20


@dataclass(frozen=True)
class Size:
    """Fine-tuning defaults for one model size: what converges, and where the numbers come from."""

    lr: float
    epochs: float
    batch_size: int
    seeds: int
    grid_lr: tuple[float, ...]  # --grid: learning rates x GRID_BATCH x grid_epochs, chosen on dev
    grid_epochs: tuple[float, ...]
    source: str
    sentence_lr: float | None = None  # the lr of a kind with one output per example (classify, regression)
    sentence_grid_lr: tuple[float, ...] | None = None  # and its --grid's learning rates


GRID_BATCH = (16, 32)
BERT = "Devlin et al. 2019, A.3: batch 16 or 32, lr 5e-5, 3e-5 or 2e-5, 2-4 epochs, chosen on dev"
TURC = ("Turc et al. 2019 (BERT's small models): lr 3e-4 to 3e-5, 4 epochs, chosen on dev; tiny and mini "
        "at the top of that range or above")
# The presets of trainer/config.py (layers, hidden). A model of another shape takes the size whose hidden
# size is the nearest at or above its own.
SIZES = {
    # measured on UD English-EWT UPOS with the CPU recipe's model (3,000 steps) and a random init, 10-epoch
    # schedules, one seed each (BENCHMARKS.md, "Yardsticks"): at lr 3e-3 dev accuracy is 0.9149 (pre-trained,
    # best epoch 10, +0.0005 over the last two) and 0.9028 (random, epoch 9); at 1e-3 0.9142 (epoch 7) and
    # 0.8879 (epoch 8, flat after): 3e-3 is the better rate for both, and the random init needs it most. The
    # old 3 epochs at 1e-3 stopped the random init at 0.882. bench/yardsticks.py converge measures it again.
    # Sentence-level kinds (one output per example, from [CLS]) diverge at 3e-3: on GLUE CoLA, MRPC, RTE and
    # STS-B (one seed each, 10 epochs, best dev epoch) both models sat at the majority class at 3e-3, and
    # 3e-4 gave the best CoLA (Matthews 13.3 pre-trained, 6.6 random; 1e-4: 7.2 / 2.8; 1e-3: 8.5 / 0.0),
    # the top of Turc et al.'s range (BENCHMARKS.md, "Yardsticks").
    "tiny": Size(3e-3, 10.0, 32, 5, (1e-3, 3e-3, 6e-3), (5.0, 10.0, 15.0), "measured; " + TURC,
                 sentence_lr=3e-4, sentence_grid_lr=(1e-4, 3e-4, 1e-3)),
    "mini": Size(5e-4, 6.0, 32, 5, (1e-4, 3e-4, 1e-3), (3.0, 6.0, 9.0), "not measured; " + TURC),
    "small": Size(1e-4, 4.0, 32, 3, (3e-5, 1e-4, 3e-4), (2.0, 3.0, 4.0), TURC),
    "medium": Size(1e-4, 4.0, 32, 3, (3e-5, 1e-4, 3e-4), (2.0, 3.0, 4.0), TURC),
    "base": Size(3e-5, 3.0, 32, 3, (2e-5, 3e-5, 5e-5), (2.0, 3.0, 4.0), BERT),
    "large": Size(3e-5, 3.0, 32, 3, (2e-5, 3e-5, 5e-5), (2.0, 3.0, 4.0), BERT),
}
HIDDEN = {"tiny": 128, "mini": 256, "small": 512, "medium": 512, "base": 768, "large": 1024}


def size_of(hidden_size: int, num_layers: int) -> str:
    """The size name of a model's shape (the presets'; between them, the next larger hidden size)."""
    for name, hidden in HIDDEN.items():
        if hidden_size <= hidden and (name != "small" or num_layers <= 4):
            return name
    return "large"


@dataclass(frozen=True)
class EvalSettings:
    # the task: labelled files and how to read them
    train: str = ""  # fine-tuning data
    dev: str = ""  # scored after each epoch; the epoch is chosen on it
    test: str | None = None  # scored once, with the epoch chosen on dev (a held-back split)
    task: str = "auto"  # auto (from the format) | tag | ner | classify | regression | qa
    format: str = "auto"  # auto (the name, else the content) | conllu | conll | tsv | csv | jsonl | squad
    metric: str | None = None  # the headline: chosen on, judged by (default: the task kind's first)
    benchmark: str | None = None  # the public set the files are (published.BENCHMARKS: sst-2, conll2003...)
    text_column: str | int | None = None  # tables: default recognised (GLUE's names...); columns: the word
    pair_column: str | int | None = None  # the second text of a pair task
    label_column: str | int | None = None  # tables: recognised; CoNLL-U: upos; columns: the tag column
    header: bool = True  # TSV/CSV: the first row names the columns
    on_error: str = "fail"  # fail: one line naming file:line, exit 1 | skip: leave it out, counted
    # fine-tuning, the same for the pre-trained and the randomly initialised model; None: by model size
    # (SIZES above, with their sources)
    seeds: int | None = None  # fine-tuning runs per model; seeds seed, seed + 1, ...
    seed: int = 12345
    epochs: float | None = None
    batch_size: int | None = None
    lr: float | None = None
    select: str = "best"  # best: the epoch with the best dev score (test scored with it) | last
    grid: bool = False  # BERT's search: SIZES' learning rates x batch 16, 32 x epochs, chosen on dev
    warmup: float = 0.1  # share of the steps
    weight_decay: float = 0.01
    max_length: int = 128  # word pieces per example (at most the model's positions)
    # qa: the pieces consecutive windows of a context share (None: squad_features.default_doc_stride, run_qa's
    # 128 where it fits), and the longest answer decoded, in pieces (BERT's 30)
    doc_stride: int | None = None
    max_answer_length: int = MAX_ANSWER_LENGTH
    device: str = "auto"  # auto: cuda when there is one
    vocab: str | None = None  # the vocab dir of a checkpoint whose shards moved (as trainer.export)

    def __post_init__(self) -> None:
        for name in ("text_column", "pair_column", "label_column"):  # TOML may give a column number
            if isinstance(getattr(self, name), int):
                object.__setattr__(self, name, str(getattr(self, name)))

    def check(self, where: str = "") -> EvalSettings:
        """Raise UsageError naming the first setting out of range (`where`: "evaluate." in a pipeline)."""
        choices = {"task": TASKS, "format": FORMATS, "on_error": ON_ERROR, "device": DEVICES,
                   "select": SELECT}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise UsageError(f"{where}{name}={getattr(self, name)!r}: one of {', '.join(allowed)}")
        if self.metric is not None and self.metric not in METRICS:
            raise UsageError(f"{where}metric={self.metric!r}: one of {', '.join(METRICS)}")
        if self.benchmark is not None and self.benchmark not in BENCHMARKS:
            raise UsageError(f"{where}benchmark={self.benchmark!r}: one of {', '.join(BENCHMARKS)}")
        for name in ("train", "dev"):
            if not getattr(self, name):
                raise UsageError(f"{where}{name}: a labelled file is needed")
        bounds = {"seeds": MAX_SEEDS, "epochs": MAX_EPOCHS, "batch_size": MAX_BATCH, "lr": 1.0}
        for name, most in bounds.items():
            value = getattr(self, name)
            if value is not None and not (0 < value <= most and math.isfinite(value)):  # NaN and inf too
                raise UsageError(f"{where}{name}={value}: must be > 0 and at most {most:,}")
        if not 8 <= self.max_length <= MAX_LENGTH:
            raise UsageError(f"{where}max_length={self.max_length}: must be 8 to {MAX_LENGTH:,} word pieces")
        if not 1 <= self.max_answer_length <= MAX_LENGTH:
            raise UsageError(f"{where}max_answer_length={self.max_answer_length}: must be 1 to "
                             f"{MAX_LENGTH:,} word pieces")
        if not (0 <= self.weight_decay < math.inf):
            raise UsageError(f"{where}weight_decay={self.weight_decay}: must be >= 0 and finite")
        if not 0 <= self.warmup < 1:
            raise UsageError(f"{where}warmup={self.warmup}: a share of the steps, in [0, 1)")
        if self.pair_column is not None and self.text_column is None:
            raise UsageError(f"{where}pair_column: name text_column too")
        if self.task == "qa" or self.windows_given:
            if self.task not in ("auto", "qa"):
                raise UsageError(f"{where}doc_stride, max_answer_length: for task qa, not {self.task}")
            self.windows(where)
        return self

    @property
    def windows_given(self) -> bool:
        return self.doc_stride is not None or self.max_answer_length != MAX_ANSWER_LENGTH

    def windows(self, where: str = "") -> int:
        """The doc stride at this max_length (squad_features.check_windows: the default when None), or
        UsageError naming what cannot work."""
        try:
            return check_windows(self.max_length, self.doc_stride, self.max_answer_length)
        except UsageError as error:
            raise UsageError(f"{where}{error}") from None

    def resolve(self, size: str, positions: int, metric: str, kind: str) -> tuple[EvalSettings, list[str]]:
        """The settings a run uses: the model size's defaults where none was given, `max_length` capped
        at the model's `positions`, the headline `metric` named, the doc stride of a `qa` task at that
        length; and a note for each change a user should hear about."""
        defaults = SIZES[size]
        filled = {n: getattr(defaults, n) for n in ("lr", "epochs", "batch_size", "seeds")
                  if getattr(self, n) is None}
        if "lr" in filled and defaults.sentence_lr and not task_kind(kind).token_level:
            filled["lr"] = defaults.sentence_lr
        notes = []
        if self.max_length > positions:
            notes.append(f"max_length {self.max_length} capped at {positions}: the model has {positions} "
                         "positions")
            filled["max_length"] = positions
        resolved = replace(self, **filled, metric=metric)
        if kind == "qa":
            resolved = replace(resolved, doc_stride=resolved.windows())
        elif self.windows_given:
            raise UsageError(f"doc_stride, max_answer_length: for task qa; these files are a {kind} task")
        return resolved, notes

    @property
    def seed_list(self) -> list[int]:
        return [self.seed + i for i in range(self.seeds or 0)]

    def configs(self, size: str, kind: str) -> list[tuple[float, int, float]]:
        """(lr, batch size, epochs) of each fine-tuning configuration: the settings' one, or the grid's (a
        sentence-level kind's learning rates where its size has its own)."""
        if not self.grid:
            return [(self.lr, self.batch_size, self.epochs)]
        defaults = SIZES[size]
        rates = defaults.grid_lr
        if defaults.sentence_grid_lr and not task_kind(kind).token_level:
            rates = defaults.sentence_grid_lr
        return [(lr, b, e) for lr in rates for b in GRID_BATCH for e in defaults.grid_epochs]


FIELDS = tuple(f.name for f in fields(EvalSettings))
