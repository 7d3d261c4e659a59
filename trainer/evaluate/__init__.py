"""Downstream evaluation: is a pre-trained BERT better than nothing, by how much, and at what cost?

    python -m trainer.evaluate runs/demo/train --train en_ewt-ud-train.conllu.xz --dev en_ewt-ud-dev.conllu.xz

The model (a run dir, a checkpoint or a Hugging Face directory) and the same architecture randomly
initialised are fine-tuned with the same settings and seeds (`transformers.Trainer`), and scored on dev:
per-seed scores, mean and spread of each, the transfer gain with its spread, a verdict, a cheap baseline
and what the pre-training cost. transformers and accelerate are an optional extra (`corpusprep[eval]`); the
trainer's own import path does not need them.

    data.py      labelled files -> TaskData (CoNLL-U tagging; TSV/CSV/JSONL classification, GLUE's layout)
    model.py     the model source -> a directory transformers loads (via trainer.export) + its cost
    finetune.py  one fine-tuning run with transformers, scored
    summary.py   seeds -> means, spreads, gain, verdict, the markdown page (pure Python)
    compare.py   the runs over seeds and inits; an artifact when written to a directory
    settings.py  every setting and its default (the command's flags, a pipeline's [evaluate] table)
"""
