"""Imports every command module so that each registers its commands on the app."""

from corpusprep.cli import sentences, vocab  # noqa: F401
