"""corpusprep: raw text to BERT pre-training data (read -> split -> tokenize -> pair -> mask -> shard)."""

__version__ = "0.1.0"
