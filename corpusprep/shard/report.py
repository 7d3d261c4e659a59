"""Looking at shards: decoded examples (`inspect`), column statistics and plots (`stats`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from rich.table import Table
from rich.text import Text

from corpusprep.engine import storage
from corpusprep.engine.records import inside
from corpusprep.errors import DataError, UsageError
from corpusprep.objectives import objective as objective_spec
from corpusprep.objectives.base import Objective
from corpusprep.shard.table import count_keys
from corpusprep.shard.validate import load_manifest
from corpusprep.tokenize import VocabInfo

STYLE = {
    "a": "cyan", "b": "green", "special": "bold magenta", "original": "yellow",
    "mask_token": "bold white on red", "random_token": "bold black on yellow",
    "kept_token": "bold black on green",
}


def shard_paths(directory: Path, manifest: dict, split: str) -> list[Path]:
    """The split's shard files; a missing one is a DataError (exit 1) naming it and `corpusprep validate`."""
    if split not in manifest["splits"]:
        raise UsageError(f"{directory}: no split {split!r} (has {', '.join(manifest['splits'])})")
    paths = [inside(directory, s["path"]) for s in manifest["splits"][split]["shards"]]
    for path in paths:
        if not storage.is_file(path):
            raise DataError(f"{storage.url(path)}: listed in the manifest but missing (`corpusprep validate "
                            f"{storage.url(directory)}`)")
    return paths


def _unreadable(paths: list[Path], error: Exception) -> DataError:
    """A shard that does not read: name the first one that fails and point at `validate`."""
    for path in paths:
        try:
            storage.parquet_file(path)
        except (OSError, pa.ArrowException) as bad:
            return DataError(f"{path}: unreadable Parquet ({bad}); `corpusprep validate` checks every shard")
    return DataError(f"{paths[0].parent}: shards unreadable ({str(error).splitlines()[0]})")


def render_examples(
    directory: Path, n: int = 5, split: str = "train", vocab_dir: Path | None = None
) -> list[Text]:
    """The first `n` rows of a split as coloured text: A and B in their colours, each prediction as the shown
    token (red: [MASK], yellow: random, green: kept) followed by `/original`."""
    manifest = load_manifest(directory)
    # the vocab: given, or the copy the shards keep, or where the manifest says it was (checked by sha256)
    own = directory / "vocab.txt"
    vocab = VocabInfo.load(vocab_dir or (directory if storage.is_file(own) else manifest["vocab"]["path"]))
    if vocab.sha256 != manifest["vocab"]["sha256"]:
        raise UsageError(f"{vocab.directory}: not the vocab these shards were made with (sha256 differs)")
    rendered = []
    for path in shard_paths(directory, manifest, split):
        try:
            table = storage.parquet_file(path).read_row_group(0).slice(0, n - len(rendered)).to_pylist()
        except (OSError, pa.ArrowException) as error:
            raise _unreadable([path], error) from None
        spec = objective_spec(manifest.get("objective"))
        rendered += [_render(row, vocab, f"{path.name} row {i}", spec) for i, row in enumerate(table)]
        if len(rendered) >= n:
            break
    return rendered


def _render(row: dict, vocab: VocabInfo, where: str, objective: Objective) -> Text:
    """One row: segments A/B in their colours (rows of pieces: alternate pieces, each after a `|`)."""
    label = objective.describe(row)
    text = Text(f"{where}: {label}, {row['num_tokens']} tokens, {len(row['masked_lm_ids'])} predictions\n",
                style="bold")
    originals = dict(zip(row["masked_lm_positions"], row["masked_lm_ids"], strict=True))
    segments = row["token_type_ids"]
    if objective.packs:  # colour by piece: 0, 1, 0, ...
        starts = set(row["document_starts"])
        piece = np.cumsum([i in starts for i in range(len(row["input_ids"]))]) - 1
        segments = (piece % 2).tolist()
    for i, (token, segment) in enumerate(zip(row["input_ids"], segments, strict=True)):
        if i and objective.packs and i in starts:
            text.append(" | ", style=STYLE["special"])
        elif i:
            text.append(" ")
        if i in originals:
            original = originals[i]
            kind = (
                "mask_token" if token == vocab.mask_id
                else "kept_token" if token == original else "random_token"
            )
            text.append(vocab.tokens[token], style=STYLE[kind])
            text.append(f"/{vocab.tokens[original]}", style=STYLE["original"])
        else:
            style = "special" if vocab.is_special[token] else "b" if segment else "a"
            text.append(vocab.tokens[token], style=STYLE[style])
    return text


STATS_COLUMNS = ("num_tokens", "masked_lm_positions")  # what `stats` reads of each shard


def column_stats(directory: Path, batch_size: int = 32) -> dict:
    """Per split: length histogram, and the padding a fixed-length or a per-batch padded batch would waste."""
    import polars as pl

    manifest = load_manifest(directory)
    max_len = manifest["max_seq_length"]
    width = max(1, max_len // 8)
    result = {}
    for split in manifest["splits"]:
        paths = shard_paths(directory, manifest, split)
        if not paths:
            continue
        try:  # each shard's two columns through the storage seam (a local file, or an object store's)
            frame = pl.concat([pl.from_arrow(storage.read_table(p, columns=list(STATS_COLUMNS))).select(
                pl.col("num_tokens").cast(pl.Int64).alias("n"),
                pl.col("masked_lm_positions").list.len().alias("predictions"),
            ) for p in paths]).with_row_index("row")
        except (OSError, pa.ArrowException, pl.exceptions.PolarsError) as error:
            raise _unreadable(paths, error) from None
        hist = (frame.group_by((pl.col("n") - 1) // width * width + 1).agg(pl.len().alias("rows"))
                .rename({"n": "from"}).sort("from"))
        # Rows are shuffled, so consecutive rows are what a sequential loader would batch together.
        batches = frame.group_by(pl.col("row") // batch_size).agg(pl.len().alias("k"), pl.col("n").max())
        tokens = int(frame["n"].sum())
        result[split] = {
            "rows": frame.height,
            "mean_length": float(frame["n"].mean()),
            "max_length": int(frame["n"].max()),
            "mean_predictions": float(frame["predictions"].mean()),
            "histogram": [(lo, lo + width - 1, rows) for lo, rows in hist.iter_rows()],
            "waste_fixed": 1 - tokens / (frame.height * max_len),
            "waste_per_batch": 1 - tokens / int((batches["k"] * batches["n"]).sum()),
            "shard_rows": [s["rows"] for s in manifest["splits"][split]["shards"]],
        }
    return {"manifest": manifest, "splits": result, "batch_size": batch_size}


def stats_tables(stats: dict) -> list[Table]:
    manifest, splits = stats["manifest"], stats["splits"]
    columns = {**manifest["splits"], "all": manifest["totals"]}
    totals = Table(title="manifest totals", title_justify="left")
    totals.add_column("count")
    for name in columns:
        totals.add_column(name, justify="right")
    spec = objective_spec(manifest.get("objective"))
    for key in count_keys(spec.name):
        totals.add_row(key, *(f"{c[key]:,}" for c in columns.values()))
    ratios = [("masked_tokens", "tokens"), ("mask_token", "masked_tokens"), ("random_token", "masked_tokens"),
              ("kept_token", "masked_tokens"), (spec.shard_counts[-1], "examples")]
    for num, den in ratios:
        shares = (f"{c[num] / c[den]:.4f}" if c[den] else "-" for c in columns.values())
        totals.add_row(f"{num} / {den}", *shares)
    tables = [totals]
    for name, split in splits.items():
        title = (f"{name}: lengths (mean {split['mean_length']:.1f}, max {split['max_length']}, "
                 f"{split['mean_predictions']:.2f} predictions per example)")
        hist = Table(title=title, title_justify="left")
        for column in ("tokens", "rows", "share", ""):
            hist.add_column(column, justify="right" if column else "left")
        top = max(r for _, _, r in split["histogram"])
        for lo, hi, rows in split["histogram"]:
            share = rows / split["rows"]
            hist.add_row(f"{lo}-{hi}", f"{rows:,}", f"{share:.3f}", "#" * round(40 * rows / top))
        tables.append(hist)
        pad = Table(title=f"{name}: padding", title_justify="left")
        pad.add_column("batch padded to")
        pad.add_column("tokens wasted", justify="right")
        pad.add_row(f"max_seq_length ({manifest['max_seq_length']})", f"{split['waste_fixed']:.1%}")
        pad.add_row(f"longest in batch (batch {stats['batch_size']})", f"{split['waste_per_batch']:.1%}")
        rows = split["shard_rows"]
        pad.add_row("(shard balance)", f"{min(rows):,} to {max(rows):,} rows in {len(rows)} shards")
        tables.append(pad)
    return tables


def check_plot_path(path: Path, shards_dir: Path) -> str:
    """The image format of `stats --plot PATH` (from its extension; none: png), checked before any work: a
    known format, and never a file inside the shards (a file they do not own makes them invalid) or inside
    another corpusprep output."""
    from matplotlib.backend_bases import FigureCanvasBase

    from corpusprep.engine.placement import check_output_file

    path = Path(path)
    if storage.is_dir(path):
        raise UsageError(f"--plot {path}: is a directory; give a file name such as stats.png")
    check_output_file(path, [shards_dir], "stats --plot")
    # pgf needs a LaTeX installation: not offered
    formats = sorted(f for f in FigureCanvasBase.get_supported_filetypes() if f != "pgf")
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt not in formats:
        raise UsageError(
            f"--plot {path}: unknown image format {path.suffix!r}; use one of {', '.join(formats)}"
        )
    return fmt


def plot_stats(stats: dict, path: Path, fmt: str = "png") -> None:
    import matplotlib.pyplot as plt

    from corpusprep.engine.files import atomic_path

    fig = stats_figure(stats)
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, format=fmt, dpi=100)
    plt.close(fig)


def stats_figure(stats: dict):
    """Length histogram per split and rows per shard, as a matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (lengths, balance) = plt.subplots(1, 2, figsize=(12, 4.5))
    splits = stats["splits"]
    width = 0.8 / max(len(splits), 1)  # the splits' bars side by side within each shard's slot
    for i, (name, s) in enumerate(splits.items()):
        # every bin drawn as a bin: edges from each bin's first length to one past the last bin's end
        edges = np.array([lo for lo, _, _ in s["histogram"]] + [s["histogram"][-1][1] + 1])
        rows = np.array([r for _, _, r in s["histogram"]])
        lengths.stairs(rows / rows.sum(), edges, label=name, linewidth=1.5)
        shards = np.arange(len(s["shard_rows"]))
        balance.bar(shards + (i - (len(splits) - 1) / 2) * width, s["shard_rows"], width, label=name)
    lengths.set(title="example length (tokens incl. specials)", xlabel="num_tokens", ylabel="share of rows")
    balance.set(title="rows per shard", xlabel="shard", ylabel="rows")
    balance.xaxis.set_major_locator(MaxNLocator(integer=True))  # shards are numbered, never 0.5
    for ax in (lengths, balance):  # outside the axes: never over the bars
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
    fig.tight_layout()
    return fig
