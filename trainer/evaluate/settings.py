"""Every setting of an evaluation and its default, in one place: the command's flags and a pipeline's
`[evaluate]` table are both this dataclass (`corpusprep.settings.check_settings` checks the table)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from corpusprep.errors import UsageError
from trainer.evaluate.data import FORMATS, ON_ERROR, TASKS

DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class EvalSettings:
    # the task: labelled files and how to read them
    train: str = ""  # fine-tuning data
    dev: str = ""  # scored
    test: str | None = None  # scored too, when given (a held-back split)
    task: str = "auto"  # auto (CoNLL-U: tag; TSV, CSV, JSONL: classify) | tag | classify
    format: str = "auto"  # auto (from the file name) | conllu | tsv | csv | jsonl
    text_column: str | int | None = None  # default: recognised from the header (GLUE's names...)
    pair_column: str | int | None = None  # the second text of a pair task
    label_column: str | int | None = None  # tables: recognised; CoNLL-U: upos (field 4)
    header: bool = True  # TSV/CSV: the first row names the columns
    on_error: str = "fail"  # fail: one line naming file:line, exit 1 | skip: leave it out, counted
    # fine-tuning: the same for the pre-trained and the randomly initialised model. BERT's recipe (AdamW,
    # 10% warm-up, linear decay, batch 32, 2-4 epochs) at the rate small models need: Turc et al. 2019 pick
    # from 3e-5 to 3e-4 for their small BERTs (4 epochs); a random init and a briefly trained model need more.
    # Measured on UD English-EWT, the demo's tiny model, 3 epochs (BENCHMARKS.md, "Evaluate"): random init
    # 0.852 at 1e-3, 0.849 at 3e-3 (one seed); 3e-4 reached 0.796 in one epoch. BERT-base and larger: BERT's
    # 2e-5 to 5e-5.
    seeds: int = 3  # fine-tuning runs per model; seeds seed, seed + 1, ...
    seed: int = 12345
    epochs: float = 3.0
    batch_size: int = 32
    lr: float = 1e-3
    warmup: float = 0.1  # share of the steps
    weight_decay: float = 0.01
    max_length: int = 128  # word pieces per example; longer sentences are tagged in windows
    device: str = "auto"  # auto: cuda when there is one
    vocab: str | None = None  # the vocab dir of a checkpoint whose shards moved (as trainer.export)

    def __post_init__(self) -> None:
        for name in ("text_column", "pair_column", "label_column"):  # TOML may give a column number
            if isinstance(getattr(self, name), int):
                object.__setattr__(self, name, str(getattr(self, name)))

    def check(self, where: str = "") -> EvalSettings:
        """Raise UsageError naming the first setting out of range (`where`: "evaluate." in a pipeline)."""
        choices = {"task": TASKS, "format": FORMATS, "on_error": ON_ERROR, "device": DEVICES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise UsageError(f"{where}{name}={getattr(self, name)!r}: one of {', '.join(allowed)}")
        for name in ("train", "dev"):
            if not getattr(self, name):
                raise UsageError(f"{where}{name}: a labelled file is needed")
        for name in ("seeds", "epochs", "batch_size", "lr"):
            if not getattr(self, name) > 0:  # NaN too
                raise UsageError(f"{where}{name}={getattr(self, name)}: must be > 0")
        if self.max_length < 8:
            raise UsageError(f"{where}max_length={self.max_length}: must be >= 8 word pieces")
        if not self.weight_decay >= 0:
            raise UsageError(f"{where}weight_decay={self.weight_decay}: must be >= 0")
        if not 0 <= self.warmup < 1:
            raise UsageError(f"{where}warmup={self.warmup}: a share of the steps, in [0, 1)")
        if self.pair_column is not None and self.text_column is None:
            raise UsageError(f"{where}pair_column: name text_column too")
        return self

    @property
    def seed_list(self) -> list[int]:
        return [self.seed + i for i in range(self.seeds)]


FIELDS = tuple(f.name for f in fields(EvalSettings))
