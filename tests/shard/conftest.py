from tests.shard.realistic import pairs_dir, stream, vocab_dir  # noqa: F401  (fixtures)
