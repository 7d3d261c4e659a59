"""Shard stage: masked examples -> globally shuffled, balanced, checksummed Parquet shards (`build.py`)."""
