from tests.shard.realistic import stream, vocab_dir  # noqa: F401  (fixtures)
