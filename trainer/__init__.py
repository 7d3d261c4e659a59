"""A compact BERT pre-trainer (MLM + NSP or SOP, or MLM alone) on corpusprep shards: `trainer.run`."""
