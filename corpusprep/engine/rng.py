"""Seeded randomness: every draw comes from a generator keyed by (seed, partition, pass, ...)."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_hash(*keys: int | str) -> int:
    """A 64-bit hash of the keys that is the same on every machine and Python run (unlike `hash`)."""
    h = hashlib.blake2b(digest_size=8)
    for key in keys:
        h.update(str(key).encode())
        h.update(b"\x1f")
    return int.from_bytes(h.digest(), "little")


def unit_interval(*keys: int | str) -> float:
    """A deterministic number in [0, 1) from the keys, e.g. to assign a document to a split."""
    return stable_hash(*keys) / 2**64


def rng_for(seed: int, *keys: int | str) -> np.random.Generator:
    """A generator for one unit of work, e.g. rng_for(seed, "pairs", partition, dupe_pass)."""
    entropy = [seed & 0xFFFFFFFF] + [k if isinstance(k, int) else stable_hash(k) for k in keys]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
