"""Outputs handed over by someone else, each damaged as a hostile user would: a manifest name holding a
newline, a vocab.txt that is not UTF-8, a curves.png that is a link, a metrics.jsonl of bytes and absurd
numbers, a Hugging Face export given as a run dir, a checkpoint of float8 or NaN weights. Each is one line
(or a clean run), never a traceback, never a write outside the output."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from corpusprep.engine import records
from corpusprep.errors import DataError, guarded
from tests.security.trust_world import copy, corpusprep, train_args, trainer_export, trainer_run
from trainer.import_hf import main as import_main
from trainer.plot import main as plot_main


def _record_file(manifest: Path, name: str, path: Path) -> None:
    """`path`'s new size and sha256 into `manifest`'s files[name]: a hostile edit covering its tracks."""
    record = json.loads(manifest.read_text())
    data = path.read_bytes()
    record["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest.write_text(json.dumps(record))


@pytest.mark.parametrize("name", ["a\nerror: forged.txt", "a\rb", "tab\there", "del\x7f"])
def test_a_recorded_name_holding_a_control_character_is_refused(name, tmp_path):
    """A newline in a name would print a forged line in every message naming the file."""
    entry = {"size": 1, "sha256": "0" * 64}
    record = {"kind": "vocab", "format_version": 1, "fingerprint": "0" * 64, "identity": {},
              "files": {name: entry}}
    with pytest.raises(DataError, match="control character") as error:
        records.check_record(record, "artifact", tmp_path / "artifact.json")
    assert "\n" not in str(error.value) and "\r" not in str(error.value)
    with pytest.raises(DataError, match="control character"):
        records.inside(tmp_path, name)


def test_validate_calls_a_manifest_with_a_newline_name_invalid_in_one_line(outputs, tmp_path):
    vocab = copy(outputs.vocab, tmp_path / "vocab")
    manifest = json.loads((vocab / "artifact.json").read_text())
    manifest["files"]["injected\nerror: forged.txt"] = manifest["files"]["vocab.txt"]
    (vocab / "artifact.json").write_text(json.dumps(manifest))
    done = corpusprep("validate", vocab)
    assert done.code == 1 and "control character" in done.out + done.err
    assert not any(line.startswith("error: forged") for line in (done.out + done.err).splitlines())


def _bad_vocab(outputs, tmp_path: Path) -> Path:
    """The world's vocab with a line of bytes that are not UTF-8 appended, its manifest's sha256 fixed."""
    vocab = copy(outputs.vocab, tmp_path / "vocab")
    lines = (vocab / "vocab.txt").read_bytes().count(b"\n")
    with open(vocab / "vocab.txt", "ab") as f:
        f.write(b"\xff\xfe\n")
    _record_file(vocab / "artifact.json", "vocab.txt", vocab / "vocab.txt")
    return vocab, lines + 1


@pytest.mark.parametrize("command", ["build-pairs", "shard"])
def test_a_vocab_txt_that_is_not_utf8_is_one_line_naming_its_line(command, outputs, tmp_path):
    vocab, line = _bad_vocab(outputs, tmp_path)
    source = outputs.text if command == "build-pairs" else outputs.pairs
    extra = ["--max-seq-length", "64"] if command == "build-pairs" else ["--num-shards", "2"]
    done = corpusprep(command, source, "--vocab", vocab, "-o", tmp_path / "out", "--workers", "1", *extra)
    assert done.code in (1, 2) and f"{vocab / 'vocab.txt'}:{line}: not UTF-8" in done.line, done.err
    assert len(done.err.strip().splitlines()) == 1


def test_import_hf_of_a_vocab_txt_that_is_not_utf8_is_one_line(outputs, tmp_path, capsys):
    hf = tmp_path / "hf"
    assert trainer_export(outputs.run, hf).code == 0
    lines = (hf / "vocab.txt").read_bytes().count(b"\n")
    with open(hf / "vocab.txt", "ab") as f:
        f.write(b"caf\xe9\n")
    assert import_main([str(hf), str(tmp_path / "init")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{hf / 'vocab.txt'}:{lines + 1}: not UTF-8" in err
    assert not (tmp_path / "init").exists()


@pytest.mark.parametrize("change, says", [
    ({"hidden_size": 2**31 - 2}, "model.hidden_size=2,147,483,646 with 2 layers has ~"),
    ({"num_hidden_layers": 2**31 - 1}, "layers has ~"),
    ({"intermediate_size": 7}, "config.json gives [7"),
])
def test_import_hf_of_a_config_lying_about_its_sizes_is_one_line(change, says, outputs, tmp_path, capsys):
    """Sizes no machine holds (an allocation failure, a hang building 2^31 layers), or not the weights'."""
    hf = tmp_path / "hf"
    assert trainer_export(outputs.run, hf).code == 0
    _edit_json(hf / "config.json", **change)
    assert import_main([str(hf), str(tmp_path / "init")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and says in err, err
    assert not (tmp_path / "init").exists()


@pytest.mark.slow  # ~1.7 s idle
def test_plot_replaces_a_linked_curves_png_never_writing_through_it(outputs, tmp_path, capsys):
    """`ln -s ~/victim run/curves.png`: the figure is a new file renamed into place; the victim is intact
    (the pipeline's plot stage runs this same command)."""
    run = copy(outputs.run, tmp_path / "run")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (run / "curves.png").symlink_to(victim)
    assert plot_main([str(run)]) == 0
    assert victim.read_text() == "precious"
    png = run / "curves.png"
    assert not png.is_symlink() and png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow  # ~2.0 s idle (all cases)
@pytest.mark.parametrize("line", [b'{"step": 1, "mlm_loss": 2.0, "x": "\xff\xfe"}',
                                  b'{"step": 1e308, "mlm_loss": 1e308}', b'{"step": 3, "mlm_loss": 1e300}'])
def test_plot_of_metrics_with_bad_bytes_or_absurd_numbers_is_one_line_or_a_skip(line, outputs, tmp_path,
                                                                                  capsys):
    run = copy(outputs.run, tmp_path / "run")
    good = (run / "metrics.jsonl").read_bytes()
    (run / "metrics.jsonl").write_bytes(line + b"\n" + good)
    code = guarded(lambda: plot_main([str(run)]))  # as `python -m trainer.plot` runs it
    err = capsys.readouterr().err
    if code == 0:  # absurd numbers: skipped, counted
        assert "skipped 1 record(s)" in err and (run / "curves.png").is_file()
    else:
        assert code == 1 and f"{run / 'metrics.jsonl'}:1: not a JSON record" in err
        assert len(err.strip().splitlines()) == 1


def test_the_trainer_never_takes_a_hugging_face_export_as_its_run_dir(outputs, tmp_path):
    hf = tmp_path / "hf"
    assert trainer_export(outputs.run, hf).code == 0
    before = sorted(p.name for p in hf.iterdir())
    done = trainer_run(*train_args(outputs.shards, hf))
    assert done.code == 2 and "holds a Hugging Face model, not a training run" in done.line
    assert sorted(p.name for p in hf.iterdir()) == before
    inside = trainer_run(*train_args(outputs.shards, hf / "run"))
    assert inside.code == 2 and "is inside a Hugging Face model" in inside.line
    assert not (hf / "run").exists()


def test_an_export_is_still_replaced_by_the_next_export(outputs, tmp_path):
    hf = tmp_path / "hf"
    assert trainer_export(outputs.run, hf).code == 0
    again = trainer_export(outputs.run, hf, "--overwrite")
    assert again.code == 0, again.err


def _damage_weights(outputs, tmp_path: Path, change) -> Path:
    run = copy(outputs.run, tmp_path / "run")
    step = run / "checkpoints" / "step-0000002"
    weights = load_file(str(step / "weights.safetensors"))
    name = "embeddings.word_embeddings.weight"
    weights[name] = change(weights[name])
    save_file(weights, str(step / "weights.safetensors"))
    _record_file(step / "config.json", "weights.safetensors", step / "weights.safetensors")
    return run


@pytest.mark.parametrize("change, says", [
    (lambda t: t.to(torch.float8_e4m3fn), "not float16, bfloat16, float32 or float64: embeddings.word_"),
    (lambda t: torch.full_like(t, float("nan")), "NaN or infinite values (diverged weights) in embeddings"),
])
def test_export_refuses_weights_no_model_computes_with(change, says, outputs, tmp_path):
    run = _damage_weights(outputs, tmp_path, change)
    done = trainer_export(run, tmp_path / "hf")
    assert done.code == 1 and says in done.line, done.err
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("damage, says", [
    (lambda hf: _edit_json(hf / "config.json", hidden_size=2**31 - 2), "model.safetensors' word embeddings"),
    (lambda hf: _edit_json(hf / "config.json", num_hidden_layers=2**31 - 1), "encoder layers"),
    (lambda hf: (hf / "vocab.txt").write_bytes((hf / "vocab.txt").read_bytes() + b"\xff\n"), "not UTF-8"),
])
def test_validate_calls_a_lying_hugging_face_directory_invalid(damage, says, outputs, tmp_path):
    """The sizes import_hf and evaluate refuse (hidden 2^31, 2^31 layers, a vocab of bytes)."""
    hf = tmp_path / "hf"
    assert trainer_export(outputs.run, hf).code == 0
    damage(hf)
    done = corpusprep("validate", hf)
    assert done.code == 1 and says in done.out + done.err, done.out + done.err


def _edit_json(path: Path, **change) -> None:
    path.write_text(json.dumps(json.loads(path.read_text()) | change))


def test_a_manifest_whose_two_strategy_names_disagree_is_data_naming_the_file(outputs, tmp_path):
    """`whole_word_mask` (older manifests' name of the whole-word strategy) beside another `mask_strategy`:
    which masking made these shards is unknown, so validate and the trainer refuse the manifest as data
    (exit 1, naming the file and field), not as a command-line contradiction the user never typed."""
    shards = copy(outputs.shards, tmp_path / "shards")
    manifest = json.loads((shards / "manifest.json").read_text())
    manifest["options"].update(mask_strategy="span", whole_word_mask=True)
    (shards / "manifest.json").write_text(json.dumps(manifest))
    _record_file(shards / "artifact.json", "manifest.json", shards / "manifest.json")
    with pytest.raises(DataError, match="whole_word_mask.*contradicts mask_strategy 'span'"):
        records.check_record(manifest, "shards_manifest", shards / "manifest.json")
    checked = corpusprep("validate", shards)  # the problem listed, then the verdict's line
    assert checked.code == 1 and "INVALID" in checked.line, checked
    assert "manifest.json" in checked.err and "whole_word_mask" in checked.err, checked
    trained = trainer_run(*train_args(shards, tmp_path / "run"))
    assert trained.code == 1 and len(trained.err.strip().splitlines()) == 1, trained
    assert "manifest.json" in trained.line and "whole_word_mask" in trained.line, trained
    assert "--" not in checked.err + trained.err, (checked, trained)  # no command-line option named
