"""The trainer's entry points answer a bad or missing argument with one line and exit 2, like `corpusprep`."""

from __future__ import annotations

import pytest

from trainer import export, import_hf, plot, run


@pytest.mark.parametrize(
    ("main", "argv", "says"),
    [
        (run.main, ["--steps", "abc"], "argument --steps: invalid int value: 'abc'"),
        (run.main, ["--bogus"], "unrecognized arguments: --bogus"),
        (export.main, [], "the following arguments are required: checkpoint, out_dir"),
        (import_hf.main, ["x"], "the following arguments are required: out"),
        (plot.main, [], "the following arguments are required: run_dir"),
    ],
)
def test_a_parse_error_is_one_line_and_exit_2(main, argv, says, capsys):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    err = capsys.readouterr().err
    assert exit.value.code == 2 and err.splitlines() == [err.strip()] and says in err, err
    assert err.startswith("python -m trainer.") and "usage:" not in err
