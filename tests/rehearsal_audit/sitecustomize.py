"""Loaded at start-up by every Python process of a rehearsal node (tests/test_cluster_recipe.py puts this
folder on the PYTHONPATH of each `ray start`; a Ray worker inherits its node's environment).

It records, through an audit hook (PEP 578), every path the process hands to corpusprep's storage seam (the
event `corpusprep.storage`: every file a stage lists, opens, writes, renames or hands to pyarrow) or opens
with Python's `open`/`os.open`, when the path lies under the rehearsal's root or is a URL, as JSON lines
[event, path, pid] in $CORPUSPREP_REHEARSAL_LOG/<node>-<pid>.jsonl, <node> being
$CORPUSPREP_REHEARSAL_NODE. Outside a rehearsal (those variables unset) it does nothing.
"""

from __future__ import annotations

import json
import os
import sys

EVENTS = ("open", "corpusprep.storage")


def _install(folder: str, node: str, root: str) -> None:
    log = os.open(os.path.join(folder, f"{node}-{os.getpid()}.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    busy = False

    def hook(event: str, args: tuple) -> None:
        nonlocal busy
        if busy or event not in EVENTS or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
            return  # another event, or open() of a file descriptor
        busy = True  # what the hook itself calls raises no event of its own again
        try:
            path = os.fsdecode(os.fspath(args[0]))
            if ":/" not in path:
                path = os.path.abspath(path)
            if path.startswith(root) or ":/" in path:
                os.write(log, (json.dumps([event, path, os.getpid()]) + "\n").encode())
        finally:
            busy = False

    sys.addaudithook(hook)


if all(os.environ.get(f"CORPUSPREP_REHEARSAL_{key}") for key in ("LOG", "NODE", "ROOT")):
    _install(*(os.environ[f"CORPUSPREP_REHEARSAL_{key}"] for key in ("LOG", "NODE", "ROOT")))
