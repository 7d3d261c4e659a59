"""bench/nsp_data_diff.py's measures on rows written by hand, where every figure is known: the row shapes
that explained Google's held-out lead (rows ending a sentence short of the maximum), the masking mix read
back from the rows, and the paired breakdown whose contributions must add up to the whole difference."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.conftest import REPO

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "b", "c", "##d", "e"]
ID = {t: i for i, t in enumerate(TOKENS)}


@pytest.fixture(scope="module")
def bench():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REPO / "bench"))
        yield importlib.import_module("nsp_data_diff")


def vocab(bench):
    tokens = np.array(TOKENS)
    special = np.isin(tokens, bench.SPECIALS)
    single = np.char.str_len(np.char.replace(tokens, "##", "")) == 1
    return bench.Vocab(tokens, special, np.char.startswith(tokens, "##"), tokens == ".", single, ID,
                       np.array([ID["."]]))


def rows(bench):
    """Row 0 (NotNext, 8 of 10 tokens, ends '. [SEP]'): the '.' of A masked. Row 1 (IsNext, full, ends 'e'):
    the 'e' of B replaced by a random 'a', the 'b' of A kept."""
    text = [["[CLS]", "a", ".", "[SEP]", "b", "c", ".", "[SEP]"],
            ["[CLS]", "a", "b", "c", "[SEP]", "c", "##d", "a", "e", "[SEP]"]]
    types = [[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]]
    ids = [[ID[t] for t in row] for row in text]
    ids[0][2] = ID["[MASK]"]
    ids[1][8] = ID["a"]
    positions, labels = [[2], [2, 8]], [[ID["."]], [ID["b"], ID["e"]]]
    flat = lambda lists: np.array([x for row in lists for x in row], np.int64)  # noqa: E731
    offsets = lambda lists: np.cumsum([0] + [len(row) for row in lists])  # noqa: E731
    return bench.Rows("hand", 10, flat(ids), flat(types), offsets(ids), flat(positions), flat(labels),
                      offsets(positions), np.array([1, 0]), (0.15, 20))


def test_the_row_shapes_and_labels_are_read_back(bench):
    r, v = rows(bench), vocab(bench)
    assert list(r.originals[:8]) == [ID[t] for t in ["[CLS]", "a", ".", "[SEP]", "b", "c", ".", "[SEP]"]]
    assert list(r.ends_sentence(v)) == [True, False]
    shape = bench.row_stats(r, v)
    assert shape["rows"] == 2 and shape["tokens a row (mean)"] == 9.0 and shape["rows full"] == 0.5
    assert shape["padding to max_seq_length"] == pytest.approx(0.1)
    assert shape["  and short of max_seq_length"] == 0.5
    nsp = bench.nsp_stats(r, v)
    assert nsp["NotNext share"] == 0.5
    assert nsp["NotNext: A / B tokens (mean)"] == "2.0 / 3.0"
    assert nsp["IsNext: A / B tokens (mean)"] == "3.0 / 4.0"
    assert nsp["NotNext: rows ending a sentence short of max_seq_length"] == 1.0
    assert nsp["IsNext: rows ending a sentence short of max_seq_length"] == 0.0


def test_the_masking_mix_and_the_random_draws_are_read_from_the_rows(bench):
    r, v = rows(bench), vocab(bench)
    mask = bench.mask_stats(r, v)
    assert mask["[MASK] / random / kept"] == "0.3333 / 0.3333 / 0.3333"
    assert mask["predictions in B"] == pytest.approx(1 / 3)
    assert mask["predictions on [CLS]/[SEP]/[PAD]"] == 0
    rank = np.arange(len(TOKENS))
    drawn = bench.random_stats(r, v, rank)
    assert drawn["random draws"] == 1 and drawn["  of them specials"] == 0.0


def test_the_paired_breakdown_adds_up_to_the_whole_difference(bench):
    rng = np.random.default_rng(0)
    n = 4000
    length = rng.integers(5, 11, n)
    column = np.minimum(rng.integers(1, 10, n), length - 2)
    label = rng.integers(5, len(TOKENS), n)
    common = {"label": label, "input": np.where(rng.random(n) < 0.8, ID["[MASK]"], label), "column": column,
              "length": length, "row": rng.integers(0, 300, n)}
    a = common | {"predicted": np.where(rng.random(n) < 0.3, label, 0)}
    # b is right wherever a is, and also on every last token (the place Google's model gained)
    b = common | {"predicted": np.where(column == length - 2, label, a["predicted"])}
    v = vocab(bench)
    picks = dict(bench.groups(a, v, np.arange(len(TOKENS)), 10))
    whole = bench.paired(a, b, picks["all"])
    last = bench.paired(a, b, picks["last token (before the final [SEP])"])
    rest = bench.paired(a, b, picks["all but the last token"])
    assert whole[4] == pytest.approx(last[4] + rest[4]) and whole[4] > 0
    assert rest[2] == 0 and rest[4] == 0 and last[1] == 1.0
    accuracy = {name: float((p["predicted"] == label).mean()) for name, p in (("a", a), ("b", b))}
    assert whole[2] == pytest.approx(accuracy["b"] - accuracy["a"])
