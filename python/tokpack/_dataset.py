"""tokpack.Dataset (random access to a packed dataset), tokpack.Tokenizer and
tokpack.build (the packer)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core

StrPath = Union[str, "os.PathLike[str]"]


class Tokenizer:
    """A sentencepiece model, as the packer used it. Thread-safe."""

    def __init__(self, model_path: StrPath) -> None:
        self._core = _core.Tokenizer(os.fspath(model_path))
        self.model_path = os.fspath(model_path)

    def encode(self, text: str) -> List[int]:
        """Token ids exactly as sentencepiece's Encode gives them (no BOS/EOS)."""
        return self._core.encode(text)

    def decode(self, ids: Any) -> str:
        return self._core.decode([int(i) for i in np.asarray(ids).ravel()])

    @property
    def vocab_size(self) -> int:
        return self._core.vocab_size

    @property
    def bos_id(self) -> int:
        """-1 when the model has none; likewise eos_id, pad_id and unk_id."""
        return self._core.bos_id

    @property
    def eos_id(self) -> int:
        return self._core.eos_id

    @property
    def pad_id(self) -> int:
        return self._core.pad_id

    @property
    def unk_id(self) -> int:
        return self._core.unk_id

    def __repr__(self) -> str:
        return f"tokpack.Tokenizer({self.model_path!r}, vocab_size={self.vocab_size})"


class Dataset:
    """A packed dataset opened for random access: a tokpack dataset directory
    (with manifest.json) or a bare Megatron ``.bin``/``.idx`` prefix.

    The shards are memory-mapped; opening costs O(shards) and reads no
    tokens. ``len(ds)`` is the number of documents. Immutable and safe to
    share between threads.
    """

    def __init__(self, path: StrPath) -> None:
        self._core = _core.Dataset(os.fspath(path))
        self._manifest: Optional[Dict[str, Any]] = None

    def __len__(self) -> int:
        return self._core.num_documents

    def doc(self, i: int) -> np.ndarray:
        """Document ``i``'s tokens as stored (uint16 or int32), a read-only
        numpy view of the mapped shard: no copy, valid for as long as the
        array is alive (it keeps the dataset open). IndexError past the end."""
        return np.asarray(self._core.document(self._index(i)))

    __getitem__ = doc

    def sample(self, i: int, seq_len: int) -> np.ndarray:
        """Sample ``i`` at sequence length ``seq_len`` as the Loader defines it:
        the ``seq_len + 1`` tokens at stream offset ``i * seq_len`` (int64, a
        copy, across document and shard boundaries)."""
        n = self.num_samples(seq_len)
        if not 0 <= i < n:
            raise IndexError(f"sample {i} is outside the {n} samples of length {seq_len}")
        return np.asarray(self._core.read_tokens(i * seq_len, seq_len + 1))

    def num_samples(self, seq_len: int) -> int:
        if seq_len < 1:
            raise ValueError("seq_len must be positive")
        return max(0, (self.num_tokens - 1) // seq_len)

    def tokens(self, begin: int, count: int) -> np.ndarray:
        """Tokens [begin, begin + count) of the whole stream, as int64 (a copy)."""
        return np.asarray(self._core.read_tokens(begin, count))

    def document_extent(self, i: int) -> tuple:
        """(stream offset, length) of document ``i``, in tokens."""
        return self._core.document_extent(self._index(i))

    def _index(self, i: int) -> int:
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"document {i} is outside the {n} documents of {self.path}")
        return i

    @property
    def path(self) -> str:
        return self._core.path

    @property
    def num_tokens(self) -> int:
        return self._core.num_tokens

    @property
    def num_documents(self) -> int:
        return self._core.num_documents

    @property
    def num_shards(self) -> int:
        return self._core.num_shards

    @property
    def dtype(self) -> np.dtype:
        """The stored token dtype: uint16 (vocab <= 65535) or int32."""
        return np.dtype(self._core.dtype)

    @property
    def fingerprint(self) -> str:
        """Identifies the token stream; cursors are tied to it."""
        return self._core.fingerprint

    @property
    def manifest(self) -> Dict[str, Any]:
        """manifest.json as a dict (made in memory for a bare Megatron prefix)."""
        if self._manifest is None:
            self._manifest = json.loads(self._core.manifest_json)
        return self._manifest

    @property
    def tokenizer_info(self) -> Dict[str, Any]:
        """The tokenizer the data was built with: type, vocab size, special ids."""
        return dict(self.manifest.get("tokenizer", {}))

    def tokenizer(self) -> Tokenizer:
        """Loads the dataset's copy of its tokenizer model. FileNotFoundError
        when the dataset has none (e.g. an import without a model)."""
        info = self.tokenizer_info
        name = info.get("file") or ""
        if not name:
            raise FileNotFoundError(f"{self.path} carries no tokenizer model")
        if "://" not in self.path:
            return Tokenizer(Path(self.path) / name)
        # A remote dataset: fetch the model once per machine into a local file
        # named by its checksum (the manifest's), written atomically.
        import tempfile

        local = Path(tempfile.gettempdir()) / f"tokpack-tokenizer-{info.get('xxh3_64', 'x')}.model"
        if not local.exists():
            data = _core.read_remote_file(self.path, name)
            with tempfile.NamedTemporaryFile(dir=local.parent, delete=False) as f:
                f.write(data)
            os.replace(f.name, local)
        return Tokenizer(local)

    def __reduce__(self):
        # Reopened by path in the receiving process (e.g. a spawned worker).
        return (Dataset, (self.path,))

    def __repr__(self) -> str:
        return (
            f"tokpack.Dataset({self.path!r}, documents={self.num_documents}, "
            f"tokens={self.num_tokens}, shards={self.num_shards}, dtype={self.dtype})"
        )


def build(
    inputs: Union[StrPath, Sequence[StrPath]],
    output: StrPath,
    tokenizer: StrPath,
    *,
    text_key: str = "text",
    input_format: str = "auto",
    text_per_line: bool = False,
    bos: bool = False,
    eos: bool = True,
    invalid_utf8: str = "replace",
    skip_bad_lines: bool = False,
    shard_tokens: int = _core.DEFAULT_SHARD_TOKENS,
    chunk_bytes: int = _core.DEFAULT_CHUNK_BYTES,
    threads: int = 0,
    force: bool = False,
    progress: Optional[Callable[[Dict[str, float]], None]] = None,
) -> Dataset:
    """Packs corpora into a dataset at ``output``, exactly as ``tokpack build``
    does (same options, byte-identical output), and opens it.

    ``inputs`` are files, directories, globs or "-" (stdin): JSONL or text,
    plain, .gz or .zst. ``progress`` is called with a dict (bytes_read,
    bytes_total, documents, tokens, elapsed_seconds) about twice a second.
    Ctrl-C cancels the build and leaves nothing at ``output``. Errors name
    the file and line (ValueError for bad input, FileNotFoundError for a
    missing input, RuntimeError "already_exists: ..." for an existing output
    without ``force``).
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    _core.build(
        [os.fspath(p) for p in inputs],
        os.fspath(output),
        os.fspath(tokenizer),
        text_key=text_key,
        input_format=input_format,
        text_per_line=text_per_line,
        add_bos=bos,
        add_eos=eos,
        invalid_utf8=invalid_utf8,
        skip_bad_lines=skip_bad_lines,
        shard_tokens=int(shard_tokens),
        chunk_bytes=int(chunk_bytes),
        threads=int(threads),
        force=force,
        progress=progress,
    )
    return Dataset(output)
