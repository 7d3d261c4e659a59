"""`trainer.export` / `trainer.import_hf`: Hugging Face directories that load cleanly, round trips, errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from corpusprep.engine.lock import LOCK_NAME
from corpusprep.engine.manifest import MANIFEST
from corpusprep.errors import DataError, UsageError
from tests.interop.helpers import (
    complaints,
    load_with_log,
    one_thread,
    random_model,
    write_checkpoint,
    write_vocab,
)
from trainer import checkpoint, checkpoint_checks
from trainer import export as ex
from trainer import hf_families as families
from trainer.config import preset
from trainer.import_hf import import_hf
from trainer.import_hf import main as import_main

FILES = {
    "config.json",
    "model.safetensors",
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def config():
    return preset("tiny", vocab_size=300, hidden_size=32, num_heads=4, max_position=64)


# ---------------------------------------------------------------- names (no transformers needed)


def test_to_hf_and_back_is_identity(config):
    state = random_model(config).state_dict()
    hf = families.to_hf(state, config)
    back, fresh = families.from_hf(hf, config)
    assert fresh == []
    assert back.keys() == state.keys()
    assert all(torch.equal(back[k], state[k]) for k in state)
    # q, k and v are the row blocks of the fused projection, in that order
    H = config.hidden_size
    qkv = state["layers.1.attn.qkv.weight"]
    assert torch.equal(hf["bert.encoder.layer.1.attention.self.key.weight"], qkv[H : 2 * H])


@pytest.mark.slow  # ~4.3 s idle
@pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"
)  # torch's own
def test_wrapper_prefixes_are_stripped_from_compiled_and_ddp_state_dicts(config, tmp_path):
    model = random_model(config)
    compiled = torch.compile(model)  # wrapping is lazy: nothing is compiled until a forward
    assert next(iter(compiled.state_dict())).startswith("_orig_mod.")
    store = torch.distributed.FileStore(str(tmp_path / "store"), 1)
    torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        ddp = nn.parallel.DistributedDataParallel(model)
        wrapped = {"compile": compiled, "ddp": ddp, "compile(ddp)": torch.compile(ddp)}
        for name, module in wrapped.items():
            state = module.state_dict()
            assert any(k.startswith(("module.", "_orig_mod.")) for k in state), name
            cleaned = checkpoint_checks.strip_wrappers(state)
            assert cleaned.keys() == model.state_dict().keys(), name
    finally:
        torch.distributed.destroy_process_group()


def test_export_from_prefixed_checkpoint_equals_plain(config, tmp_path):
    from safetensors.torch import load_file

    model = random_model(config)
    vocab = write_vocab(tmp_path / "vocab", config.vocab_size)
    plain = write_checkpoint(tmp_path / "plain", model)
    state = {f"_orig_mod.module.{k}": v for k, v in model.state_dict().items()}
    prefixed = write_checkpoint(tmp_path / "prefixed", model, state=state)
    a = load_file(ex.export(plain, tmp_path / "a", vocab) / "model.safetensors")
    b = load_file(ex.export(prefixed, tmp_path / "b", vocab) / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_model_no_class_computes_is_refused_in_one_line_before_anything_is_written(tmp_path, capsys):
    """Pre-LN with GeGLU and learned positions: Megatron-BERT has no gated MLP, ModernBERT no position table.
    The line says what each family needs."""
    c = preset("tiny", vocab_size=300, hidden_size=32, num_heads=4, pre_ln=True, mlp="geglu")
    ckpt = write_checkpoint(tmp_path / "ckpt", random_model(c))
    vocab = write_vocab(tmp_path / "vocab", 300)
    assert ex.main([str(ckpt), str(tmp_path / "out"), "--vocab", str(vocab)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Hugging Face class computes this model (pre_ln=true" in err
    assert "mlp=geglu, position=learned" in err and "Megatron-BERT needs" in err and "ModernBERT needs" in err
    assert not (tmp_path / "out").exists()


def test_incomplete_or_foreign_checkpoints_fail_with_the_file_named(config, tmp_path, capsys):
    vocab = write_vocab(tmp_path / "vocab", config.vocab_size)
    model = random_model(config)
    state = {k: v for k, v in model.state_dict().items() if k != "layers.0.mlp.fc1.weight"}
    ckpt = write_checkpoint(tmp_path / "ckpt", model, state=state)
    with pytest.raises(DataError, match=r"weights\.safetensors: missing layers\.0\.mlp\.fc1\.weight"):
        ex.export(ckpt, tmp_path / "out", vocab)
    (ckpt / "weights.safetensors").write_bytes(b"not a safetensors file")
    assert ex.main([str(ckpt), str(tmp_path / "out"), "--vocab", str(vocab)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "weights.safetensors: missing, or not the file" in err
    assert len(err.splitlines()) == 1
    assert ex.main([str(tmp_path), str(tmp_path / "out")]) == 2  # no weights.safetensors / config.json
    assert not (tmp_path / "out").exists()


def test_existing_output_is_kept_without_overwrite(config, tmp_path):
    vocab = write_vocab(tmp_path / "vocab", config.vocab_size)
    ckpt = write_checkpoint(tmp_path / "ckpt", random_model(config))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="--overwrite"):
        ex.export(ckpt, out, vocab)
    assert (out / "keep.txt").read_text() == "mine"
    ex.export(ckpt, out, vocab, overwrite=True)  # written beside it, never deleting it
    assert {p.name for p in out.iterdir()} == FILES | {"keep.txt", MANIFEST, LOCK_NAME}
    assert not list(out.glob(".*.tmp-*")) and not (out / ".work").exists()


def test_vocab_must_match_the_model(config, tmp_path):
    ckpt = write_checkpoint(tmp_path / "ckpt", random_model(config))
    with pytest.raises(UsageError, match="299 tokens, the model has 300"):
        ex.export(ckpt, tmp_path / "out", write_vocab(tmp_path / "vocab", 299))
    with pytest.raises(UsageError, match="pass --vocab"):
        ex.export(ckpt, tmp_path / "out")  # config names no shards


# ---------------------------------------------------------------- a checkpoint from the real trainer


@pytest.fixture(scope="module")
def trained_run(tiny_shards, tmp_path_factory) -> Path:
    """A few steps of the tiny preset on tiny_shards, through the trainer's own loop and checkpoints.
    (Switch to the demo pipeline's run directory once `corpusprep run pipelines/demo.toml` is testable.)"""
    from trainer.config import load_config
    from trainer.train import train

    run_dir = tmp_path_factory.mktemp("run")
    config = load_config(
        {
            "model": {"preset": "tiny"},
            "data": {"shards": str(tiny_shards), "batch_size": 16},
            "optim": {"lr": 1e-3},
            "schedule": {"steps": 6, "warmup_steps": 1},
            "checkpoint": {"every": 6},
            "eval": {"every": 0, "max_batches": 1},
            "logging": {"run_dir": str(run_dir), "every": 6},
            "device": "cpu",
        }
    )
    train(config)
    return run_dir


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "model"
    assert ex.main([str(trained_run), str(out)]) == 0  # run dir -> newest checkpoint; vocab via the manifest
    return out


def test_a_pipeline_run_directory_exports_its_training_stage(trained_run, tmp_path, capsys):
    """`corpusprep run` puts the trainer's run under RUN_DIR/train (or train-PHASE per phase)."""
    import shutil

    pipeline = tmp_path / "pipeline"
    shutil.copytree(trained_run, pipeline / "train")
    (pipeline / "shards").mkdir()
    assert ex.main([str(pipeline), str(tmp_path / "hf")]) == 0
    assert (tmp_path / "hf" / "model.safetensors").is_file()
    shutil.copytree(trained_run, pipeline / "train-seq512")
    assert ex.main([str(pipeline), str(tmp_path / "hf2")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "several trainer runs" in err
    assert str(pipeline / "train") in err and str(pipeline / "train-seq512") in err
    assert not (tmp_path / "hf2").exists()


def test_export_writes_the_hugging_face_files(exported, tiny_shards):
    assert {p.name for p in exported.iterdir()} == FILES | {MANIFEST, LOCK_NAME}  # the artifact's own two
    vocab_dir = Path(json.loads((tiny_shards / "manifest.json").read_text())["vocab"]["path"])
    assert (exported / "vocab.txt").read_bytes() == (vocab_dir / "vocab.txt").read_bytes()  # the shards' own
    config = json.loads((exported / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"] and config["num_hidden_layers"] == 2


@pytest.mark.slow  # ~1.5 s idle
def test_key_set_is_what_transformers_itself_saves(exported, tmp_path):
    transformers = pytest.importorskip("transformers")
    from safetensors import safe_open

    hf_config = transformers.BertConfig.from_pretrained(str(exported))
    transformers.BertForPreTraining(hf_config).save_pretrained(str(tmp_path / "reference"))
    with (
        safe_open(exported / "model.safetensors", "pt") as ours,
        safe_open(tmp_path / "reference" / "model.safetensors", "pt") as ref,
    ):
        keys = set(ref.keys())
        assert set(ours.keys()) == keys
        assert all(ours.get_slice(k).get_shape() == ref.get_slice(k).get_shape() for k in keys)
        assert ours.metadata() == {"format": "pt"}


@pytest.mark.parametrize("auto", ["BertForPreTraining", "AutoModelForPreTraining"])
def test_pretraining_classes_load_every_weight_silently(exported, auto):
    transformers = pytest.importorskip("transformers")
    model, info, messages = load_with_log(getattr(transformers, auto), exported)
    assert type(model).__name__ == "BertForPreTraining"
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert messages == []  # not a single transformers warning or Python warning


@pytest.mark.parametrize("auto", ["AutoModel", "AutoModelForMaskedLM"])
def test_other_auto_classes_miss_nothing(exported, auto, tmp_path):
    """These architectures drop heads (NSP, pooler, MLM), so transformers lists those as unexpected, exactly
    as for its own BertForPreTraining save; nothing may be missing or freshly initialised."""
    transformers = pytest.importorskip("transformers")
    cls = getattr(transformers, auto)
    _, info, messages = load_with_log(cls, exported)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    assert not [m for m in messages if "initialized" in m.lower() and "newly" in m.lower()]
    assert bool(complaints(messages)) == bool(info["unexpected_keys"])  # the log capture works
    assert all(k.startswith(("cls.", "bert.pooler.")) for k in info["unexpected_keys"])
    hf_config = transformers.BertConfig.from_pretrained(str(exported))
    transformers.BertForPreTraining(hf_config).save_pretrained(str(tmp_path / "reference"))
    _, reference, _ = load_with_log(cls, tmp_path / "reference")
    assert set(info["unexpected_keys"]) == set(reference["unexpected_keys"])


def test_auto_tokenizer_matches_our_tokenizer(exported):
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theirs = transformers.AutoTokenizer.from_pretrained(str(exported))
    assert [str(w.message) for w in caught] == []
    ours = Tokenizer.from_file(str(exported / "tokenizer.json"))
    a, b = "Return the Path of a file, or None.", "Raise ValueError if the [MASK] is closed!"
    encoded = theirs(a, b)
    assert encoded["input_ids"] == ours.encode(a, b).ids
    assert encoded["input_ids"][0] == theirs.cls_token_id and theirs.mask_token_id in encoded["input_ids"]
    assert set(encoded["token_type_ids"]) == {0, 1}
    assert theirs.model_max_length == 64  # the longest sequence trained on (tiny_shards), not 512


def test_fill_mask_pipeline_runs_offline(exported):
    transformers = pytest.importorskip("transformers")
    fill = transformers.pipeline("fill-mask", model=str(exported), device="cpu")
    results = fill("return the [MASK] of the file.", top_k=3)
    assert len(results) == 3
    assert all(r["sequence"].startswith("return the") and 0 < r["score"] <= 1 for r in results)
    assert results[0]["score"] >= results[-1]["score"]


def test_verify_flag_reports_exact_logits(trained_run, tmp_path, capsys):
    pytest.importorskip("transformers")
    assert ex.main([str(trained_run), str(tmp_path / "out"), "--verify"]) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert report["missing_keys"] == report["unexpected_keys"] == []
    assert report["mlm_max_abs_diff"] < 1e-5 and report["nsp_max_abs_diff"] < 1e-5


# ---------------------------------------------------------------- import_hf


def hf_checkpoint(tmp_path: Path, cls_name: str = "BertForPreTraining", lowercase: bool = True) -> Path:
    transformers = pytest.importorskip("transformers")
    hf_config = transformers.BertConfig(
        vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64
    )
    torch.manual_seed(1)
    model = getattr(transformers, cls_name)(hf_config)
    with torch.no_grad():  # non-trivial biases and LayerNorms, so every tensor is checked
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    out = tmp_path / "hf"
    model.save_pretrained(str(out))
    write_vocab(out, 300)
    (out / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase}))
    return out


def test_import_then_export_gives_identical_weights(tmp_path):
    from safetensors.torch import load_file

    hf_dir = hf_checkpoint(tmp_path, lowercase=False)
    assert import_main([str(hf_dir), str(tmp_path / "init")]) == 0
    init = tmp_path / "init"
    assert (init / "vocab" / "vocab.txt").read_bytes() == (hf_dir / "vocab.txt").read_bytes()
    normalizer = json.loads((init / "vocab" / "tokenizer.json").read_text())["normalizer"]
    assert normalizer["lowercase"] is False  # the casing of the imported tokenizer is kept
    ex.export(init, tmp_path / "back")  # vocab: the checkpoint's own vocab/
    before = load_file(hf_dir / "model.safetensors")
    after = load_file(tmp_path / "back" / "model.safetensors")
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_import_fills_missing_heads_and_says_so(tmp_path, capsys):
    hf_dir = hf_checkpoint(tmp_path, "BertForMaskedLM")  # no pooler, no NSP head
    record = import_hf(hf_dir, tmp_path / "init")
    assert sorted(record["source"]["initialized_fresh"]) == sorted(
        [
            "bert.pooler.dense.weight",
            "bert.pooler.dense.bias",
            "cls.seq_relationship.weight",
            "cls.seq_relationship.bias",
        ]
    )
    config, state, _ = checkpoint.load_checkpoint(tmp_path / "init")
    checkpoint_checks.check_state(state, config, tmp_path)
    assert float(state["nsp_head.weight"].std()) == pytest.approx(config.init_std, rel=0.3)


def test_import_refuses_what_our_model_cannot_compute(tmp_path):
    hf_dir = hf_checkpoint(tmp_path)
    hf_config = json.loads((hf_dir / "config.json").read_text())
    (hf_dir / "config.json").write_text(json.dumps(hf_config | {"hidden_act": "relu"}))
    with pytest.raises(UsageError, match="hidden_act is 'relu'"):
        import_hf(hf_dir, tmp_path / "init")
    assert not (tmp_path / "init").exists()


def test_legacy_gamma_beta_names_import(config):
    hf = families.to_hf(random_model(config).state_dict(), config)
    legacy = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in hf.items()
    }
    assert any(k.endswith(".gamma") for k in legacy)
    back, fresh = families.from_hf(legacy, config)
    assert fresh == [] and all(torch.equal(back[k], v) for k, v in families.from_hf(hf, config)[0].items())


def test_an_untied_decoder_is_refused_and_a_tied_copy_accepted(config):
    hf = families.to_hf(random_model(config).state_dict(), config)
    words = hf["bert.embeddings.word_embeddings.weight"]
    tied = hf | {
        "cls.predictions.decoder.weight": words.clone(),
        "cls.predictions.decoder.bias": hf["cls.predictions.bias"].clone(),
    }  # older pytorch_model.bin files store both copies
    assert families.from_hf(tied, config)[1] == []
    with pytest.raises(UsageError, match="not tied"):
        families.from_hf(hf | {"cls.predictions.decoder.weight": words + 1}, config)
