"""Downstream evaluation: is a pre-trained BERT better than nothing, by how much, at what cost, measured
by the paper's yardsticks (word tagging, named entities, GLUE, extractive question answering)?

    python -m trainer.evaluate runs/demo/train --train en_ewt-ud-train.conllu.xz --dev en_ewt-ud-dev.conllu.xz
    python -m trainer.evaluate hf/ --glue glue_data/ -o runs/glue
    python -m trainer.evaluate hf/ --train train-v1.1.json --dev dev-v1.1.json --benchmark squad1.1

The model (a run dir, a checkpoint or a Hugging Face directory) and the same architecture randomly
initialised are fine-tuned with the same settings and seeds (`transformers.Trainer`), the epoch chosen on
dev, and scored by the field's own scorers: per-seed scores, the median and spread of each, the transfer
gain with its spread, a verdict, the task's cheap baseline, the published BERT figure for a model of BERT's
shape, and what the pre-training cost. transformers, accelerate, seqeval, scikit-learn and scipy are an
optional extra (`.[eval]`); the trainer's own import path does not need them.

    tasks/       one module per task kind (tag, ner, classify, regression, qa), registered in one table
    data.py      examples, splits, faults, formats (pure Python); conllu.py, columns.py, tables.py read them
    squad*.py    SQuAD for the qa kind: squad.py the files and baselines, squad_features.py windows and
                 spans, squad_metric.py exact match and F1 by the official rules
    readers.py   a task's files -> TaskData, by their format's reader and the task kind's checks
    metrics.py   the scores, by seqeval, scikit-learn and scipy
    model.py     the model source -> a directory transformers loads (via trainer.export), its shape, its cost
    finetune.py  one fine-tuning run, the epoch chosen on dev, its predictions and scores
    compare.py   the runs over seeds, inits (and a grid); an artifact when written to a directory
    random_runs.py a store of random-init runs, reused by evaluations of the same architecture
    summary.py   seeds -> medians, spreads, gain, verdict, the markdown page (pure Python)
    curves.py    dev-curves.png: the dev score per epoch of both models
    glue.py      a GLUE directory, every task, and the Table 1 of it
    multitask.py several tasks in a pipeline's [evaluate] table
    published.py Devlin et al. 2019's figures, the one table of them
    settings.py  every setting, its default and the defaults by model size (flags and [evaluate] alike)
    schemas.py   the records it writes and reads back
"""
