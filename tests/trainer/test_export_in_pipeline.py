"""The README's `python -m trainer.export runs/demo/train runs/demo/hf`: a pipeline run's own model may be
exported beside its stages; every other output inside a pipeline run (or an export of another run) is still
refused, as every command refuses to write inside another command's output."""

from __future__ import annotations

import shutil
import sys

from corpusprep.engine.outputs import validate as validate_output
from tests.trainer.test_export_length import run
from trainer.export import main as export_main
from trainer.import_hf import main as import_main


def test_a_pipeline_runs_own_training_exports_beside_its_stages(tiny_shards, tmp_path, capsys, monkeypatch):
    pipeline = tmp_path / "runs" / "demo"  # what `corpusprep run` leaves: its record beside stages/
    (pipeline / "stages").mkdir(parents=True)
    (pipeline / "pipeline.json").write_text("{}")
    (pipeline / "run.json").write_text('{"pipeline": "demo"}')
    trained = run(tiny_shards, tmp_path / "run")
    shutil.copytree(trained, pipeline / "train")

    assert export_main([str(pipeline / "train"), str(pipeline / "hf")]) == 0
    assert (pipeline / "hf" / "config.json").is_file()
    assert import_main([str(pipeline / "hf"), str(pipeline / "init")]) == 0  # and back, for --init-from
    # `corpusprep validate runs/demo` knows the export for what it is (it holds a vocab.txt, not a vocab)
    assert validate_output(pipeline)[1] == []
    assert validate_output(pipeline / "hf")[:2] == ("Hugging Face export", [])
    with open(pipeline / "hf" / "model.safetensors", "r+b") as f:
        f.truncate(f.seek(0, 2) - 10)
    [problem] = validate_output(pipeline)[1]
    assert problem.startswith("hf/ (Hugging Face export): model.safetensors: ")
    assert problem.endswith("(cut short or padded)")
    capsys.readouterr()
    # still refused: the pipeline run itself, inside its training run, and another run's model
    for out in (pipeline, pipeline / "train" / "hf", pipeline / "stages" / "hf"):
        assert export_main([str(pipeline / "train"), str(out), "--overwrite"]) == 2, out
    assert export_main([str(trained), str(pipeline / "other")]) == 2
    lines = capsys.readouterr().err.splitlines()
    refused = ("overlap", "is inside a pipeline run", "holds a pipeline run, not export")
    assert len(lines) == 4 and all(any(r in line for r in refused) for line in lines), lines
    assert not (pipeline / "other").exists() and not (pipeline / "train" / "hf").exists()
    # docs/manual/huggingface.md's --verify where transformers is not installed (a venv `./scripts/demo`
    # made): one line first
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert export_main([str(pipeline / "train"), str(pipeline / "hf-checked"), "--verify"]) == 2
    assert "pip install transformers" in capsys.readouterr().err and not (pipeline / "hf-checked").exists()
