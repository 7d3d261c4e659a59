"""Imported by a forkserver as part of its preload (tests/reliability/test_interrupts.py): Ctrl-C reaches the
process group while the server is still importing the stage's modules, as a user's Ctrl-C at that moment."""

import os
import signal
import time

os.killpg(0, signal.SIGINT)
time.sleep(0.5)  # still importing when the signal arrives
