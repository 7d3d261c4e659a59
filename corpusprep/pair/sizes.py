"""How `build-pairs` cuts its work: chunks (one tokenize task each) and partitions (one pair task per dupe
pass each) follow the bytes of text, not the count of documents, so that five million two-word documents
keep as few work files as the same megabytes of Wikipedia (bench/tiny_documents.py), and one process's memory
is bounded by the size of what it holds, not by the longest document (the reader cuts a document at
`--max-document-mb` already: `read.document.MAX_DOCUMENT_MB`).

The bound this gives (docs/manual/pairs.md, tests/pair/test_work_bound.py): a chunk holds at least
MIN_CHUNK_CHARS of text or MAX_CHUNK_DOCS documents (but the last, and one ended early by a document too
large to join it), and leaves two work files (its documents, its tokens) and a marker; so a build keeps at
most 6 work files per MiB of text plus 3 per 65,536 documents, and one marker per pair task.
"""

from __future__ import annotations

import math

# A chunk ends (after docs_per_chunk documents) once it holds MIN_CHUNK_CHARS, or 1/CHUNK_GROWTH of the text
# read before it when that is more: a small corpus still makes a task per core, a large one few tasks (a pair
# task reads its partition's batch of every chunk).
MIN_CHUNK_CHARS = 2**20
CHUNK_GROWTH = 16
# Never more than this (a larger document is a chunk of its own, at most --max-document-mb): a tokenize task
# holds ~16 bytes per character of its chunk at its peak (the splitter's and tokenizer's intermediates).
CHUNK_CHARS = 8 * 2**20
# ... and never more documents than this (what a task holds per document: its id, its sentence list).
MAX_CHUNK_DOCS = 65_536

# A partition holds about `docs_per_partition` documents (the pool NotNext segments come from), but never
# less text than docs_per_partition x SHORT_DOCUMENT_CHARS (a split of tiny documents gets fewer, larger
# partitions: fewer tasks and files, as many bytes a partition as documents this long give), nor much more
# than MAX_PARTITION_CHARS (a pair task holds ~2 bytes per character of its partition at its peak), as long as
# each keeps MIN_POOL_DOCUMENTS on average (a document alone in its partition has no NotNext partner). With
# documents within the reader's bound (16 MB) a partition so averages at most 7 x 16 MB, within the cap
# (the parts of a 1 GB line: 8 partitions of ~8). Both leave the partitions, hence the bytes, that counting
# documents gives to a corpus whose documents average SHORT_DOCUMENT_CHARS to MAX_PARTITION_CHARS /
# docs_per_partition characters (256 to 64 Ki at the default 2,048), or whose split is under 128 MiB.
SHORT_DOCUMENT_CHARS = 256
MAX_PARTITION_CHARS = 128 * 2**20
MIN_POOL_DOCUMENTS = 4


def partition_count(documents: int, chars: int, docs_per_partition: int) -> int:
    """Partitions of a split of `documents` holding `chars` characters (see the constants above)."""
    by_documents = math.ceil(documents / docs_per_partition)
    by_short_documents = math.ceil(chars / (docs_per_partition * SHORT_DOCUMENT_CHARS))
    by_bytes = min(math.ceil(chars / MAX_PARTITION_CHARS), documents // MIN_POOL_DOCUMENTS)
    return max(1, min(by_documents, by_short_documents), by_bytes)


class ChunkRule:
    """Where the read stage ends a chunk: `before(size)` before a document of `size` characters joins the
    open chunk (`add(size)`), `after()` once it has; `ended()` when the chunk is written. Chunking never
    changes the output (a partition takes its documents in input order whatever the chunks), only the number
    and size of the tasks."""

    def __init__(self, docs_per_chunk: int) -> None:
        self.docs_per_chunk = docs_per_chunk
        self.read = 0  # characters in the chunks ended so far
        self.size = self.docs = 0  # the open chunk's

    def before(self, size: int) -> bool:
        """True: end the open chunk first (the document would take it past CHUNK_CHARS)."""
        return self.docs > 0 and self.size + size > CHUNK_CHARS

    def add(self, size: int) -> None:
        self.size += size
        self.docs += 1

    def after(self) -> bool:
        """True: end the open chunk now that the document joined it."""
        floor = min(CHUNK_CHARS, max(MIN_CHUNK_CHARS, self.read // CHUNK_GROWTH))
        return self.docs >= MAX_CHUNK_DOCS or (self.docs >= self.docs_per_chunk and self.size >= floor)

    def ended(self) -> None:
        self.read += self.size
        self.size = self.docs = 0
