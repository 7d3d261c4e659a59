"""Run under torchrun by test_train.py: train, then write this rank's summary (weights digest included)."""

import json
import os
import sys
from pathlib import Path

from trainer.config import load_config
from trainer.train import train

if __name__ == "__main__":
    config = load_config(None, sys.argv[1:])
    summary = train(config)
    Path(config.logging.run_dir, f"summary-rank{os.environ['RANK']}.json").write_text(json.dumps(summary))
