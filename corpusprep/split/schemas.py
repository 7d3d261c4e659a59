"""The record `corpusprep sentences` leaves beside its output (what it was made from and of), registered
with `corpusprep.engine.records`."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import COUNT, Anything, ListOf, MapOf, Obj

SENTENCES_RECORD = Obj(
    {"identity": MapOf(Anything()), "output": ListOf(COUNT, 2, 2), "report": MapOf(Anything())}
)

records.register(__name__, {
    "sentences_record": SENTENCES_RECORD,  # .NAME.done.json beside a `corpusprep sentences` output
})
