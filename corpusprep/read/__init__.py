"""Read stage: stream documents from files, directories or globs in any supported format.

    from corpusprep.read import Document, ReadOptions, ReadStats, iter_documents
    stats = ReadStats()
    for doc in iter_documents(["corpus/"], ReadOptions(format="auto"), stats):
        doc.id, doc.text, doc.sentences   # sentences: pre-split (BERT format) or None

Document ids are `"{source}:{index}"`, `source` the path relative to the input argument (a file argument:
its name), so ids do not depend on where the corpus lives. Memory is bounded whatever the input's shape: a
line longer than the document bound is handed on in pieces (`streams.iter_lines`), and a document past the
bound is cut into parts, each a document of its own (`documents_cut`, `document_parts` in `ReadStats`); a
JSONL line cannot be cut before it is parsed, so one over the bound is a bad document (`too_large`).
"""

from corpusprep.read.document import FORMATS, ON_ERROR, Document, ReadOptions, ReadStats
from corpusprep.read.inputs import resolve_inputs
from corpusprep.read.reader import iter_documents

__all__ = ["FORMATS", "ON_ERROR", "Document", "ReadOptions", "ReadStats", "iter_documents", "resolve_inputs"]
