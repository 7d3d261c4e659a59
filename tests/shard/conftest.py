from tests.shard.objectives_fixture import none_pairs_dir, sop_pairs_dir  # noqa: F401  (fixtures)
from tests.shard.realistic import pairs_dir, stream, vocab_dir  # noqa: F401  (fixtures)
