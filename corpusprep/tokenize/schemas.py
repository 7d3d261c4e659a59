"""The records of a vocab directory read back, registered with `corpusprep.engine.records`: the
`vocab_report.json` `corpusprep vocab` writes, and the Hugging Face tokenizer files where corpusprep reads
a setting from them (their casing)."""

from __future__ import annotations

from corpusprep.engine import records
from corpusprep.engine.records import COUNT, Bool, Int, MapOf, Obj, Opt

VOCAB_REPORT = Obj({
    "vocab_size": Int(1),
    "documents": Obj({"read": COUNT, "used": COUNT, "skipped": MapOf(COUNT)}),
    "bytes_read": COUNT,
})

# A Hugging Face tokenizer's files, where corpusprep reads a setting from them.
TOKENIZER_CONFIG = Obj({}, {"do_lower_case": Bool()})
TOKENIZER_JSON = Obj({}, {"normalizer": Opt(Obj({}, {"lowercase": Bool()}))})

records.register(__name__, {
    "vocab_report": VOCAB_REPORT,  # VOCAB_DIR/vocab_report.json
    "tokenizer_config": TOKENIZER_CONFIG,  # tokenizer_config.json (casing)
    "tokenizer_json": TOKENIZER_JSON,  # tokenizer.json (casing of a vocab without tokenizer_config.json)
})
