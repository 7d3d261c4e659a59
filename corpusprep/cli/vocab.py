"""`corpusprep vocab` (owned by the vocab work; placeholder registration)."""
