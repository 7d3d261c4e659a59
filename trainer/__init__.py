"""A compact BERT (MLM + NSP) pre-trainer on corpusprep shards: `python -m trainer.run`."""
