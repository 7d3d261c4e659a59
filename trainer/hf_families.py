"""Our model as Hugging Face's, one family (model class) at a time: weight names and config.json both ways.

FAMILIES is the one table. Each family is a `transformers` model type that computes exactly what some of
our configs compute (trainer/model.py's options), so an export is a renaming, never an approximation:

  bert           BERT: post-LN, learned positions, GELU MLP, biases: BertForPreTraining (objective nsp,
                 sop) or BertForMaskedLM (none)
  megatron-bert  the same pre-LN (pre_ln=true, no embedding_norm; a final LayerNorm):
                 MegatronBertForPreTraining / MegatronBertForMaskedLM
  modernbert     the `modern-*` presets' layout (pre-LN with embedding_norm, rotary positions, a gated MLP,
                 no segments, biases or none; global attention in every layer): ModernBertForMaskedLM,
                 which has no sentence head (objective none)

`family_of(config)` names a config's family, or refuses in one line naming what each needs (pre-LN with
GeGLU and learned positions, say, is no class's). trainer.export writes through here; trainer.import_hf and
trainer.evaluate read (`config_from_hf`, `from_hf`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from corpusprep.engine.records import Bool, Int, ListOf, MapOf, Num, Obj, RecordError, Str
from corpusprep.errors import DataError, UsageError
from corpusprep.objectives import objective
from trainer.model_config import BertConfig

QKV = ("query", "key", "value")  # row blocks of our fused qkv, in this order, where a family splits it
EMBEDDING_TABLES = ("word_embeddings", "position_embeddings", "token_type_embeddings")
LEGACY_SUFFIXES = {".gamma": ".weight", ".beta": ".bias"}  # older (TF-converted) BERT checkpoints

Names = dict[str, "str | tuple[str, ...]"]  # our module (or full key) -> Hugging Face's; a tuple: q, k, v


@dataclass(frozen=True)
class Family:
    model_type: str  # config.json's
    title: str  # in messages
    needs: str  # what a config needs to be one, in messages
    fits: Callable[[BertConfig], bool]
    modules: Callable[[BertConfig], Names]
    bare: tuple[str, tuple[str, ...]]  # a bare base model's weights lack this prefix: (prefix, their starts)
    heads: tuple[str, ...]  # what an import may lack (initialised fresh): Hugging Face prefixes
    tied: dict[str, str]  # a saved duplicate -> the weight it must equal (the decoder is tied)
    buffers: tuple[str, ...]  # saved by some versions, not weights
    write: Callable[[BertConfig, dict[str, int]], dict]  # config.json of our config, the special ids
    read: Callable[[dict, Path], BertConfig]  # our config of a config.json (checked)

    def hf_name(self, key: str) -> str:
        """A saved weight's name as this family's pre-training class has it: legacy gamma/beta renamed, a
        bare base model's prefixed."""
        for old, suffix in LEGACY_SUFFIXES.items():
            if key.endswith(old):
                key = key[: -len(old)] + suffix
        prefix, starts = self.bare
        return prefix + key if key.startswith(starts) else key


# ---------------------------------------------------------------- BERT and Megatron-BERT


def bert_modules(config: BertConfig, megatron: bool = False) -> Names:
    """BERT's (and Megatron-BERT's: its LayerNorms before each sublayer, `ln`, and a final one) modules."""
    names: Names = {f"embeddings.{t}": f"bert.embeddings.{t}" for t in EMBEDDING_TABLES}
    names |= {
        "mlm_head.dense": "cls.predictions.transform.dense",
        "mlm_head.norm": "cls.predictions.transform.LayerNorm",
        "mlm_head.bias": "cls.predictions.bias",
        "pooler": "bert.pooler.dense",
        "nsp_head": "cls.seq_relationship",
    }
    if megatron:
        names["final_norm"] = "bert.encoder.ln"
    else:
        names["embeddings.norm"] = "bert.embeddings.LayerNorm"
    for i in range(config.num_layers):
        hf = f"bert.encoder.layer.{i}"
        names |= {
            f"layers.{i}.attn.qkv": tuple(f"{hf}.attention.self.{n}" for n in QKV),
            f"layers.{i}.attn.out": f"{hf}.attention.output.dense",
            f"layers.{i}.attn_norm": f"{hf}.attention.ln" if megatron else f"{hf}.attention.output.LayerNorm",
            f"layers.{i}.mlp.fc1": f"{hf}.intermediate.dense",
            f"layers.{i}.mlp.fc2": f"{hf}.output.dense",
            f"layers.{i}.mlp_norm": f"{hf}.ln" if megatron else f"{hf}.output.LayerNorm",
        }
    return names


def bert_like(config: BertConfig) -> bool:
    """What BERT and Megatron-BERT share: learned positions, segments, the GELU MLP, biases."""
    return (config.position == "learned" and config.type_vocab_size > 0 and config.mlp == "gelu"
            and config.bias)


def write_bert(config: BertConfig, ids: dict[str, int], model_type: str = "bert") -> dict:
    """config.json of `transformers.BertConfig` (MegatronBertConfig has the same fields)."""
    prefix = "MegatronBert" if model_type == "megatron-bert" else "Bert"
    return {
        "architectures": [f"{prefix}{'ForPreTraining' if config.sentence_head else 'ForMaskedLM'}"],
        "corpusprep_objective": config.objective,  # what the sentence head learnt: NotNext or swapped
        "model_type": model_type,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": "gelu",  # exact erf GELU in transformers, as in our model
        "hidden_dropout_prob": config.dropout,
        "attention_probs_dropout_prob": config.attention_dropout,
        "max_position_embeddings": config.max_position,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.init_std,
        "layer_norm_eps": config.layer_norm_eps,
        "pad_token_id": ids["pad_token_id"],
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }


def read_bert(hf: dict, where: Path, pre_ln: bool = False) -> BertConfig:
    """Our BertConfig of a BERT (or Megatron-BERT: pre_ln) config.json; what our model cannot compute is a
    UsageError (exit 2), a size out of range a DataError."""
    checks = {
        "hidden_act": (hf.get("hidden_act", "gelu"), "gelu"),
        "position_embedding_type": (hf.get("position_embedding_type", "absolute"), "absolute"),
    }
    for key, (value, want) in checks.items():
        if value != want:
            raise UsageError(f"{where}: {key} is {value!r}; corpusprep reads only {want!r} BERT")
    return built(where, hf, lambda: BertConfig(
        vocab_size=hf["vocab_size"],
        hidden_size=hf["hidden_size"],
        num_layers=hf["num_hidden_layers"],
        num_heads=hf["num_attention_heads"],
        intermediate_size=hf["intermediate_size"],
        max_position=hf.get("max_position_embeddings", 512),
        type_vocab_size=hf.get("type_vocab_size", 2),
        dropout=hf.get("hidden_dropout_prob", 0.1),
        attention_dropout=hf.get("attention_probs_dropout_prob", 0.1),
        layer_norm_eps=hf.get("layer_norm_eps", 1e-12),
        init_std=hf.get("initializer_range", 0.02),
        pre_ln=pre_ln,
        # ours round-trips: an MLM-only export (`none`) comes back without pooler and sentence head; any
        # other BERT gets BERT's sentence head (fresh where the checkpoint lacks it)
        objective=objective(hf.get("corpusprep_objective")).name,
    ))


# ---------------------------------------------------------------- ModernBERT


def modern_modules(config: BertConfig) -> Names:
    """ModernBertForMaskedLM's modules: the fused Wqkv in our row order ([q | k | v], heads within each),
    Wi as our gated fc1 ([input | gate]), the head (dense, act, norm) and the decoder's bias."""
    names: Names = {
        "embeddings.word_embeddings": "model.embeddings.tok_embeddings",
        "layers.0.attn_norm": "model.embeddings.norm",  # ours normalises the stream's start (embedding_norm)
        "final_norm": "model.final_norm",
        "mlm_head.dense": "head.dense",
        "mlm_head.norm": "head.norm",
        "mlm_head.bias": "decoder.bias",
    }
    for i in range(config.num_layers):
        hf = f"model.layers.{i}"
        names |= {f"layers.{i}.{ours}": f"{hf}.{theirs}" for ours, theirs in (
            ("attn.qkv", "attn.Wqkv"), ("attn.out", "attn.Wo"), ("mlp_norm", "mlp_norm"),
            ("mlp.fc1", "mlp.Wi"), ("mlp.fc2", "mlp.Wo"))}
        if i:  # ModernBERT's layer 0 has no attention norm of its own (ours is its embeddings.norm)
            names[f"layers.{i}.attn_norm"] = f"{hf}.attn_norm"
    return names


def fits_modern(config: BertConfig) -> bool:
    return (config.pre_ln and config.embedding_norm and config.position == "rotary" and config.gated
            and config.type_vocab_size == 0
            and not config.sentence_head)


ACTIVATIONS = {"geglu": "gelu", "swiglu": "silu"}  # our gated MLP -> ModernBERT's hidden_activation
FULL, SLIDING = "full_attention", "sliding_attention"


def write_modern(config: BertConfig, ids: dict[str, int]) -> dict:
    """config.json of `transformers.ModernBertConfig`: every layer global, RoPE's theta ours for both layer
    types (none is local), our one bias switch for all of ModernBERT's but the decoder's."""
    rope = {"rope_type": "default", "rope_theta": config.rotary_theta}
    return {
        "architectures": ["ModernBertForMaskedLM"],
        "corpusprep_objective": config.objective,
        "model_type": "modernbert",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_activation": ACTIVATIONS[config.mlp],
        "max_position_embeddings": config.max_position,
        "initializer_range": config.init_std,
        "norm_eps": config.layer_norm_eps,
        **{f"{part}_bias": config.bias for part in ("norm", "attention", "mlp", "classifier")},
        "decoder_bias": True,
        "classifier_activation": "gelu",
        "classifier_pooling": "cls",
        "embedding_dropout": config.dropout,  # ours after the embeddings, the attention output and the MLP
        "mlp_dropout": config.dropout,
        "attention_dropout": config.attention_dropout,
        "layer_types": [FULL] * config.num_layers,
        "rope_parameters": {FULL: rope, SLIDING: rope},
        **ids,
        "bos_token_id": ids["cls_token_id"],
        "eos_token_id": ids["sep_token_id"],
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }


ROPE = Obj({}, {"rope_type": Str(), "rope_theta": Num(0)})
MODERN_CONFIG = Obj({}, {
    "hidden_activation": Str(), "classifier_activation": Str(), "norm_eps": Num(0, 1),
    **{f"{part}_bias": Bool() for part in ("norm", "attention", "mlp", "classifier", "decoder")},
    "embedding_dropout": Num(0, 1), "attention_dropout": Num(0, 1), "initializer_range": Num(0, 1e3),
    "layer_types": ListOf(Str()), "global_attn_every_n_layers": Int(1), "rope_parameters": MapOf(ROPE),
    "global_rope_theta": Num(0),
})


def read_modern(hf: dict, where: Path) -> BertConfig:
    """Our BertConfig of a ModernBERT config.json, as transformers 5 reads one (its defaults where a field
    is absent); local attention, mixed biases or another RoPE are no model of ours: a UsageError."""
    try:
        MODERN_CONFIG.check(hf, "")
    except RecordError as e:
        raise DataError(f"{where}: {e}") from None
    layers = hf["num_hidden_layers"]
    every = hf.get("global_attn_every_n_layers", 3)  # transformers' default pattern without layer_types
    types = hf.get("layer_types") or [SLIDING if i % every else FULL for i in range(layers)]
    biases = {hf.get(f"{part}_bias", False) for part in ("norm", "attention", "mlp", "classifier")}
    activation = hf.get("hidden_activation", "gelu")
    rope = (hf.get("rope_parameters") or {}).get(FULL) or {}
    cannot = [
        (len(types) != layers, f"layer_types names {len(types)} layers, num_hidden_layers {layers}"),
        (set(types) != {FULL}, f"layer_types {sorted(set(types))}: corpusprep's layers attend globally"),
        (activation not in ACTIVATIONS.values(), f"hidden_activation is {activation!r}, not gelu or silu"),
        (hf.get("classifier_activation", "gelu") != "gelu", "classifier_activation is not gelu"),
        (len(biases) > 1, "some of norm/attention/mlp/classifier_bias set, not all: one switch here"),
        (hf.get("decoder_bias", True) is not True, "decoder_bias is false: our MLM head has the vocab bias"),
        (rope.get("rope_type", "default") != "default", f"rope_type is {rope.get('rope_type')!r}"),
    ]
    for bad, why in cannot:
        if bad:
            raise UsageError(f"{where}: {why}; corpusprep reads ModernBERT as its modern-* presets build it")
    return built(where, hf, lambda: BertConfig(
        vocab_size=hf["vocab_size"],
        hidden_size=hf["hidden_size"],
        num_layers=layers,
        num_heads=hf["num_attention_heads"],
        intermediate_size=hf["intermediate_size"],
        max_position=hf.get("max_position_embeddings", 8192),
        type_vocab_size=0,
        dropout=hf.get("embedding_dropout", 0.0),
        attention_dropout=hf.get("attention_dropout", 0.0),
        layer_norm_eps=hf.get("norm_eps", 1e-5),
        init_std=hf.get("initializer_range", 0.02),
        pre_ln=True,
        embedding_norm=True,
        mlp=next(ours for ours, theirs in ACTIVATIONS.items() if theirs == activation),
        bias=biases.pop() if biases else False,
        position="rotary",
        rotary_theta=rope.get("rope_theta", hf.get("global_rope_theta", 160_000.0)),
        objective="none",  # ModernBertForMaskedLM has no sentence head
    ))


def built(where: Path, hf: dict, make: Callable[[], BertConfig]) -> BertConfig:
    """`make()`, with what config.json lacks or holds out of range (config.check_model, a pad id beyond the
    vocab) as one line naming the file."""
    try:
        config = make()
    except KeyError as e:
        raise UsageError(f"{where}: lacks {e.args[0]}") from None
    except (TypeError, ValueError) as e:  # a size out of range or no machine holds (config.check_model): data
        raise DataError(f"{where}: {e}") from None
    pad = hf.get("pad_token_id")
    if pad is not None and not 0 <= pad < config.vocab_size:  # a padding token no embedding row holds
        raise DataError(f"{where}: pad_token_id {pad} is beyond the vocab (0 to {config.vocab_size - 1})")
    return config


# ---------------------------------------------------------------- the table

# what BERT and Megatron-BERT share: names outside the layers, heads, the tied decoder, saved buffers
BERT_FILES = dict(
    bare=("bert.", ("embeddings.", "encoder.", "pooler.")),
    heads=("bert.pooler.", "cls.predictions.", "cls.seq_relationship."),
    tied={"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
          "cls.predictions.decoder.bias": "cls.predictions.bias"},
    buffers=("bert.embeddings.position_ids", "bert.embeddings.token_type_ids"),
)
FAMILIES: dict[str, Family] = {
    family.model_type: family
    for family in (
        Family("bert", "BERT", "post-LN, learned positions, segments, mlp=gelu, biases",
               fits=lambda c: not c.pre_ln and bert_like(c), modules=bert_modules, write=write_bert,
               read=read_bert, **BERT_FILES),
        Family("megatron-bert", "Megatron-BERT", "BERT's with pre_ln=true (no embedding_norm)",
               fits=lambda c: c.pre_ln and not c.embedding_norm and bert_like(c),
               modules=lambda c: bert_modules(c, megatron=True),
               write=lambda c, ids: write_bert(c, ids, "megatron-bert"),
               read=lambda hf, where: read_bert(hf, where, pre_ln=True), **BERT_FILES),
        Family("modernbert", "ModernBERT", "the modern-* presets' pre-LN with embedding_norm, "
               "position=rotary, a gated mlp, type_vocab_size=0 and objective none",
               fits=fits_modern, modules=modern_modules, write=write_modern, read=read_modern,
               bare=("model.", ("embeddings.", "layers.", "final_norm.")), heads=("head.", "decoder."),
               tied={"decoder.weight": "model.embeddings.tok_embeddings.weight"}, buffers=()),
    )
}


def family_of(config: BertConfig) -> Family:
    """The Hugging Face family that computes `config`; a UsageError naming what each needs otherwise."""
    for family in FAMILIES.values():
        if family.fits(config):
            return family
    shown = (f"pre_ln={str(config.pre_ln).lower()}, embedding_norm={str(config.embedding_norm).lower()}, "
             f"mlp={config.mlp}, position={config.position}, bias={str(config.bias).lower()}, "
             f"type_vocab_size={config.type_vocab_size}, objective {config.objective}")
    needs = "; ".join(f"{f.title} needs {f.needs}" for f in FAMILIES.values())
    raise UsageError(f"no Hugging Face class computes this model ({shown}): {needs}")


def family_named(model_type: object, where: Path) -> Family:
    """The family of a config.json's model_type (BERT's when absent)."""
    if model_type not in FAMILIES:
        known = ", ".join(f"{name!r} {f.title}" for name, f in FAMILIES.items())
        raise UsageError(f"{where}: model_type is {model_type!r}; corpusprep reads only {known}")
    return FAMILIES[model_type]


def config_from_hf(hf: dict, where: Path) -> BertConfig:
    """Our BertConfig for a Hugging Face config.json (checked by the records loader first)."""
    family = family_named(hf.get("model_type", "bert"), where)
    return family.read(hf, where)


def hf_config(config: BertConfig, tokens: list[str]) -> dict:
    """config.json for `config`, with the special tokens' ids from the vocab's `tokens`."""
    ids = {f"{name}_token_id": tokens.index(f"[{name.upper()}]") for name in ("pad", "cls", "sep")}
    return family_of(config).write(config, ids)


# ---------------------------------------------------------------- weights


def our_shapes(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every weight of our model for `config` and its shape (built on the meta device: no memory)."""
    from trainer.model import BertForPreTraining

    with torch.device("meta"):
        return {k: tuple(v.shape) for k, v in BertForPreTraining(config).state_dict().items()}


def key_names(config: BertConfig) -> dict[str, str | tuple[str, ...]]:
    """Each of our weights -> its Hugging Face name (a tuple: the q, k and v weights our fused qkv holds)."""
    modules = family_of(config).modules(config)
    names: dict[str, str | tuple[str, ...]] = {}
    for key in our_shapes(config):
        if key in modules:
            names[key] = modules[key]
            continue
        module, part = key.rsplit(".", 1)
        theirs = modules[module]
        names[key] = tuple(f"{t}.{part}" for t in theirs) if isinstance(theirs, tuple) else f"{theirs}.{part}"
    return names


def to_hf(state: dict[str, torch.Tensor], config: BertConfig) -> dict[str, torch.Tensor]:
    """Our state dict -> the family's, as its `save_pretrained` writes it (the tied decoder omitted)."""
    out: dict[str, torch.Tensor] = {}
    for ours, theirs in key_names(config).items():
        if isinstance(theirs, tuple):
            out |= dict(zip(theirs, state[ours].chunk(3, dim=0), strict=True))
        else:
            out[theirs] = state[ours]
    # safetensors refuses views and shared storage: give every tensor its own contiguous memory
    return {k: v.detach().to("cpu", copy=True).contiguous() for k, v in out.items()}


def from_hf(state: dict[str, torch.Tensor], config: BertConfig) -> tuple[dict[str, torch.Tensor], list[str]]:
    """A Hugging Face state dict of `config`'s family -> ours, and the Hugging Face names of heads it lacked.

    Accepts the pre-training and masked-LM classes' checkpoints, a bare base model's and legacy gamma/beta
    names. Missing heads (pooler, MLM transform, NSP) are returned so the caller can initialise them fresh;
    a missing encoder weight, an untied decoder or a leftover unknown key is an error.
    """
    family = family_of(config)
    state = {family.hf_name(key): value for key, value in state.items()}
    for buffer in family.buffers:
        state.pop(buffer, None)
    for duplicate, original in family.tied.items():
        copy, kept = state.pop(duplicate, None), state.get(original)
        if copy is not None and kept is not None and not torch.equal(copy, kept):
            what = "the MLM decoder is not tied to the word embeddings" if duplicate.endswith("weight") \
                else f"{duplicate} differs from {original}"
            raise UsageError(f"{what} ({family.title} and our model tie them)")
    out: dict[str, torch.Tensor] = {}
    missing: list[str] = []
    for ours, theirs in key_names(config).items():
        names = theirs if isinstance(theirs, tuple) else (theirs,)
        if all(n in state for n in names):
            blocks = [state.pop(n) for n in names]
            out[ours] = torch.cat(blocks) if len(blocks) > 1 else blocks[0]
        else:
            missing += [n for n in names if n not in state]
    if lost := [k for k in missing if not k.startswith(family.heads)]:
        raise UsageError(f"not a complete {family.title} checkpoint: missing {', '.join(lost[:5])}")
    if state:
        raise UsageError(f"unknown weights (not {family.title}?): {', '.join(sorted(state)[:5])}")
    return out, missing


def hf_shapes(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """The shape of every weight of the family's class for `config`, by Hugging Face name (the tied
    duplicates some files hold too)."""
    ours = our_shapes(config)
    shapes: dict[str, tuple[int, ...]] = {}
    for key, theirs in key_names(config).items():
        if isinstance(theirs, tuple):
            rows, *rest = ours[key]
            shapes |= {name: (rows // 3, *rest) for name in theirs}
        else:
            shapes[theirs] = ours[key]
    return shapes | {dup: shapes[original] for dup, original in family_of(config).tied.items()}
