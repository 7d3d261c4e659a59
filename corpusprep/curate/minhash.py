"""MinHash signatures and LSH band keys, vectorised with numpy.

A permutation is a multiply-add-shift hash (Dietzfelbinger et al. 1997): the top 32 bits of `a * x + b`
modulo 2^64, with `a` odd, drawn once from the seed (`engine.rng`). datatrove and datasketch use Carter and
Wegman's `(a * x + b) mod (2^61 - 1)`, which numpy can only compute with a 64-bit `%` per value: the
multiply-shift family needs no division, and its top bits are as uniform (bench/curate.py measures both).
A band's key mixes its `rows` values into 64 bits: two documents share a key when the band is equal (a
chance collision: 2^-64).
"""

from __future__ import annotations

import numpy as np

from corpusprep.curate.text import mix
from corpusprep.engine.rng import rng_for

BLOCK = 4096  # shingles a document's signature takes at a time: memory stays BLOCK x permutations x 8 bytes
EMPTY = np.uint32(0xFFFFFFFF)
_SHIFT = np.uint64(32)


class MinHasher:
    def __init__(self, permutations: int, bands: int, seed: int):
        rng = rng_for(seed, "curate-minhash")
        self.a = (rng.integers(0, 2**63, size=permutations, dtype=np.uint64) << np.uint64(1)) | np.uint64(1)
        self.b = rng.integers(0, 2**63, size=permutations, dtype=np.uint64)
        self.bands, self.rows = bands, permutations // bands
        self.band_salt = rng.integers(0, 2**63, size=(bands, self.rows), dtype=np.uint64) | np.uint64(1)

    def signature(self, shingles: np.ndarray) -> np.ndarray:
        """uint32 [permutations]: each permutation's least value over the shingles (all ones for none)."""
        out = np.full(len(self.a), EMPTY, dtype=np.uint32)
        with np.errstate(over="ignore"):
            for start in range(0, len(shingles), BLOCK):
                block = shingles[start: start + BLOCK, None] * self.a
                block += self.b
                block >>= _SHIFT
                np.minimum(out, block.min(axis=0).astype(np.uint32), out=out)
        return out

    def band_keys(self, signatures: np.ndarray) -> np.ndarray:
        """uint64 [documents, bands] from uint32 [documents, permutations]."""
        grid = signatures.reshape(len(signatures), self.bands, self.rows).astype(np.uint64)
        with np.errstate(over="ignore"):
            keyed = mix(grid * self.band_salt)
            return mix(np.bitwise_xor.reduce(keyed, axis=2) + np.arange(self.bands, dtype=np.uint64))


def similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard similarity of signature rows: the share of permutations whose least values agree."""
    return (a == b).mean(axis=-1)
