"""Extractive question answering fine-tuned end to end: a tiny BertForQuestionAnswering learns a synthetic
SQuAD v2.0 task (the words after "the key is", or no answer when the phrase is missing) far above the empty
and first-word baselines, through windows; v2.0's threshold is chosen on dev and used as it is on test; the
run is deterministic for a seed on a CPU."""

from __future__ import annotations

import json

import pytest

from tests.interop.helpers import one_thread
from tests.trainer.test_evaluate_squad import synthetic, tiny_qa_model, tiny_tokenizer_dir
from trainer.evaluate.settings import EvalSettings
from trainer.evaluate.squad import read_squad
from trainer.evaluate.squad_metric import score

pytest.importorskip("transformers")


def _splits(tmp_path, sizes: dict[str, tuple[int, int]]) -> dict:
    out = {}
    for name, (n, seed) in sizes.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(synthetic(n, seed, impossible_share=1 / 3)))
        out[name] = read_squad(path)
    return out


def _settings(**overrides) -> EvalSettings:
    values = {"train": "-", "dev": "-", "epochs": 10.0, "batch_size": 16, "lr": 2e-3, "max_length": 32,
              "device": "cpu"} | overrides  # fmt: skip
    return EvalSettings(**values)


@pytest.mark.slow  # 20-35 s on a loaded 2-core machine: 910 steps of a 2-layer, 64-wide model
def test_fine_tuning_answers_far_above_the_baselines_and_test_uses_dev_s_threshold(tmp_path):
    from trainer.evaluate.squad import baseline
    from trainer.evaluate.squad_finetune import run

    splits = _splits(tmp_path, {"train": (800, 1), "dev": (100, 2), "test": (100, 3)})
    with one_thread():
        hf = tiny_qa_model(tmp_path / "model")
        results = run(hf, splits["train"], {"dev": splits["dev"], "test": splits["test"]}, _settings(),
                      "pretrained", seed=1)  # fmt: skip
    assert results.train == {"windows": 1446, "questions_cut": 0, "answers_unreachable": 0}
    results = results.splits
    dev = results["dev"].scores
    assert dev["windows"] > 100 and dev["questions_cut"] == 0  # contexts longer than a window
    _, empty = baseline(splits["train"], splits["dev"])
    empty_em = score(splits["dev"].golds(), empty, "2.0")["exact_match"]
    assert 25 <= empty_em <= 45  # the unanswerable share
    # the first word of every context: never the answer here (contexts start with filler)
    first = {q.id: q.context.split()[0] for q in splits["dev"].examples}
    assert score(splits["dev"].golds(), first, "2.0")["has_answer"]["exact_match"] < 5
    assert dev["exact_match"] >= empty_em + 30, dev
    assert dev["has_answer"]["exact_match"] >= 60 and dev["no_answer"]["exact_match"] >= 80, dev
    # test is answered with dev's threshold, not one of its own
    assert results["test"].scores["null_threshold"] == dev["null_threshold"]
    assert results["test"].scores["exact_match"] >= empty_em + 25
    # the scores are those of the answers (what predictions.json holds)
    recomputed = score(splits["dev"].golds(), results["dev"].answers, "2.0")
    counts = ("null_threshold", "windows", "questions_cut")
    assert recomputed == {k: v for k, v in dev.items() if k not in counts}


@pytest.mark.slow  # ~4 s: three short runs
def test_a_seed_gives_the_same_run_and_another_seed_another(tmp_path):
    from trainer.evaluate.squad_finetune import run

    splits = _splits(tmp_path, {"train": (40, 4), "dev": (20, 5)})
    with one_thread():
        hf = tiny_qa_model(tmp_path / "model", hidden=16)
        runs = [run(hf, splits["train"], {"dev": splits["dev"]}, _settings(epochs=1.0), "random",
                    seed).splits["dev"] for seed in (7, 7, 8)]  # fmt: skip
    assert runs[0].null_odds == runs[1].null_odds and runs[0].answers == runs[1].answers
    assert runs[0].null_odds != runs[2].null_odds


def test_a_max_length_beyond_the_model_s_positions_is_one_line_before_training(tmp_path):
    import transformers

    from corpusprep.errors import UsageError
    from trainer.evaluate.squad_finetune import run

    splits = _splits(tmp_path, {"train": (4, 4)})
    hf = tiny_tokenizer_dir(tmp_path)
    transformers.BertConfig(max_position_embeddings=64).save_pretrained(hf)  # no weights: never read
    with pytest.raises(UsageError, match=f"max_length=128: the model at {hf} takes at most 64 word pieces"):
        run(hf, splits["train"], {}, _settings(max_length=128), "random", 1)
