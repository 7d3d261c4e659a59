"""A corpus with planted duplicates, near-copies, shared paragraphs, evaluation sentences and foreign
documents, and the truth about each: for tests/curate and bench/curate.py.

Documents are English-like sentences drawn from a fixed word list (real English function words and common
words, so that language identification sees English). A near-copy edits a few percent of its original's
words (Jaccard about 0.8-0.9 on word 5-grams); a shared-paragraph pair holds one identical paragraph in two
otherwise different documents; evaluation sentences (13 to 20 words) are inserted whole into some documents,
and 8-word fragments of others into other documents; foreign documents are UD sentences of one language.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from corpusprep.curate import text as txt

_TEXT = (
    "the of and to in is was for that with as on by it from at are be this which an or his had not "
    "were but have their they one has first new more after its also two other been who time all would "
    "into some there when can city year people used these state part during only between made many "
    "under then world three most such over where well school water known later team government "
    "through against life while called early war number area before about found work since system "
    "history being may both same family music house club river around second game several because "
    "film local each place land public until village series often line national small form end even "
    "during station without country large name based including power book church began built did "
    "great group company back including own set within order much north south east west old high long "
    "age field park member party short"
)
WORDS = _TEXT.split()
FOREIGN = ("de", "fr", "es", "ru", "fi", "pl")
UD = Path(__file__).resolve().parents[3] / "shared" / "sbd" / "ud"


@dataclass
class Planted:
    documents: list[dict] = field(default_factory=list)  # {"id", "text"}
    near: list[tuple[str, str]] = field(default_factory=list)  # (original id, copy id)
    exact: list[tuple[str, str]] = field(default_factory=list)
    shared: list[tuple[str, str]] = field(default_factory=list)  # documents sharing one paragraph
    eval_sentences: list[str] = field(default_factory=list)
    contaminated: list[str] = field(default_factory=list)  # ids holding a whole evaluation sentence
    fragments: list[str] = field(default_factory=list)  # ids holding an 8-word fragment only
    foreign: list[str] = field(default_factory=list)
    english: list[str] = field(default_factory=list)  # every English document

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(d) + "\n" for d in self.documents), encoding="utf-8")
        return path


def sentence(rng: random.Random, low: int = 8, high: int = 20) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, sentences: int = 5) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def document(rng: random.Random, paragraphs: int = 4) -> str:
    return "\n".join(paragraph(rng) for _ in range(paragraphs))


def jaccard(a: str, b: str, n: int = 5) -> float:
    def grams(t: str) -> set:
        w = txt.words(t)
        return {tuple(w[i: i + n]) for i in range(len(w) - n + 1)}

    x, y = grams(a), grams(b)
    return len(x & y) / max(len(x | y), 1)


def near_copy(rng: random.Random, text: str, rate: float) -> str:
    """`text` with about `rate` of its words replaced, paragraphs kept."""
    out = []
    for line in text.split("\n"):
        words = line.split()
        for i in range(len(words)):
            if rng.random() < rate:
                words[i] = rng.choice(WORDS)
        out.append(" ".join(words))
    return "\n".join(out)


def foreign_documents(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(language, text) of `count` documents of UD sentences (other languages); none without ../shared."""
    pools = {}
    for lang in FOREIGN:
        path = UD / f"{lang}_dev.jsonl"
        if path.is_file():
            lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
            pools[lang] = [s for d in lines for p in d["paragraphs"] for s in p]
    if not pools:
        return []
    out = []
    for i in range(count):
        lang = sorted(pools)[i % len(pools)]
        start = rng.randrange(len(pools[lang]) - 12)
        out.append((lang, " ".join(pools[lang][start: start + 8])))
    return out


def planted_corpus(seed: int = 0, originals: int = 200, near: int = 40, exact: int = 20, shared: int = 20,
                   evaluation: int = 20, foreign: int = 40, rate: float = 0.02, low: float = 0.8,
                   high: float = 0.9) -> Planted:
    rng = random.Random(seed)
    p = Planted()

    def add(text: str, english: bool = True) -> str:
        doc_id = f"d{len(p.documents):05d}"
        p.documents.append({"id": doc_id, "text": text})
        if english:
            p.english.append(doc_id)
        return doc_id

    base = [add(document(rng)) for _ in range(originals)]
    texts = {d["id"]: d["text"] for d in p.documents}
    for original in rng.sample(base, near):
        copy = near_copy(rng, texts[original], rate)
        while not low <= jaccard(texts[original], copy) <= high:  # Jaccard about 0.8-0.9 on word 5-grams
            copy = near_copy(rng, texts[original], rate)
        p.near.append((original, add(copy)))
    for original in rng.sample(base, exact):
        p.exact.append((original, add(texts[original].upper().replace("\n", "\n\n "))))
    for _ in range(shared):
        common = paragraph(rng, 2)
        p.shared.append((add(document(rng, 4) + "\n" + common), add(common + "\n" + document(rng, 4))))
    p.eval_sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(13, 20))) + "."
                        for _ in range(2 * evaluation)]
    for sent in p.eval_sentences[:evaluation]:
        p.contaminated.append(add(document(rng, 2) + "\n" + paragraph(rng, 2) + " " + sent.capitalize()
                                  + " " + paragraph(rng, 2)))
    for sent in p.eval_sentences[evaluation:]:
        fragment = " ".join(sent.split()[3:11])
        p.fragments.append(add(document(rng, 2) + "\n" + paragraph(rng, 2) + " " + fragment + " "
                               + paragraph(rng, 1)))
    for _, text in foreign_documents(foreign, rng):
        p.foreign.append(add(text, english=False))
    return p
