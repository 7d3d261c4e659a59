"""Published BERT figures, shown beside a model of the same shape as "published, not measured". One table,
one source: Devlin, Chang, Lee and Toutanova 2019, "BERT: Pre-training of Deep Bidirectional Transformers for
Language Understanding" (NAACL), arXiv:1810.04805v2.

    Table 1: GLUE test set (the GLUE server), BERT-base and BERT-large: F1 for QQP and MRPC, Spearman for
             STS-B, accuracy for the others; the average leaves out WNLI ("the problematic WNLI set").
    Table 2: SQuAD v1.1 dev, single model: exact match and F1.
    Table 3: SQuAD v2.0 dev, BERT-large single model (base not reported): exact match and F1.
    Table 7: CoNLL-2003 NER, fine-tuning: dev and test entity F1.

Scores are fractions, as trainer.evaluate reports them (84.6 in the paper is 0.846 here). A model is
"BERT-base shaped" with 12 layers of 768 and "BERT-large shaped" with 24 of 1024 (Devlin et al., 3).
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "Devlin et al. 2019 (arXiv:1810.04805v2)"
SHAPES = {(12, 768): "base", (24, 1024): "large"}


@dataclass(frozen=True)
class Figure:
    table: str  # where in the paper, and on which split
    metric: str  # the trainer.evaluate metric it is
    base: float | None
    large: float | None


GLUE = "Table 1, GLUE test server"
PUBLISHED: dict[str, tuple[Figure, ...]] = {
    "mnli-m": (Figure(GLUE, "accuracy", 0.846, 0.867),),
    "mnli-mm": (Figure(GLUE, "accuracy", 0.834, 0.859),),
    "qqp": (Figure(GLUE, "f1", 0.712, 0.721),),
    "qnli": (Figure(GLUE, "accuracy", 0.905, 0.927),),
    "sst-2": (Figure(GLUE, "accuracy", 0.935, 0.949),),
    "cola": (Figure(GLUE, "matthews", 0.521, 0.605),),
    "sts-b": (Figure(GLUE, "spearman", 0.858, 0.865),),
    "mrpc": (Figure(GLUE, "f1", 0.889, 0.893),),
    "rte": (Figure(GLUE, "accuracy", 0.664, 0.701),),
    "glue-average": (Figure(GLUE + ", average without WNLI", "average", 0.796, 0.821),),
    "squad1.1": (Figure("Table 2, dev", "exact_match", 0.808, 0.841),
                 Figure("Table 2, dev", "f1", 0.885, 0.909)),
    "squad2.0": (Figure("Table 3, dev", "exact_match", None, 0.787),
                 Figure("Table 3, dev", "f1", None, 0.819)),
    "conll2003": (Figure("Table 7, dev", "entity_f1", 0.964, 0.966),),
    "conll2003-test": (Figure("Table 7, test", "entity_f1", 0.924, 0.928),),
}
BENCHMARKS = tuple(b for b in PUBLISHED if b not in ("glue-average", "conll2003-test"))
# a test file scored beside dev: its own figure (MNLI's mismatched dev set is the suite's second scored file)
SECOND = {"conll2003": "conll2003-test", "mnli-m": "mnli-mm"}


def benchmark_of(benchmark: str | None, split: str) -> str | None:
    """The published benchmark a scored split compares to: dev is the named one, test its SECOND."""
    return benchmark if split == "dev" else SECOND.get(benchmark or "")


def shape(layers: int, hidden: int) -> str | None:
    """"base" or "large" for a model of BERT's shapes, else None (no published figure applies)."""
    return SHAPES.get((layers, hidden))


def figures(benchmark: str | None, layers: int, hidden: int) -> list[dict]:
    """The published figures for `benchmark` that apply to a model of this shape, as report rows."""
    size = shape(layers, hidden)
    if benchmark is None or size is None:
        return []
    rows = []
    for figure in PUBLISHED.get(benchmark, ()):
        value = getattr(figure, size)
        if value is not None:
            rows.append({"name": f"BERT-{size} (published, not measured: {SOURCE}, {figure.table})",
                         "metric": figure.metric, "value": value})
    return rows
