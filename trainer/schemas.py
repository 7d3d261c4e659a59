"""The trainer's records read back, registered with `corpusprep.engine.records`: a checkpoint's
`config.json` and `trainer.json` (trainer.checkpoint), and a Hugging Face BERT's `config.json`
(trainer.export, trainer.import_hf). No torch: `corpusprep validate` checks them without it."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import (
    COUNT,
    FILES,
    SCALAR,
    SHA256,
    Either,
    Int,
    ListOf,
    MapOf,
    Name,
    Num,
    Obj,
    Opt,
    Rule,
    Str,
)
from corpusprep.pair.schemas import OBJECTIVE

# Checkpoints (trainer/checkpoint.py). The model's fields are checked by trainer.model_config.check_model.
CHECKPOINT_RECORD = Obj(
    {"model": MapOf(SCALAR)},
    {
        "format": Int(2, 2),
        "train": Obj({}, {"data": Obj({}, {"shards": Str()})}),
        "vocab": Obj({}, {"sha256": Opt(SHA256), "size": Opt(Int(1)), "path": Name()}),
        "shards": MapOf(SCALAR),
        "files": FILES,
        "source": Obj({}, {"huggingface": Str(), "initialized_fresh": ListOf(Str())}),
    },
)
TENSOR = Obj({"tensor": Str()}, extra=False)  # a reference to a tensor of the checkpoint's safetensors file
STATE_VALUE = Either(SCALAR, TENSOR, ListOf(SCALAR))  # an optimizer's or a schedule's state entry
DATA_POSITION = Obj({"epoch": COUNT, "examples": COUNT}, extra=False)  # a place in the global order
LEGACY_POSITION = Obj({"batches": COUNT, "rows": ListOf(COUNT, 1024)}, extra=False)  # per rank and worker
TRAINER = Obj(
    {
        "format": Int(2, 2),
        "step": COUNT,
        "rng": ListOf(Obj({"cpu": TENSOR, "cuda": Opt(TENSOR)}, extra=False), 2**16, 1),
        "optimizer": Obj({"state": MapOf(MapOf(STATE_VALUE), key=Str(pattern=r"\d{1,9}", what="an index")),
                          "param_groups": ListOf(MapOf(STATE_VALUE), 1024, 1)}, extra=False),
        "scheduler": MapOf(STATE_VALUE),
        "last_metrics": MapOf(Num(finite=False)),
    },
    {
        "data": DATA_POSITION,
        "positions": ListOf(LEGACY_POSITION, 2**16, 1),  # an earlier trainer's: trainer.checkpoint reads it
        "elapsed": Num(0),  # seconds of training so far (a budgeted run's clock); absent before budgets
    },
    extra=False,
)
TRAINER_STATE = Rule(TRAINER, lambda r: None if {"data", "positions"} & set(r) else ("data", "missing"))

# A Hugging Face model's config.json, of any family corpusprep reads and writes (BERT, Megatron-BERT,
# ModernBERT: trainer.hf_families), by the fields they share; trainer.export.check_hf_model loads it, and
# each family's own fields are checked as trainer.hf_families reads them.
DIM = Int(1, 2**31 - 1)
HF_CONFIG = Obj(
    {"vocab_size": DIM, "hidden_size": DIM, "num_hidden_layers": DIM, "num_attention_heads": DIM,
     "intermediate_size": DIM},
    {
        "max_position_embeddings": DIM, "type_vocab_size": DIM,
        "hidden_dropout_prob": Num(0, 1), "attention_probs_dropout_prob": Num(0, 1),
        "layer_norm_eps": Num(0, 1), "initializer_range": Num(0, 1e3),
        "model_type": Str(), "hidden_act": Str(), "position_embedding_type": Str(),
        "corpusprep_objective": Opt(OBJECTIVE), "pad_token_id": Opt(Int()), "architectures": ListOf(Str()),
    },
)

records.register(__name__, {
    "checkpoint_config": CHECKPOINT_RECORD,  # step-N/config.json, an import's config.json
    "trainer_state": TRAINER_STATE,  # step-N/trainer.json
    "hf_config": HF_CONFIG,  # a Hugging Face model's config.json (BERT, Megatron-BERT, ModernBERT)
})
