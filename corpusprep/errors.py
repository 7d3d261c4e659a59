"""Errors a user sees as one clear line (no traceback), each with its exit code."""


class CorpusprepError(Exception):
    """A failure caused by the data or the environment: exit code 1."""

    exit_code = 1


class UsageError(CorpusprepError):
    """Bad options, a missing or unreadable path, an unknown format: exit code 2."""

    exit_code = 2


class InputError(UsageError):
    """An input path that cannot be used (missing, unreadable, unknown format)."""


class DataError(CorpusprepError):
    """Bad content inside an input, under `--on-error fail`: names the file and position."""
