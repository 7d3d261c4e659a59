"""The CLI's shared read options build ReadOptions the same way for every command."""

from __future__ import annotations

import pytest

from corpusprep.cli.options import read_options
from corpusprep.errors import UsageError
from corpusprep.read import ReadOptions


def test_defaults_and_case():
    assert read_options() == ReadOptions(format="auto", text_field="text", on_error="auto")
    assert read_options("JSONL", False, "body", "Skip") == ReadOptions("jsonl", "body", "skip")


def test_one_sentence_per_line_means_bert_format():
    assert read_options("auto", True, "text", "fail").format == "bert"
    assert read_options("bert", True, "text", "auto").format == "bert"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("csv", False, "text", "auto"), "--input-format 'csv': choose from auto, text, bert, jsonl"),
        (("auto", False, "text", "ignore"), "--on-error 'ignore': choose from auto, skip, fail"),
        (("jsonl", True, "text", "auto"), "--one-sentence-per-line conflicts with --input-format jsonl"),
        (("auto", False, " ", "auto"), "--text-field must not be empty"),
    ],
)
def test_bad_values_are_usage_errors(args, message):
    with pytest.raises(UsageError, match=message) as error:
        read_options(*args)
    assert error.value.exit_code == 2
