"""Two shard directories side by side: what the rows hold, how they are masked, what they teach.

    PYTHONPATH=. .venv/bin/python bench/nsp_data_diff.py SHARDS_A SHARDS_B [--names ours google]
        [--heldout SHARDS] [--ngram 8] [--split train]

Made to explain a learning-fidelity gap (bench/fidelity.py: the same model trained on our NSP shards and on
Google's create_pretraining_data.py output converted row for row) from the data alone, without training:
both directories are read in full (every row of `--split`; a few hundred thousand rows of 64-128 tokens take
seconds and ~1 GB) and one two-column table is printed:

  rows        rows, tokens a row, padding to the manifest's max_seq_length, short rows
  nsp         NotNext share, segment A / B lengths by label, rows whose segments fill the row
  masking     predictions a row against the budget min(max_pred, max(1, round(n * prob))), masked share of
              A and of B tokens, where in the row the masked positions fall (fifths of the row), masked
              specials; the mix of [MASK] / random / kept read back from the rows (input token vs label)
  random      what the random replacements are: specials ([PAD] [UNK] [CLS] [SEP] [MASK], [unusedN]),
              `##` pieces, single characters, the mean rank of the drawn ids by frequency (uniform over the
              vocab: size / 2)
  targets     the masked original tokens: [UNK], `##` pieces, punctuation, the share among the 10 / 100 /
              1,000 most frequent tokens and their mean unigram surprisal (ranks and frequencies from both
              directories' unmasked text together, so both columns use one scale); "as in text" says
              whether masking picks tokens as often as the text holds them
  text        tokens of text (originals restored, specials left out), the distinct n-grams of `--ngram`
              tokens inside a segment (the distinct text the rows cover), how often each is repeated, the
              share of each side's n-grams the other side also holds, and the total variation distance
              between the two unigram distributions (tokenization or coverage differences show here)
  heldout     with --heldout (the fidelity bench's held-out rows): the share of the held-out text's n-grams
              each side holds (text leaking across the split, none expected), and the unigram distance of
              each side's text and targets to the held-out text

Anything read is checked as the trainer checks it (`trainer.shards.open_shards`: the manifest and file
sizes); a row whose masked position falls outside it or on padding is an error naming the file.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch
from fidelity import load_model

from corpusprep.errors import DataError
from corpusprep.mask import MaskVocab
from corpusprep.mask.examples import list_parts
from trainer.batch import forward_loss
from trainer.config import DataConfig
from trainer.data import ShardStream
from trainer.shards import open_shards

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass
class Rows:
    """A shard directory's rows, flat: row r is `ids[off[r]:off[r+1]]`; its predictions are
    `positions / labels [poff[r]:poff[r+1]]` (columns of the row)."""

    name: str
    max_len: int
    ids: np.ndarray  # as trained on (masked)
    types: np.ndarray
    off: np.ndarray
    positions: np.ndarray
    labels: np.ndarray
    poff: np.ndarray
    nsp: np.ndarray | None  # 1 = NotNext
    masking: tuple[float, int]  # the manifest's masked_lm_prob, max_predictions_per_seq

    @property
    def n(self) -> int:
        return len(self.off) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.off)

    def row_of(self, starts: np.ndarray, values: int) -> np.ndarray:
        return np.repeat(np.arange(self.n), np.diff(starts))[:values] if values else np.zeros(0, np.int64)

    @cached_property
    def flat(self) -> np.ndarray:
        """Each prediction's index into the flat `ids`."""
        return self.off[self.row_of(self.poff, len(self.positions))] + self.positions

    @cached_property
    def originals(self) -> np.ndarray:
        """The rows' text before masking: every label put back at its position."""
        out = self.ids.copy()
        out[self.flat] = self.labels
        return out

    def ends_sentence(self, vocab: Vocab) -> np.ndarray:
        """bool per row: the token before the row's final [SEP] ends a sentence (. ! ?)."""
        return np.isin(self.originals[self.off[1:] - 2], vocab.sentence_end)


def load(directory: Path, name: str, split: str) -> Rows:
    shards = open_shards(directory, (split,))
    columns = ["input_ids", "token_type_ids", "masked_lm_positions", "masked_lm_ids"]
    label = shards.objective.shard_label
    parts: dict[str, list] = {c: [] for c in columns + ["nsp"]}
    for f in shards.files(split):
        table = pq.read_table(f.path, columns=columns + ([label] if label in pq.read_schema(f.path).names
                                                          else []))
        for c in columns:
            parts[c].append(list_parts(table[c]))
        if label in table.column_names:
            parts["nsp"].append(table[label].to_numpy().astype(np.int64))

    def joined(column: str) -> tuple[np.ndarray, np.ndarray]:
        offsets, values, base = [np.zeros(1, np.int64)], [], 0
        for off, val in parts[column]:
            offsets.append(np.asarray(off[1:], np.int64) + base)
            values.append(np.asarray(val))
            base += len(val)
        return np.concatenate(offsets), np.concatenate(values).astype(np.int64)

    off, ids = joined("input_ids")
    _, types = joined("token_type_ids")
    poff, positions = joined("masked_lm_positions")
    _, labels = joined("masked_lm_ids")
    nsp = np.concatenate(parts["nsp"]) if parts["nsp"] else None
    masking = shards.masking()
    rows = Rows(name, int(shards.manifest["max_seq_length"]), ids, types, off, positions, labels, poff, nsp,
                (masking["masked_lm_prob"], masking["max_predictions_per_seq"]))
    row = rows.row_of(poff, len(positions))
    if (positions >= rows.lengths[row]).any():
        raise DataError(f"{directory}: a masked position lies beyond its row's tokens")
    return rows


# ---------------------------------------------------------------- vocab tables


@dataclass
class Vocab:
    tokens: np.ndarray
    special: np.ndarray  # bool
    continuation: np.ndarray
    punctuation: np.ndarray  # one non-alphanumeric character
    single: np.ndarray  # one character (optionally ##)
    ids: dict
    sentence_end: np.ndarray  # ids of . ! ?

    @classmethod
    def of(cls, directory: Path) -> Vocab:
        info = open_shards(directory).vocab_info()
        tokens = info.token_array
        special = np.array([t in SPECIALS or (t.startswith("[unused") and t.endswith("]")) for t in tokens])
        bare = np.char.replace(tokens, "##", "")
        punct = np.array([len(t) == 1 and unicodedata.category(t)[0] in "PS" for t in tokens]) & ~special
        ends = [info.ids[t] for t in (".", "!", "?") if t in info.ids]
        return cls(tokens, special, np.char.startswith(tokens, "##"), punct,
                   (np.char.str_len(bare) == 1) & ~special, info.ids, np.asarray(ends, np.int64))


# ---------------------------------------------------------------- the measures, one table section each


def share(mask: np.ndarray) -> float:
    return float(mask.mean()) if len(mask) else float("nan")


def row_stats(r: Rows, v: Vocab) -> dict:
    n, ends = r.lengths, r.ends_sentence(v)
    return {
        "rows": r.n,
        "tokens a row (mean)": n.mean(),
        "tokens a row (p10 / p50 / p90)": "{:.0f} / {:.0f} / {:.0f}".format(*np.percentile(n, [10, 50, 90])),
        "padding to max_seq_length": 1 - n.mean() / r.max_len,
        "rows < half length": share(n < r.max_len / 2),
        "rows full": share(n == r.max_len),
        "rows ending a sentence (. ! ? [SEP])": share(ends),
        "  and short of max_seq_length": share(ends & (n < r.max_len)),
    }


def nsp_stats(r: Rows, v: Vocab) -> dict:
    if r.nsp is None:
        return {"NotNext share": "no label column"}
    row = np.repeat(np.arange(r.n), r.lengths)
    b = np.bincount(row, weights=r.types, minlength=r.n)  # B tokens incl. its [SEP]
    len_a, len_b = r.lengths - b - 2, b - 1  # without [CLS] A [SEP] / B [SEP]
    out = {"NotNext share": share(r.nsp == 1)}
    early = r.ends_sentence(v) & (r.lengths < r.max_len)
    for label, name in ((0, "IsNext"), (1, "NotNext")):
        pick = r.nsp == label
        out[f"{name}: A / B tokens (mean)"] = f"{len_a[pick].mean():.1f} / {len_b[pick].mean():.1f}"
        out[f"{name}: rows ending a sentence short of max_seq_length"] = share(early[pick])
    out["A share of the segment tokens"] = len_a.sum() / (len_a.sum() + len_b.sum())
    out["rows with B of <= 5 tokens"] = share(len_b <= 5)
    return out


def mask_stats(r: Rows, v: Vocab) -> dict:
    (prob, max_pred), n, k = r.masking, r.lengths, np.diff(r.poff)
    budget = np.minimum(max_pred, np.maximum(1, np.round(n * prob)))
    flat = r.flat
    row = r.row_of(r.poff, len(flat))
    inputs, types = r.ids[flat], r.types[flat]
    is_b = r.types == 1
    is_masked = np.zeros(len(r.ids), bool)
    is_masked[flat] = True
    seg_tokens = ~v.special[r.originals] | (r.originals == v.ids["[UNK]"])
    fifth = np.minimum((r.positions * 5) // n[row], 4)
    mask_id = v.ids["[MASK]"]
    kept, masked = inputs == r.labels, inputs == mask_id
    return {
        "predictions a row (mean)": k.mean(),
        "rows at their budget": share(k == budget),
        "rows under / over budget": f"{share(k < budget):.4f} / {share(k > budget):.4f}",
        "masked share of A tokens": share(is_masked[seg_tokens & ~is_b]),
        "masked share of B tokens": share(is_masked[seg_tokens & is_b]),
        "predictions in B": share(types == 1),
        "predictions by fifth of the row": " ".join(f"{x:.3f}" for x in np.bincount(fifth, minlength=5) /
                                                   max(1, len(fifth))),
        "predictions on [CLS]/[SEP]/[PAD]": int(np.isin(r.labels, [v.ids[t] for t in ("[CLS]", "[SEP]",
                                                                                        "[PAD]")]).sum()),
        "[MASK] / random / kept": f"{share(masked):.4f} / {share(~masked & ~kept):.4f} / {share(kept):.4f}",
    }


def random_stats(r: Rows, v: Vocab, rank: np.ndarray) -> dict:
    flat = r.flat
    inputs = r.ids[flat]
    drawn = inputs[(inputs != r.labels) & (inputs != v.ids["[MASK]"])]
    return {
        "random draws": len(drawn),
        "  of them specials": share(v.special[drawn]),
        f"  of them ## pieces (vocab share {v.continuation[~v.special].mean():.3f})":
            share(v.continuation[drawn]),
        "  of them single characters": share(v.single[drawn]),
        "  lowest / highest id drawn": f"{drawn.min()} / {drawn.max()}" if len(drawn) else "-",
        f"  mean frequency rank (uniform: {len(v.tokens) // 2:,})": rank[drawn].mean(),
    }


def target_stats(r: Rows, v: Vocab, rank: np.ndarray, p: np.ndarray, text: np.ndarray) -> dict:
    t = r.labels
    surprisal, text_surprisal = -np.log2(p[t]), float(-np.log2(p[text]).mean())
    text_rank = rank[text]
    return {
        "targets": len(t),
        "  [UNK]": share(t == v.ids["[UNK]"]),
        "  ## pieces (in text)": f"{share(v.continuation[t]):.4f} ({share(v.continuation[text]):.4f})",
        "  punctuation (in text)": f"{share(v.punctuation[t]):.4f} ({share(v.punctuation[text]):.4f})",
        "  among the 10 most frequent (in text)": f"{share(rank[t] < 10):.4f} ({share(text_rank < 10):.4f})",
        "  among the 100 (in text)": f"{share(rank[t] < 100):.4f} ({share(text_rank < 100):.4f})",
        "  among the 1,000 (in text)": f"{share(rank[t] < 1000):.4f} ({share(text_rank < 1000):.4f})",
        "  mean unigram surprisal, bits (in text)": f"{surprisal.mean():.3f} ({text_surprisal:.3f})",
        "  the most frequent token's share": share(rank[t] == 0),
    }


def ngram_keys(r: Rows, text_mask: np.ndarray, originals: np.ndarray, size: int) -> np.ndarray:
    """Hashes of every run of `size` text tokens inside one segment (no [CLS]/[SEP] in it)."""
    ok = text_mask.astype(np.int64)
    run = np.convolve(ok, np.ones(size, np.int64), mode="valid") == size  # window start -> all text
    key = np.zeros(len(originals) - size + 1, np.uint64)
    mult = np.uint64(1_000_003)
    for j in range(size):
        key = key * mult + originals[j : len(originals) - size + 1 + j].astype(np.uint64)
    return key[run]


def text_stats(keys: np.ndarray, other: np.ndarray, text: np.ndarray) -> dict:
    distinct = np.unique(keys)
    return {
        "text tokens": len(text),
        "distinct n-grams": len(distinct),
        "n-grams / distinct (repeats)": len(keys) / max(1, len(distinct)),
        "  of them also on the other side": share(np.isin(distinct, other)),
    }


# ---------------------------------------------------------------- the table


def unigram(tokens: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(tokens, minlength=size).astype(np.float64)


def compare(a: Rows, b: Rows, v: Vocab, ngram: int, heldout: Rows | None) -> tuple[list, np.ndarray]:
    """[(section, label, value a, value b)], and each token's frequency rank in the two sides' text."""
    size = len(v.tokens)
    texts, keys = [], []
    for r in (a, b):
        orig = r.originals
        is_text = ~v.special[orig] | (orig == v.ids["[UNK]"])
        texts.append(orig[is_text])
        keys.append(ngram_keys(r, is_text, orig, ngram))
    counts = unigram(texts[0], size) + unigram(texts[1], size)
    p = np.maximum(counts, 1) / counts.sum()
    rank = np.empty(size, np.int64)
    rank[np.argsort(-counts, kind="stable")] = np.arange(size)
    sections = []
    for i, r in enumerate((a, b)):
        other = np.unique(keys[1 - i])
        stats = [("rows", row_stats(r, v)), ("nsp", nsp_stats(r, v)), ("masking", mask_stats(r, v)),
                 ("random", random_stats(r, v, rank)), ("targets", target_stats(r, v, rank, p, texts[i])),
                 ("text", text_stats(keys[i], other, texts[i]) | {"unigram distance to the other side (TV)":
                  tv(texts[i], texts[1 - i], size)})]
        if heldout is not None:
            stats.append(("heldout", heldout_stats(r, texts[i], keys[i], heldout, v, ngram)))
        sections.append(stats)
    both = zip(*sections, strict=True)
    table = [(name, label, sa[label], sb.get(label, "")) for (name, sa), (_, sb) in both for label in sa]
    return table, rank


def tv(x: np.ndarray, y: np.ndarray, size: int) -> float:
    px, py = unigram(x, size), unigram(y, size)
    return 0.5 * float(np.abs(px / px.sum() - py / py.sum()).sum())


def heldout_stats(r: Rows, text: np.ndarray, keys: np.ndarray, h: Rows, v: Vocab, ngram: int) -> dict:
    orig = h.originals
    is_text = ~v.special[orig] | (orig == v.ids["[UNK]"])
    h_keys = np.unique(ngram_keys(h, is_text, orig, ngram))
    size = len(v.tokens)
    return {
        "held-out n-grams also in training": share(np.isin(h_keys, keys)),
        "unigram distance, text to held-out text (TV)": tv(text, orig[is_text], size),
        "unigram distance, targets to held-out targets (TV)": tv(r.labels, h.labels, size),
        "held-out rows ending a sentence / short of max_seq_length": (f"{share(h.ends_sentence(v)):.4f} / "
            f"{share(h.ends_sentence(v) & (h.lengths < h.max_len)):.4f}"),
    }


# ---------------------------------------------------------------- --runs: two models on the held-out rows


def predictions(run_dir: Path, heldout: Path, maskings: int) -> dict[str, np.ndarray]:
    """Every held-out prediction of the run's model, maskings k from (0, "eval", k) exactly as
    bench/fidelity.py scores them (the same inputs for every model): label, input token, column, row length,
    row (the same row in every masking) and the model's top token."""
    model, shards = load_model(run_dir, heldout, "none"), open_shards(heldout)
    mask_vocab = MaskVocab.from_vocab(shards.vocab_info())
    out: dict[str, list] = {k: [] for k in ("label", "input", "column", "length", "row", "predicted")}
    with torch.no_grad():
        for k in range(maskings):
            stream = ShardStream(shards, "train", DataConfig(batch_size=64), 0, shuffle=False, loop=False,
                                 mask_vocab=mask_vocab, mask_key=("eval", k))
            first = 0
            for batch in stream:
                logits, *_ = forward_loss(model, batch, contextlib.nullcontext)
                width = batch["rows"].shape[1]
                slot = batch["slots"][batch["mlm_positions"]]
                row = torch.div(slot, width, rounding_mode="floor")
                out["label"].append(batch["mlm_labels"].numpy())
                out["input"].append(batch["input_ids"][batch["mlm_positions"]].numpy())
                out["column"].append((slot - row * width).numpy())
                out["length"].append((batch["rows"] < batch["num_tokens"]).sum(1)[row].numpy())
                out["row"].append(row.numpy() + first)
                out["predicted"].append(logits.argmax(-1).numpy())
                first += batch["rows"].shape[0]
    return {k: np.concatenate(v).astype(np.int64) for k, v in out.items()}


def paired(a: dict, b: dict, pick: np.ndarray) -> tuple[float, float, float, float, float]:
    """On the predictions `pick`: accuracy of a and of b, b - a and its standard error, and b - a's share of
    the whole difference (b - a on `pick` times its share of all predictions) and its standard error; rows
    are the unit, as in trainer.validation.ratio_se (a row's maskings share its text)."""
    right_a, right_b = (a["predicted"] == a["label"]) & pick, (b["predicted"] == b["label"]) & pick
    rows = int(a["row"].max()) + 1
    d = np.bincount(a["row"], weights=right_b.astype(float) - right_a, minlength=rows)
    n = np.bincount(a["row"], weights=pick.astype(float), minlength=rows)
    used = n > 0
    diff = d.sum() / max(n.sum(), 1)
    r = int(used.sum())
    spread = ((d[used] - diff * n[used]) ** 2).sum()
    se = np.sqrt(spread / (r * (r - 1))) / n[used].mean() if r > 1 else np.nan
    total = len(pick)
    contribution_se = np.sqrt(((d - d.mean()) ** 2).sum() * rows / max(rows - 1, 1)) / total
    acc = lambda right: right.sum() / max(pick.sum(), 1)  # noqa: E731
    return acc(right_a), acc(right_b), diff, se, d.sum() / total, contribution_se


def groups(p: dict, v: Vocab, rank: np.ndarray, max_len: int) -> list[tuple[str, np.ndarray]]:
    """The held-out predictions cut by place in the row, row length, the masking's action and the target."""
    from_end = p["length"] - 1 - p["column"]  # 1: the token just before the row's final [SEP]
    short = p["length"] < max_len
    action = np.where(p["input"] == v.ids["[MASK]"], 0, np.where(p["input"] == p["label"], 2, 1))
    return [
        ("all", np.ones(len(from_end), bool)),
        ("last token (before the final [SEP])", from_end == 1),
        ("  of a row short of max_seq_length", (from_end == 1) & short),
        ("  of a full row", (from_end == 1) & ~short),
        ("second to last", from_end == 2),
        ("all but the last token", from_end != 1),
        ("rows < half length", p["length"] < max_len / 2),
        ("rows from half to max - 1", (p["length"] >= max_len / 2) & short),
        ("rows at max_seq_length", ~short),
        ("[MASK]ed", action == 0),
        ("random token", action == 1),
        ("kept", action == 2),
        ("target a sentence end (. ! ?)", np.isin(p["label"], v.sentence_end)),
        ("target among the 10 most frequent", rank[p["label"]] < 10),
        ("target rank 10-999", (rank[p["label"]] >= 10) & (rank[p["label"]] < 1000)),
        ("target rank 1,000+", rank[p["label"]] >= 1000),
        ("target a ## piece", v.continuation[p["label"]]),
    ]


def model_table(runs: list[Path], names: list[str], heldout: Rows, directory: Path, v: Vocab,
                rank: np.ndarray, maskings: int) -> None:
    started = time.perf_counter()
    a, b = (predictions(run, directory, maskings) for run in runs)
    if not (np.array_equal(a["label"], b["label"]) and np.array_equal(a["input"], b["input"])):
        sys.exit("the two runs were not scored on identical inputs")  # cannot happen: one masking key
    print(f"\nHeld-out masked-LM accuracy by where the prediction is ({len(a['label']):,} predictions, "
          f"{heldout.n:,} rows x {maskings} maskings; {names[1]} - {names[0]} paired, rows as the unit; "
          f"the contributions add up to the whole difference)\n")
    print(f"| predictions | share | {names[0]} | {names[1]} | difference (SE) | contribution (SE) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, pick in groups(a, v, rank, heldout.max_len):
        acc_a, acc_b, diff, se, part, part_se = paired(a, b, pick)
        print(f"| {label} | {pick.mean():.4f} | {acc_a:.4f} | {acc_b:.4f} | {diff:+.4f} ({se:.4f}) | "
              f"{part:+.5f} ({part_se:.5f}) |")
    print(f"\n{time.perf_counter() - started:.0f} s for the two models")


def render(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 100 else f"{value:,.1f}"
    if isinstance(value, (int, np.integer)):
        return f"{value:,}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path, help="a shard directory (corpusprep shard, or fidelity.py's peers)")
    parser.add_argument("b", type=Path, help="another, built from the same text and vocab")
    parser.add_argument("--names", nargs=2, default=None, help="column names (default: the directory names)")
    parser.add_argument("--heldout", type=Path, help="held-out shards (fidelity.py's heldout-mlm)")
    parser.add_argument("--ngram", type=int, default=8, help="tokens an n-gram of the coverage measure")
    parser.add_argument("--split", default="train")
    parser.add_argument("--runs", nargs=2, type=Path, help="the trainer runs trained on A and on B (needs "
                        "--heldout): their held-out predictions compared by place in the row, target, action")
    parser.add_argument("--maskings", type=int, default=8, help="held-out maskings, as bench/fidelity.py's")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for --runs")
    args = parser.parse_args()
    if args.runs and not args.heldout:
        parser.error("--runs needs --heldout (the held-out shards the runs are scored on)")
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    names = args.names or [args.a.name, args.b.name]
    try:
        a, b = load(args.a, names[0], args.split), load(args.b, names[1], args.split)
        heldout = load(args.heldout, "heldout", "train") if args.heldout else None
        vocab = Vocab.of(args.a)
        if open_shards(args.b).vocab_info().sha256 != open_shards(args.a).vocab_info().sha256:
            sys.exit(f"{args.b}: not the vocab of {args.a}; the comparison needs one vocab")
    except DataError as e:
        sys.exit(str(e))
    table, rank = compare(a, b, vocab, args.ngram, heldout)
    print(f"| section | measure | {names[0]} | {names[1]} |\n|---|---|---:|---:|")
    for section, label, x, y in table:
        print(f"| {section} | {label} | {render(x)} | {render(y)} |")
    print(f"\n{args.ngram}-grams; masking (prob, max predictions): {a.masking} / {b.masking}; "
          f"{time.perf_counter() - started:.0f} s")
    if args.runs:
        model_table(args.runs, names, heldout, args.heldout, vocab, rank, args.maskings)


if __name__ == "__main__":
    main()
