"""`corpusprep validate` on a curate directory: the artifact's files against its manifest, and every line of
`removed.jsonl` against its schema; the counts of `curate.json` add up."""

from __future__ import annotations

from pathlib import Path

from corpusprep.engine import records, storage
from corpusprep.errors import DataError
from corpusprep.validate import validate_artifact


def validate_curated(directory: Path) -> tuple[list[str], str]:
    problems, _ = validate_artifact(directory)
    try:
        stats = records.load_record(directory / "curate.json", "curate_stats")
    except DataError as error:
        return [*problems, str(error)], "curate directory"
    removed = sum(stats["removed"].values())
    if stats["kept"] + removed != stats["documents"]:
        problems.append(f"{directory / 'curate.json'}: kept {stats['kept']:,} + removed {removed:,} is not "
                        f"documents {stats['documents']:,}")
    lines = 0
    with storage.open_file(directory / "removed.jsonl", "rb") as f:
        for lines, line in enumerate(f, 1):  # noqa: B007 - the count is used after the loop
            try:
                records.check_record(records.parse_json(line, ""), "curate_removed",
                                     f"{directory / 'removed.jsonl'}:{lines}")
            except DataError as error:
                problems.append(str(error))
                break
    summary = (f"{stats['kept']:,} of {stats['documents']:,} documents kept; removed: "
               + (", ".join(f"{n:,} {r}" for r, n in stats["removed"].items()) or "none"))
    return problems, summary
