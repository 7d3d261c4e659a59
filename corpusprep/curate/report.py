"""curate's report: `report.md` (what was kept and removed, why, examples, the evaluation examples found in
the corpus) and `report.png` (documents by outcome; the kept documents' languages)."""

from __future__ import annotations

from pathlib import Path

from corpusprep.curate.dedup import RUN_WINDOW
from corpusprep.engine import storage
from corpusprep.engine.files import atomic_path

SHOWN_FOUND = 50  # evaluation examples listed in report.md (curate.json lists them all)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def report_markdown(stats: dict) -> str:
    documents = stats["documents"]
    lines = ["# corpusprep curate", "",
             f"{stats['kept']:,} of {documents:,} documents kept "
             f"({stats['characters']['kept']:,} of {stats['characters']['in']:,} characters).", "",
             "| outcome | documents | share |", "|---|---:|---:|",
             f"| kept | {stats['kept']:,} | {stats['kept'] / max(documents, 1):.2%} |"]
    lines += [f"| {reason} | {n:,} | {n / max(documents, 1):.2%} |" for reason, n in stats["removed"].items()]
    if stats.get("paragraphs_removed"):
        lines += ["", f"{stats['paragraphs_removed']:,} contaminated paragraphs taken out of kept documents."]
    duplicates = stats.get("duplicates") or {}
    if duplicates:
        lines += ["", f"Duplicates: {duplicates.get('exact_pairs', 0):,} exact pairs, "
                  f"{duplicates.get('near_pairs', 0):,} near pairs verified of "
                  f"{duplicates.get('near_candidates', 0):,} LSH candidates, "
                  f"{duplicates.get('clusters', 0):,} clusters (each keeps its first document)."]
        if duplicates.get("near_windowed"):
            lines += [f"{duplicates['near_windowed']:,} groups of equal band values held more than "
                      f"{RUN_WINDOW + 1:,} distinct signatures: each compared with the {RUN_WINDOW:,} "
                      "before it."]
    for reason, shown in stats.get("examples", {}).items():
        lines += ["", f"## {reason}", "", "| id | why | text |", "|---|---|---|"]
        for record in shown:
            why = record.get("kept") and f"kept: {record['kept']}" or record.get("detail") or " ".join(
                filter(None, [record.get("eval_file"), record.get("eval_position")]))
            lines.append(f"| {_cell(record['id'])} | {_cell(why or '')} | {_cell(record['text'])} |")
    lines += _evaluation_lines(stats.get("evaluation") or {})
    if stats.get("languages"):
        lines += ["", "## languages of the kept documents", "", "| language | documents |", "|---|---:|"]
        ranked = sorted(stats["languages"].items(), key=lambda x: -x[1])
        lines += [f"| {lang} | {n:,} |" for lang, n in ranked]
    lines += ["", "![outcomes](report.png)", ""]
    return "\n".join(lines)


def _evaluation_lines(evaluation: dict) -> list[str]:
    if not evaluation:
        return []
    found = evaluation.get("found_examples", [])
    lines = ["", "## evaluation examples found in the corpus", "",
             f"{evaluation.get('found', 0):,} of {evaluation.get('examples', 0):,} examples "
             f"({evaluation.get('too_short', 0):,} too short to match).", ""]
    if skipped := (evaluation.get("skipped") or {}).get("counts"):
        reasons = ", ".join(f"{reason} {n:,}" for reason, n in skipped.items())
        lines += [f"Left out of the evaluation files as malformed (--on-error skip): {reasons}; "
                  f"for example {_cell(evaluation['skipped']['examples'][0])}.", ""]
    if found:
        lines += ["| file | position | example |", "|---|---|---|"]
        lines += [f"| {_cell(e['file'])} | {_cell(e['position'])} | {_cell(e['text'][:200])} |"
                  for e in found[:SHOWN_FOUND]]
    return lines


def write_report(out_dir: Path, stats: dict) -> None:
    storage.write_text(out_dir / "report.md", report_markdown(stats))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outcomes = {"kept": stats["kept"], **stats["removed"]}
    fig, axes = plt.subplots(1, 2 if stats.get("languages") else 1, figsize=(11, 4), squeeze=False)
    # Log scales and counts on the bars: a few removals beside thousands kept must still show.
    bars = axes[0][0].barh(list(outcomes)[::-1], list(outcomes.values())[::-1], color="tab:blue")
    axes[0][0].bar_label(bars, fmt="{:,.0f}", padding=2)
    axes[0][0].set(title="documents by outcome", xlabel="documents (log scale)", xscale="log")
    axes[0][0].margins(x=0.15)
    if stats.get("languages"):
        top = sorted(stats["languages"].items(), key=lambda x: -x[1])[:15]
        bars = axes[0][1].bar([k for k, _ in top], [v for _, v in top], color="tab:green")
        axes[0][1].bar_label(bars, fmt="{:,.0f}", padding=2, fontsize=8)
        axes[0][1].set(title="languages of the kept documents", ylabel="documents (log scale)", yscale="log")
    fig.tight_layout()
    with atomic_path(out_dir / "report.png") as tmp:
        fig.savefig(tmp, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)
