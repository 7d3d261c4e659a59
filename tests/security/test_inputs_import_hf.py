"""`python -m trainer.import_hf` on a Hugging Face directory someone handed over: truncated weights, a config
of the wrong shape or of sizes no machine holds, a pickle. One line and exit 1 (bad data) or 2 (weights we
refuse to read), never a traceback, never an unpickled byte."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from trainer.import_hf import main as import_main

HF_CONFIG = {"model_type": "bert", "vocab_size": 300, "hidden_size": 32, "num_hidden_layers": 2,
             "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 64}


def hf_dir(tmp_path: Path) -> Path:
    """A save_pretrained-like directory: config.json, vocab.txt and a model.safetensors (weights whose
    content these tests never reach: each breaks something read before them)."""
    out = tmp_path / "hf"
    out.mkdir()
    (out / "config.json").write_text(json.dumps(HF_CONFIG))
    (out / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                              *(f"w{i}" for i in range(295))]) + "\n")
    save_file({"bert.embeddings.word_embeddings.weight": np.zeros((300, 32), np.float32)},
              str(out / "model.safetensors"))
    return out


class Payload:
    """Unpickling this creates a file: the proof that a pickle was (or was not) loaded."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def break_truncated(hf: Path) -> None:
    data = (hf / "model.safetensors").read_bytes()
    (hf / "model.safetensors").write_bytes(data[: len(data) // 2])


def break_config(value) -> callable:
    def apply(hf: Path) -> None:
        (hf / "config.json").write_text(value if isinstance(value, str) else json.dumps(value))
    return apply


CASES = {  # shape and types: the records loader (kind hf_config); sizes: BertConfig's one check
    "truncated safetensors": (break_truncated, 1, "model.safetensors: "),
    "config a list": (break_config([1, 2]), 1, "config.json: a list, not an object"),
    "config nested deep": (break_config("[" * 100_000), 1, "config.json: nested too deeply"),
    "hidden size 1e9": (break_config(HF_CONFIG | {"hidden_size": 10**9}), 1,
                        "config.json: model.hidden_size=1,000,000,000 with 2 layers has ~"),
    "hidden size a string": (break_config(HF_CONFIG | {"hidden_size": "32"}), 1,
                             'config.json: hidden_size: a string ("32"), not an integer'),
    "layers missing": (break_config({k: v for k, v in HF_CONFIG.items() if k != "num_hidden_layers"}), 1,
                       "config.json: num_hidden_layers: missing"),
    "casing not a bool": (lambda hf: (hf / "tokenizer_config.json").write_text('{"do_lower_case": "false"}'),
                          1, 'tokenizer_config.json: do_lower_case: a string ("false"), not true or false'),
}


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_hugging_face_directory_is_one_line(case, tmp_path, capsys):
    damage, code, says = CASES[case]
    hf = hf_dir(tmp_path)
    damage(hf)
    assert import_main([str(hf), str(tmp_path / "init")]) == code
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {hf}") and says in lines[0], lines
    assert not (tmp_path / "init").exists()


def test_a_pickled_pytorch_model_bin_is_refused_unopened(tmp_path, capsys):
    """transformers' older format is a pickle: loading one runs the code it holds. Refused, with the way
    out (convert it to safetensors), and the payload never runs."""
    hf = hf_dir(tmp_path)
    (hf / "model.safetensors").unlink()
    marker = tmp_path / "payload-ran"
    (hf / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(marker)))
    assert import_main([str(hf), str(tmp_path / "init")]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith(f"error: {hf}: holds pickled (or TensorFlow) weights")
    assert "convert them to model.safetensors" in line
    assert not marker.exists() and not (tmp_path / "init").exists()
