"""Imports every command module so that each registers its commands on the app."""

from corpusprep.cli import curate, pairs, run, sentences, shard, vocab  # noqa: F401
