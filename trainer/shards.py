"""A shard directory opened for training (`open_shards`): its manifest read and checked, every shard file
of the splits listed at its size (and sha256 with verify), the vocab and masking options the shards were
made with (`Shards`), and, for shards on an object store, the local cache their files are read from
(`cache_for`). The stream that reads the rows in the global order: trainer.data."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from corpusprep.engine import records, storage
from corpusprep.engine.manifest import load_manifest, require, sha256_file
from corpusprep.errors import DataError, InputError, UsageError
from corpusprep.mask import strategies
from corpusprep.objectives import objective
from corpusprep.objectives.base import Objective
from corpusprep.tokenize import SPECIAL_TOKENS, VocabInfo
from trainer.cache import ShardCache, default_directory
from trainer.config import DataConfig

BASE_COLUMNS = ("input_ids", "token_type_ids", "masked_lm_positions", "masked_lm_ids")


@dataclass(frozen=True)
class ShardFile:
    path: Path
    rows: int
    bytes: int
    sha256: str
    identity: tuple[int, int, int] | None = None  # (inode, size, mtime) when the run opened the shards
    cache: ShardCache | None = None  # shards on an object store: the local cache that holds their copies

    def open_local(self) -> Path:
        """The file to memory-map: the shard itself, or (on a store) its verified copy in the cache, held
        in use until `close_local`."""
        return self.path if self.cache is None else self.cache.local(self.path, self.sha256, self.bytes)

    def close_local(self) -> None:
        if self.cache is not None:
            self.cache.release(self.sha256)

    def check_unchanged(self) -> None:
        """The file is still the one the run started with: `shard --overwrite` replacing the shards under a
        running trainer (on a machine where the readers' lock does not reach) stops it with one line,
        rather than letting it train on a mix of old and new rows."""
        if self.identity is not None and _identity(self.path) != self.identity:
            raise DataError(
                f"{self.path}: replaced or changed since this run started (another `corpusprep shard` wrote "
                "here?); the run stops rather than train on a mix of shards: rerun with --resume once the "
                "shards are final (a resume checks they are the ones its checkpoint was trained on)"
            )


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@dataclass(frozen=True)
class VocabIds:
    size: int
    pad_id: int
    mask_id: int
    special_ids: tuple[int, ...]


@dataclass(frozen=True)
class Shards:
    directory: Path
    manifest: dict
    vocab: VocabIds
    identities: dict[Path, tuple[int, int, int] | None] = field(default_factory=dict)  # ShardFile.identity
    cache: ShardCache | None = None  # shards on an object store (`open_shards`)

    @property
    def objective(self) -> Objective:
        return objective(self.manifest.get("objective"))  # shards from before objectives: nsp

    @property
    def columns(self) -> list[str]:
        """What the trainer reads: the masked tokens, and the sentence label or where pieces start."""
        spec = self.objective
        return [*BASE_COLUMNS, "document_starts" if spec.packs else spec.shard_label]

    def masking(self) -> dict:
        """`remask_table` keyword arguments: the objective and the masking options the shards were made with
        (manifests from before mask strategies say `whole_word_mask`)."""
        options = self.manifest.get("options", {})
        return {
            "objective": self.objective.name,
            "masked_lm_prob": float(options.get("masked_lm_prob", 0.15)),
            "max_predictions_per_seq": int(options.get("max_predictions_per_seq", 20)),
            "strategy": strategies.resolve(options),
        }

    def word_segmenter(self) -> str | None:
        """Chinese words need a segmenter to be masked whole: the manifest names it (older ones imply it)."""
        if "word_segmenter" in self.manifest:
            return self.manifest["word_segmenter"]
        language = self.manifest.get("pairs_stats", {}).get("options", {}).get("language")
        whole_words = strategies.get(self.masking()["strategy"]).whole_words
        return "jieba" if language == "zh" and whole_words else None

    def vocab_info(self) -> VocabInfo:
        """The vocab the shards were built with (dynamic masking needs its tokens): the copy in the shards
        directory, else the path the manifest names; its sha256 must be the manifest's."""
        entry = self.manifest.get("vocab", {})
        if self.cache is not None:  # on a store: the copy in the shards directory, fetched and verified
            where = self.directory / "vocab.txt"
            if entry.get("sha256") and storage.is_file(where):
                return VocabInfo.load(self.cache.local(where, entry["sha256"], None, ".txt"))
            raise UsageError(f"{storage.url(self.directory)}: dynamic masking needs the vocab the shards "
                             f"were built with, and {storage.url(where)} does not hold it")
        for where in (self.directory / "vocab.txt", Path(entry.get("path") or self.directory) / "vocab.txt"):
            if where.is_file():
                info = VocabInfo.load(where)
                if entry.get("sha256") not in (None, info.sha256):
                    raise DataError(
                        f"{where}: not the vocab {self.directory} was built with (sha256 differs)"
                    )
                return info
        raise UsageError(
            f"{self.directory}: dynamic masking needs the vocab the shards were built with, and neither "
            f"{self.directory / 'vocab.txt'} nor {entry.get('path')} holds it"
        )

    def examples(self, split: str) -> int:
        """Rows in `split`, as the manifest lists them (`plan_chunks` checks each file holds as many)."""
        return sum(f.rows for f in self.files(split))

    def files(self, split: str) -> list[ShardFile]:
        splits = self.manifest.get("splits", {})
        if split not in splits:
            raise UsageError(f"{self.directory / 'manifest.json'}: no {split!r} split")
        return [
            ShardFile(path := records.inside(self.directory, s["path"]), s["rows"], s["bytes"], s["sha256"],
                      self.identities.get(path), self.cache)
            for s in splits[split]["shards"]
        ]


def _vocab_ids(vocab: dict, where: Path) -> VocabIds:
    """Special ids from the manifest's vocab entry: {"size", "special_ids": {"[PAD]": 0, ...}}."""
    special = vocab.get("special_ids") or vocab.get("special") or {}
    try:
        ids = {t: int(special[t]) for t in SPECIAL_TOKENS}
        return VocabIds(int(vocab["size"]), ids["[PAD]"], ids["[MASK]"], tuple(sorted(ids.values())))
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{where}: vocab entry lacks size or special id {e}") from None


def open_shards(
    directory: str | Path,
    splits: tuple[str, ...] = ("train",),
    verify: bool = False,
    cache: ShardCache | None = None,
) -> Shards:
    """Read the manifest and check the files of `splits`: sizes always, sha256 with verify=True. A directory
    on an object store (`s3://bucket/shards`) is read through the storage seam, its records checked as a
    local one's; its files are read from `cache` (a default one when None), each verified once as it is
    fetched, so `verify` there checks only that every shard is listed."""
    directory = Path(directory)
    remote = storage.scheme_of(directory) not in (None, "file")
    manifest_path = directory / "manifest.json"
    if not storage.is_file(manifest_path):
        where = storage.url(manifest_path)
        raise UsageError(f"{where}: no manifest (not a finished `corpusprep shard` output)")
    if remote:
        _require_remote(directory)
        cache = cache or default_cache()
    else:
        require(directory, "shards")  # every owned file there with its size (sha256 below, with verify)
        cache = None
    manifest = records.load_record(manifest_path, "shards_manifest")
    shards = Shards(directory, manifest, _vocab_ids(manifest["vocab"], manifest_path), cache=cache)
    for split in splits:
        if split != "train" and split not in manifest["splits"]:
            continue  # validation is optional
        for f in shards.files(split):
            shards.identities[f.path] = None if remote else _identity(f.path)
            _check_size(f)
            if verify and not remote and (digest := sha256_file(f.path)) != f.sha256:
                raise DataError(f"{f.path}: sha256 {digest[:12]}... but the manifest says {f.sha256[:12]}...")
        if verify:  # a shard the manifest does not list: copied in by hand, or left by another run
            listed = {storage.resolve(f.path) for f in shards.files(split)}
            for path in storage.glob(directory / split, "*.parquet"):
                if storage.resolve(path) not in listed:
                    raise DataError(f"{storage.url(path)}: not in the manifest")
    return shards


def _check_size(f: ShardFile) -> None:
    if not storage.is_file(f.path):
        raise DataError(f"{storage.url(f.path)}: listed in the manifest but missing")
    size = storage.stat(f.path).st_size
    if size != f.bytes:
        raise DataError(f"{storage.url(f.path)}: {size} bytes, manifest says {f.bytes}")


def _require_remote(directory: Path) -> None:
    """`manifest.require(directory, "shards")` for a directory on an object store: a finished shards output
    (its artifact record read and checked through the seam) whose owned files are all there, at their size."""
    manifest = load_manifest(directory)
    where = storage.url(directory)
    if manifest is None:
        raise InputError(f"{where}: not a finished corpusprep output (no artifact record)")
    if manifest["kind"] != "shards":
        raise InputError(f"{where}: holds {manifest['kind']}, not shards")
    for name, entry in sorted(manifest["files"].items()):
        path = records.inside(directory, name)
        try:
            size = storage.stat(path).st_size
        except (FileNotFoundError, IsADirectoryError):
            raise DataError(f"{storage.url(path)}: missing") from None
        if size != entry["size"]:
            raise DataError(f"{storage.url(path)}: {size} bytes, manifest says {entry['size']}")


def default_cache() -> ShardCache:
    """The cache of the data settings' defaults (trainer/config.py): for a reader opened without a run."""
    return cache_for(DataConfig())


def cache_for(data: DataConfig) -> ShardCache:
    """The shard cache of a run's data settings (`data.cache_dir`, `cache_bytes`, `prefetch_shards`)."""
    return ShardCache(data.cache_dir or default_directory(), data.cache_bytes, data.prefetch_shards)
