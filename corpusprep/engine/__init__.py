"""Scheduling and durability shared by every stage: atomic files, completion markers, locks, seeded RNG,
and executors (a local process pool, or Ray) that run a stage function over partitions."""
