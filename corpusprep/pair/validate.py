"""`corpusprep validate` of a pairs directory (engine.outputs' "pairs" kind): stats.json against the rows of
the Parquet files, and every file its manifest lists unchanged."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from corpusprep.engine import storage
from corpusprep.engine.records import load_record
from corpusprep.errors import DataError, plural
from corpusprep.objectives import objective as objective_spec
from corpusprep.pair.schema import SPLITS
from corpusprep.validate import owned_problems, relative


def validate_pairs(directory: Path) -> tuple[list[str], str]:
    try:
        stats = load_record(directory / "stats.json", "pairs_stats")
    except (OSError, DataError) as error:
        return [relative(str(error), directory)], ""
    missing = [split for split in SPLITS if split not in stats["splits"]]
    if missing:
        return [f"stats.json: splits.{missing[0]}: missing"], ""
    expected = {split: stats["splits"][split]["pairs"] for split in SPLITS}
    unit = "row" if objective_spec(stats.get("objective")).packs else "pair"
    problems, files = [], 0
    for split in SPLITS:
        rows = 0
        for path in storage.glob(directory / split, "*.parquet"):
            files += 1
            try:
                rows += storage.parquet_file(path).metadata.num_rows
            except (OSError, pa.ArrowException) as error:
                problems.append(f"{split}/{path.name}: unreadable Parquet ({error})")
        if not problems and rows != expected[split]:
            problems.append(f"{split}: {plural(rows, unit)} in the files; stats.json: {expected[split]:,}")
    problems += owned_problems(directory, problems)
    return problems, f"{plural(sum(expected.values()), unit)} in {plural(files, 'file')}"
