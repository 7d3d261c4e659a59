"""Read stage: stream documents from files, directories or globs in any supported format.

    from corpusprep.read import Document, ReadOptions, ReadStats, iter_documents
    stats = ReadStats()
    for doc in iter_documents(["corpus/"], ReadOptions(format="auto"), stats):
        doc.id, doc.text, doc.sentences   # sentences: pre-split (BERT format) or None
"""

from corpusprep.read.document import FORMATS, ON_ERROR, Document, ReadOptions, ReadStats
from corpusprep.read.inputs import resolve_inputs
from corpusprep.read.reader import iter_documents

__all__ = ["FORMATS", "ON_ERROR", "Document", "ReadOptions", "ReadStats", "iter_documents", "resolve_inputs"]
