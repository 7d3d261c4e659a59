"""Exports beyond BERT (trainer/hf_families.py): the modern-* presets as `ModernBertForMaskedLM`, pre-LN BERT
as Megatron-BERT. What trainer.evaluate needs of an export (the fine-tuning Auto classes load it, our
tokenizer's inputs run through it), round trips through trainer.import_hf, and what is refused in one line:
a model no class computes, a ModernBERT of local attention, a padding id beyond the vocab (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from corpusprep.errors import DataError, UsageError
from tests.interop.helpers import load_with_log, one_thread, random_model, write_checkpoint, write_vocab
from trainer import export as ex
from trainer.config import MODERN, preset
from trainer.hf_families import FAMILIES
from trainer.import_hf import main as import_main

transformers = pytest.importorskip("transformers")

# each family's model, small: (our options, the class its export names)
MODELS = {
    "modernbert": ({**MODERN, "objective": "none"}, "ModernBertForMaskedLM"),
    "megatron-bert": ({"pre_ln": True}, "MegatronBertForPreTraining"),
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


def small(**options):
    return preset("tiny", vocab_size=300, hidden_size=32, num_heads=4, max_position=64, **options)


@pytest.fixture(scope="module", params=list(MODELS))
def exported(request, tmp_path_factory) -> tuple[str, Path, Path]:
    """(family, the export, the checkpoint it came from)."""
    tmp = tmp_path_factory.mktemp(request.param)
    checkpoint = write_checkpoint(tmp / "checkpoint", random_model(small(**MODELS[request.param][0]), seed=2))
    return request.param, ex.export(checkpoint, tmp / "hf", write_vocab(tmp / "vocab", 300)), checkpoint


def test_the_export_names_its_class_and_transformers_loads_every_weight(exported):
    family, out, _ = exported
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == family and config["architectures"] == [MODELS[family][1]]
    model, info, messages = load_with_log(transformers.AutoModelForMaskedLM, out)
    assert not info["missing_keys"] and not info["mismatched_keys"] and not info["unexpected_keys"] \
        or family == "megatron-bert"  # (its MLM class drops the pooler and NSP head: unexpected)
    assert not info["missing_keys"] and not [m for m in messages if "newly" in m.lower()]
    if family == "modernbert":  # every layer global, RoPE's theta ours, no bias but the decoder's
        assert set(model.config.layer_types) == {"full_attention"} and not model.config.mlp_bias
        assert model.config.rope_parameters["full_attention"]["rope_theta"] == 10000.0
        assert model.config.pad_token_id == 0 and model.config.cls_token_id == 2


@pytest.mark.parametrize("auto", ["AutoModelForTokenClassification", "AutoModelForSequenceClassification"])
def test_fine_tuning_auto_classes_load_it_and_take_our_tokenizers_inputs(exported, auto):
    """The fine-tuning route with Auto classes: only the new classifier is fresh; AutoTokenizer tokenizes as
    our tokenizer does (for ModernBERT without token_type_ids, which it has no use for), and a training
    step on its output, with the zero token_type_ids trainer.evaluate's tagging adds, has a finite loss."""
    from tokenizers import Tokenizer

    family, out, _ = exported
    model, info, _ = load_with_log(getattr(transformers, auto), out, num_labels=3)
    assert type(model).__name__.startswith(MODELS[family][1].split("For")[0])
    assert info["missing_keys"] and all(k.startswith("classifier.") for k in info["missing_keys"])
    assert not info["mismatched_keys"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    batch = tokenizer(["w1 w2 w3", "w4 w5"], padding=True, return_tensors="pt")
    ours = Tokenizer.from_file(str(out / "tokenizer.json")).encode("w1 w2 w3").ids
    assert batch["input_ids"][0].tolist() == ours and ("token_type_ids" in batch) == (family != "modernbert")
    batch["token_type_ids"] = torch.zeros_like(batch["input_ids"])
    labels = torch.zeros(batch["input_ids"].shape if "Token" in auto else (2,), dtype=torch.long)
    loss = model.train()(**batch, labels=labels).loss
    loss.backward()
    assert torch.isfinite(loss)


def test_trainer_evaluate_fine_tunes_the_exports_own_class(exported):
    """trainer.evaluate's model for a task is the export's class with the export's weights, not a BERT
    whose encoder transformers silently initialises anew (what Bert* classes make of these exports)."""
    from types import SimpleNamespace

    from safetensors.torch import load_file

    from trainer.evaluate.finetune import build_model

    family, out, _ = exported
    from trainer.evaluate.tasks import task_kind

    data = SimpleNamespace(kind="tag", task=task_kind("tag"), labels=("A", "B"))
    model = build_model(out, data, "pretrained", seed=0)
    assert type(model).__name__.startswith(MODELS[family][1].split("For")[0])
    built, prefix = model.state_dict(), FAMILIES[family].bare[0]  # the encoder: bert.* or model.*
    encoder = {k: v for k, v in load_file(out / "model.safetensors").items()
               if k.startswith(prefix) and not k.startswith(FAMILIES[family].heads)}  # not the pooler
    assert len(encoder) > 10 and all(k in built and torch.equal(built[k], v) for k, v in encoder.items())
    # the features trainer.evaluate makes are what this family's model reads (ModernBERT: no token types)
    import inspect

    from transformers import AutoTokenizer

    from trainer.evaluate.tasks.base import input_names

    names = input_names(AutoTokenizer.from_pretrained(str(out)))
    assert set(names) <= set(inspect.signature(model.forward).parameters)
    assert ("token_type_ids" in names) == (family != "modernbert")


def test_import_then_export_gives_the_same_files(exported, tmp_path):
    """trainer.import_hf reads the export back as the model it was (options and weights), and exporting the
    import writes the same weights and the same config."""
    from safetensors.torch import load_file

    from trainer.checkpoint import load_checkpoint

    family, out, checkpoint = exported
    assert import_main([str(out), str(tmp_path / "init")]) == 0
    saved, state, _ = load_checkpoint(checkpoint)
    config, imported, _ = load_checkpoint(tmp_path / "init")
    assert config == saved and imported.keys() == state.keys()
    assert all(torch.equal(imported[k], state[k]) for k in state)
    back = ex.export(tmp_path / "init", tmp_path / "back")
    before, after = load_file(out / "model.safetensors"), load_file(back / "model.safetensors")
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    keep = {"corpusprep_trained_length"}  # an import's trained length is unknown
    same = [json.loads((d / "config.json").read_text()) for d in (out, back)]
    assert [{k: v for k, v in c.items() if k not in keep} for c in same[:1]] == \
        [{k: v for k, v in c.items() if k not in keep} for c in same[1:]]


def test_verify_reports_exact_logits(exported, tmp_path, capsys):
    _, _, checkpoint = exported
    vocab = write_vocab(tmp_path / "vocab", 300)
    assert ex.main([str(checkpoint), str(tmp_path / "out"), "--vocab", str(vocab), "--verify"]) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert report["missing_keys"] == [] and report["mlm_max_abs_diff"] < 1e-5


@pytest.mark.parametrize("options, needs", [
    ({**MODERN, "objective": "nsp"}, "objective nsp"),  # ModernBertForMaskedLM has no sentence head
    ({"pre_ln": True, "position": "rotary"}, "position=rotary"),
    ({"bias": False}, "bias=false"),
    ({"type_vocab_size": 0}, "type_vocab_size=0"),
])
def test_combinations_no_class_computes_are_refused_in_one_line(options, needs, tmp_path):
    checkpoint = write_checkpoint(tmp_path / "ckpt", random_model(small(**options)))
    with pytest.raises(UsageError) as refused:
        ex.export(checkpoint, tmp_path / "out", write_vocab(tmp_path / "vocab", 300))
    message = str(refused.value)
    assert "\n" not in message and message.startswith("no Hugging Face class computes this model (")
    assert needs in message and "ModernBERT needs" in message
    assert not (tmp_path / "out").exists()


def modern_export(tmp_path: Path) -> Path:
    checkpoint = write_checkpoint(tmp_path / "ckpt", random_model(small(**MODELS["modernbert"][0])))
    return ex.export(checkpoint, tmp_path / "hf", write_vocab(tmp_path / "vocab", 300))


def test_corpusprep_validate_finds_a_modernbert_export_whole(tmp_path):
    """`corpusprep validate` (torch-free) finds a ModernBERT export's word embeddings (tok_embeddings) and
    layers (model.layers.N) as it finds BERT's, and a layer missing from its weights."""
    from safetensors.torch import load_file, save_file

    from trainer.outputs import FAMILY_TITLES, validate_export

    assert {name: family.title for name, family in FAMILIES.items()} == FAMILY_TITLES
    out = modern_export(tmp_path)
    assert validate_export(out) == ([], "ModernBERT, 64 positions")
    weights = load_file(out / "model.safetensors")
    kept = {k: v for k, v in weights.items() if not k.startswith("model.layers.1.")}  # one layer of 2
    save_file(kept, out / "model.safetensors")
    problems, _ = validate_export(out)
    assert any("num_hidden_layers 2; model.safetensors holds 1 encoder layers" in p for p in problems)


@pytest.mark.parametrize("change, message", [
    ({"layer_types": ["sliding_attention", "full_attention"]}, "layer_types ['full_attention', "
     "'sliding_attention']: corpusprep's layers attend globally"),
    ({"layer_types": None}, "layer_types ['full_attention', 'sliding_attention']"),  # every third global
    ({"hidden_activation": "relu"}, "hidden_activation is 'relu', not gelu or silu"),
    ({"mlp_bias": True}, "some of norm/attention/mlp/classifier_bias set, not all"),
    ({"decoder_bias": False}, "decoder_bias is false"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn"}}}, "rope_type is 'yarn'"),
    ({"model_type": "roberta"}, "model_type is 'roberta'; corpusprep reads only 'bert' BERT, "
     "'megatron-bert' Megatron-BERT, 'modernbert' ModernBERT"),
])
def test_a_modernbert_our_model_cannot_compute_is_one_line_exit_2(tmp_path, capsys, change, message):
    out = modern_export(tmp_path)
    config = json.loads((out / "config.json").read_text()) | change
    (out / "config.json").write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    assert import_main([str(out), str(tmp_path / "init")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "init").exists()


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_a_padding_id_beyond_the_vocab_is_refused_before_anything_is_read(tmp_path, capsys, family):
    """Issue 39: pad_token_id 10^6 in a 300-token model passed import_hf, and trainer.evaluate (which checks
    a Hugging Face directory with the same export.check_hf_model) crashed on an AssertionError."""
    options = {} if family == "bert" else MODELS["modernbert"][0]
    checkpoint = write_checkpoint(tmp_path / "ckpt", random_model(small(**options)))
    out = ex.export(checkpoint, tmp_path / "hf", write_vocab(tmp_path / "vocab", 300))
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(config | {"pad_token_id": 10**6}))
    assert import_main([str(out), str(tmp_path / "init")]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {out / 'config.json'}: pad_token_id 1000000 is beyond the vocab (0 to 299)\n"
    with pytest.raises(DataError, match="pad_token_id 1000000 is beyond the vocab"):
        ex.check_hf_model(out)  # trainer.evaluate's check of a Hugging Face directory
