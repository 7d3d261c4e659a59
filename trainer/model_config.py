"""The model's settings: its architecture (`BertConfig`, which trainer.model builds), the named presets and
their families, the [model] table of a training config (`ModelConfig`, resolved to a BertConfig) and the
checks every architecture passes, from a config, --set, a checkpoint or a Hugging Face config.json
(`check_model`, `check_fits`). Torch-free: a config is resolved to its architecture without torch."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from corpusprep import objectives
from corpusprep.settings import machine_memory
from trainer.ranges import AT_LEAST_ONE, BOOL, FRACTION, POSITIVE, RangeCheck, is_number, is_whole, one_of

DEFAULT_PRESET = "tiny"

# fields that make the model (its weights and what it computes); with checkpoint.init_from they come from the
# saved model
ARCHITECTURE = ("num_layers", "hidden_size", "num_heads", "intermediate_size", "max_position", "pre_ln",
                "type_vocab_size", "layer_norm_eps", "mlp", "bias", "position", "rotary_theta",
                "embedding_norm")
MLPS = ("gelu", "geglu", "swiglu")  # BERT's dense GELU MLP; gated: GELU (GeGLU) or SiLU (SwiGLU) gates
POSITIONS = ("learned", "rotary")  # BERT's learned table; rotary position embeddings (RoPE)


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 0  # 0: 4 * hidden_size
    max_position: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1  # hidden states (embeddings, attention output, MLP output)
    attention_dropout: float = 0.1  # attention probabilities
    layer_norm_eps: float = 1e-12
    pre_ln: bool = False  # LayerNorm before each sublayer (+ a final one): more stable at depth/high lr
    init_std: float = 0.02
    objective: str = objectives.DEFAULT  # with a sentence task (nsp, sop): pooler + sentence head
    # Since BERT (the `modern` presets combine them as ModernBERT does; trainer/model.py says what each
    # computes). Defaults are BERT's, so a config saved before these existed reads as the model it was.
    mlp: str = "gelu"  # gelu | geglu | swiglu (Shazeer 2020)
    bias: bool = True  # biases in linear layers and LayerNorms (the MLM decoder's vocab bias always stays)
    position: str = "learned"  # learned | rotary (Su et al. 2021; type_vocab_size 0 drops segments too)
    rotary_theta: float = 10000.0  # RoPE's base (RoFormer's; ModernBERT's 160,000 serves 8,192 tokens)
    embedding_norm: bool = False  # pre-LN only: LayerNorm the embeddings instead of layer 0's input

    @property
    def gated(self) -> bool:
        return self.mlp != "gelu"

    @property
    def sentence_head(self) -> bool:
        return objectives.objective(self.objective).shard_label is not None

    def __post_init__(self) -> None:
        if self.intermediate_size == 0 and isinstance(self.hidden_size, int):
            self.intermediate_size = default_intermediate(self.hidden_size, self.mlp)
        check_model({f.name: getattr(self, f.name) for f in fields(self)})  # a config, --set, a checkpoint


# (layers, hidden, heads); intermediate is 4 * hidden unless overridden. tiny..medium as in Turc et al. 2019.
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}


def default_intermediate(hidden: int, mlp: str) -> int:
    """The MLP's width when not given: BERT's 4 x hidden; a gated MLP 2/3 of that (rounded up to a multiple
    of 8), so that its three matrices hold as many weights as BERT's two (Shazeer 2020's comparison)."""
    return 4 * hidden if mlp == "gelu" else -(-8 * hidden // 3 // 8) * 8


# Families of presets: "FAMILY-SIZE" is a size of PRESETS with the family's options. `modern`: ModernBERT's
# architecture (Warner et al. 2024): pre-LN with a LayerNorm on the embeddings (none before layer 0's
# attention) and a final one, GeGLU, no biases, rotary positions and no segment embeddings, LayerNorm eps
# 1e-5; every layer attends globally (ModernBERT's local layers, a window of 128 tokens, would attend to a
# whole row at the CPU recipe's 64 and BERT's 128 tokens). Exported as `ModernBertForMaskedLM`.
MODERN = {"pre_ln": True, "embedding_norm": True, "mlp": "geglu", "bias": False, "position": "rotary",
          "type_vocab_size": 0, "layer_norm_eps": 1e-5}
FAMILIES: dict[str, dict[str, Any]] = {"modern": MODERN}
PRESET_NAMES = (*PRESETS, *(f"{family}-{size}" for family in FAMILIES for size in PRESETS))


def preset_size(name: str) -> str:
    """The size of a preset name ("modern-mini" -> "mini"); ValueError for a name that is no preset."""
    if name not in PRESET_NAMES:
        raise ValueError(f"unknown model preset {name!r} (choose from {', '.join(PRESET_NAMES)})")
    return name.rpartition("-")[2]


def preset_fields(name: str) -> dict[str, Any]:
    """The BertConfig fields a preset sets: its size's, and its family's options."""
    layers, hidden, heads = PRESETS[preset_size(name)]
    family = FAMILIES.get(name.rpartition("-")[0], {})
    return {"num_layers": layers, "hidden_size": hidden, "num_heads": heads, **family}


def preset(name: str, **overrides) -> BertConfig:
    """A config from a named preset; any BertConfig field can be overridden."""
    args = preset_fields(name)
    known = {f.name for f in fields(BertConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"unknown model option(s): {', '.join(sorted(unknown))}")
    return BertConfig(**(args | overrides))


@dataclass
class ModelConfig:
    # None = not set: the preset's or BertConfig's default, or with checkpoint.init_from the saved model's
    preset: str | None = None  # tiny (default) mini small medium base large; the fields below override it
    hidden_size: int | None = None
    num_layers: int | None = None
    num_heads: int | None = None
    intermediate_size: int | None = None  # default 4 * hidden_size
    max_position: int | None = None  # default 512
    dropout: float = 0.1  # training settings, not architecture: these apply with init_from too
    attention_dropout: float = 0.1
    pre_ln: bool | None = None  # default false (post-LN, as BERT)
    # the options since BERT (BertConfig says what each is; the `modern-*` presets set them all)
    mlp: str | None = None  # gelu (BERT) | geglu | swiglu
    bias: bool | None = None  # default true
    position: str | None = None  # learned (BERT) | rotary
    rotary_theta: float | None = None  # default 10000
    embedding_norm: bool | None = None  # default false; pre-LN only
    type_vocab_size: int | None = None  # default 2 (BERT's segments A and B); 0: none
    layer_norm_eps: float | None = None  # default 1e-12 (BERT's); modern: 1e-5

    def bert_config(self, vocab_size: int, objective: str = objectives.DEFAULT) -> BertConfig:
        """The architecture for a vocab and an objective (the shards' manifest gives both)."""
        overrides = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "preset"}
        set_fields = {k: v for k, v in overrides.items() if v is not None}
        return preset(self.preset or DEFAULT_PRESET, vocab_size=vocab_size, objective=objective, **set_fields)

    def conflicts(self, saved: BertConfig) -> list[str]:
        """The architecture this config sets explicitly (preset or fields) where `saved` differs."""
        wanted: dict = {}
        if self.preset is not None:
            wanted = {k: v for k, v in preset_fields(self.preset).items() if k in ARCHITECTURE}
        wanted |= {k: getattr(self, k) for k in ARCHITECTURE if getattr(self, k) is not None}
        differ = {k: v for k, v in wanted.items() if v != getattr(saved, k)}
        return [f"model.{k}={v} (saved: {getattr(saved, k)})" for k, v in differ.items()]


# key -> (test, what the value must be) of each architecture field; a config's other settings: trainer.config
MODEL_RANGES: dict[str, RangeCheck] = {
    "vocab_size": AT_LEAST_ONE,
    "hidden_size": AT_LEAST_ONE,
    "num_layers": AT_LEAST_ONE,
    "num_heads": AT_LEAST_ONE,
    "intermediate_size": AT_LEAST_ONE,
    "max_position": AT_LEAST_ONE,
    "type_vocab_size": (lambda v: is_whole(v, 0), "an integer >= 0 (0: no segment embeddings)"),
    "dropout": FRACTION,
    "attention_dropout": FRACTION,
    "layer_norm_eps": POSITIVE,
    "init_std": POSITIVE,
    "pre_ln": BOOL,
    "mlp": one_of(MLPS),
    "bias": BOOL,
    "position": one_of(POSITIONS),
    "rotary_theta": (lambda v: is_number(v) and v > 1, "a number > 1"),
    "embedding_norm": BOOL,
}


def check_model(values: dict[str, Any]) -> None:
    """ValueError naming the first model setting out of range (None: not set) or heads that do not divide
    the hidden size."""
    for key, value in values.items():
        if key in MODEL_RANGES and value is not None and not MODEL_RANGES[key][0](value):
            raise ValueError(f"model.{key}={value!r} must be {MODEL_RANGES[key][1]}")
    hidden, heads = values.get("hidden_size"), values.get("num_heads")
    if hidden is not None and heads is not None and hidden % heads:
        raise ValueError(f"model.hidden_size={hidden} must be divisible by model.num_heads={heads}")
    if values.get("position") == "rotary" and None not in (hidden, heads) and hidden // heads % 2:
        raise ValueError(f"model.position='rotary' rotates pairs of dimensions: a head of "
                         f"hidden_size / num_heads = {hidden // heads} has an odd number")
    if values.get("embedding_norm") is True and values.get("pre_ln") is False:
        raise ValueError("model.embedding_norm=true is pre-LN's (pre_ln=true): post-LN BERT normalises its "
                         "embeddings already")
    check_fits(values)


def parameter_count(values: dict[str, Any]) -> int | None:
    """About how many parameters a BERT of these sizes has (embeddings, layers, pooler and MLM head; within
    a few per cent); None while a size is not set."""
    sizes = [values.get(k) for k in ("vocab_size", "hidden_size", "num_layers")]
    if not all(isinstance(v, int) for v in sizes):
        return None
    vocab, hidden, layers = sizes
    inner = values.get("intermediate_size") or 4 * hidden
    mlp = (3 if values.get("mlp") in MLPS[1:] else 2) * hidden * inner  # a gated MLP has three matrices
    learned = values.get("position") in (None, "learned")  # rotary positions have no table
    positions = (values.get("max_position") or 512) if learned else 0
    segments = 2 if values.get("type_vocab_size") is None else values["type_vocab_size"]
    return (vocab + positions + segments) * hidden + layers * (4 * hidden * hidden + mlp) + 2 * hidden**2


MAX_PARAMETERS = 10**12  # beyond any model this trainer builds (BERT-large: 3.4e8), whatever the memory


def check_fits(values: dict[str, Any]) -> None:
    """ValueError for a model whose float32 weights alone exceed this machine's memory, or MAX_PARAMETERS
    (hidden_size 10^9 from a hand-edited config, a checkpoint's or a Hugging Face config.json): one line now,
    not hours of building shapes or an allocation failure inside torch. The one size check of a model: every
    BertConfig goes through it (check_model)."""
    count, memory = parameter_count(values), machine_memory()
    if count is not None and memory is not None and 4 * count > memory:
        hidden, layers = values["hidden_size"], values["num_layers"]
        raise ValueError(f"model.hidden_size={hidden:,} with {layers:,} layers has ~{count:.2g} parameters, "
                         f"{4 * count / 2**30:,.0f} GiB of float32 weights: more than this machine's "
                         f"{memory / 2**30:,.0f} GiB of memory")
    if count is not None and count > MAX_PARAMETERS:  # where the memory cannot be read
        raise ValueError(f"model: ~{count:.2g} parameters, more than {MAX_PARAMETERS:.0e}, beyond any model "
                         "this trainer builds")
