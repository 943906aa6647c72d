"""tokpack.Dataset (random access to a packed dataset), tokpack.Tokenizer and
tokpack.build (the packer)."""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, NamedTuple, Optional,
                    Protocol, Sequence, Tuple, Union)

import numpy as np

from . import _core
from ._options import BuildOptions, DatasetOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack

StrPath = Union[str, "os.PathLike[str]"]


class ArrowStreamExportable(Protocol):
    """Anything with the Arrow PyCapsule stream interface: pyarrow tables and
    record batch readers, polars data frames, duckdb results, ..."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...


#: What ``build`` packs: paths (one, or a list or tuple of them), an Arrow
#: stream, or any other iterable of texts.
BuildInputs = Union[StrPath, Sequence[StrPath], ArrowStreamExportable,
                    Iterable[Union[str, bytes, bytearray]]]


def _specials(special: Optional[Dict[str, int]]) -> List[Tuple[str, int]]:
    return [(str(text), int(i)) for text, i in (special or {}).items()]


class Tokenizer:
    """A tokenizer file, as the packer uses it. Thread-safe.

    The kind is told from the file's content (docs/tokenizers.md lists the
    kinds): a sentencepiece ``.model``, a Hugging Face ``tokenizer.json``
    (BPE), or a tiktoken ranks file, which needs ``pattern`` (a regex, or a
    preset: ``"cl100k_base"``, ``"o200k_base"``, ``"llama3"``, ..., which
    also brings its special tokens) and may take ``special`` tokens
    ``{text: id}``. ``eos_token``/``bos_token``
    name the tokens used as EOS/BOS when the file's own are not wanted.
    """

    def __init__(self, path: StrPath, *, pattern: Optional[str] = None,
                 special: Optional[Dict[str, int]] = None, eos_token: Optional[str] = None,
                 bos_token: Optional[str] = None) -> None:
        self._core = _core.Tokenizer(os.fspath(path), pattern or "", _specials(special),
                                     eos_token or "", bos_token or "")
        self.path = os.fspath(path)

    @classmethod
    def _of_dataset(cls, dataset: "Dataset") -> "Tokenizer":
        # The dataset's copy, read and checked against the recorded hash in
        # the core before it is parsed; nothing is cached on disk.
        t = cls.__new__(cls)
        t._core = _core.Tokenizer.from_dataset(dataset._core, dataset._storage)
        t.path = dataset.path.rstrip("/") + "/" + dataset.tokenizer_info["file"]
        return t

    @property
    def model_path(self) -> str:
        """The file's path (the name predates tokenizers other than sentencepiece)."""
        return self.path

    @property
    def kind(self) -> str:
        """The kind's name as the manifest records it: "sentencepiece",
        "huggingface", "tiktoken", ..."""
        return self._core.kind

    def encode(self, text: str) -> List[int]:
        """Token ids exactly as the reference implementation of the file's kind
        gives them, without BOS/EOS: sentencepiece's Encode, tokenizers'
        ``encode(text, add_special_tokens=False).ids``, tiktoken's
        ``encode_ordinary``."""
        return self._core.encode(text)

    def decode_bytes(self, ids: Any) -> bytes:
        """The bytes of ``ids`` (special tokens as their text)."""
        return self._core.decode_bytes([int(i) for i in np.asarray(ids).ravel()])

    def decode(self, ids: Any) -> str:
        """The text of ``ids``; bytes that are not valid UTF-8 (a character
        split across tokens) become U+FFFD, as tokenizers' decode does."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

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
        return f"tokpack.Tokenizer({self.path!r}, kind={self.kind!r}, vocab_size={self.vocab_size})"


class DocumentSource(NamedTuple):
    """Where a build read a document (docs/format.md 3.2): ``input`` is its
    index in the manifest's inputs (or ``inputs.jsonl``, past 1000 of them)
    and ``path`` that input's path; ``record`` its 1-based line
    (JSONL, text), row (Parquet) or item (a Python iterable), 0 for a whole
    text file; ``id`` the record's id (``id_key``), or None."""
    input: int
    path: str
    record: int
    id: Optional[str]


class Dataset:
    """A packed dataset opened for random access: a tokpack dataset directory
    (with manifest.json) or a bare Megatron ``.bin``/``.idx`` prefix.

    The shards are memory-mapped; opening reads the indexes but no tokens.
    ``len(ds)`` is the number of documents. Immutable and safe to share
    between threads.

    A remote dataset (``s3://``, ``gs://``, ``http(s)://``) is reached with
    ``storage`` (a ``tokpack.StorageOptions``), by default the settings of
    the environment variables in docs/remote.md, read when it is opened.

    Opening checks every ``.idx`` entry (a damaged index is a RuntimeError
    "data_loss: ..." naming the file and entry), but not the tokens:
    ``verify_on_open=True`` also compares every chunk of the local files
    with the manifest's checksums, at the cost of reading them all (remote
    chunks are checked whenever they are fetched). The options are listed
    in ``tokpack._options.DatasetOptions``.

    ``split="949,50,1", split_index=1`` opens one part of a held-out split:
    the runs of documents dealt to it from across the whole dataset, the same
    in every process (docs/reader.md, "Held-out splits"). Everything then answers for
    the part (``len``, ``doc``, ``tokens``, ``num_tokens``, ``fingerprint``),
    and a Loader takes it like any dataset.
    """

    def __init__(self, path: StrPath, *, storage: Optional[_core.StorageOptions] = None,
                 **options: "Unpack[DatasetOptions]") -> None:
        self._storage = storage
        self._options = options
        self._core = _core.Dataset(os.fspath(path), storage, **options)
        self._manifest: Optional[Dict[str, Any]] = None

    @classmethod
    def _open_all(cls, paths: Sequence[StrPath], *,
                  storage: Optional[_core.StorageOptions] = None,
                  **options: Any) -> List["Dataset"]:
        """Dataset(path, storage=storage, **options) of each path, opened side
        by side (many remote sources open in the time of a few)."""
        cores = _core.open_datasets([os.fspath(p) for p in paths], storage, **options)
        out = []
        for core in cores:
            d = cls.__new__(cls)
            d._storage, d._options, d._core, d._manifest = storage, options, core, None
            out.append(d)
        return out

    def __len__(self) -> int:
        return self._core.num_documents

    def doc(self, i: int) -> np.ndarray:
        """Document ``i``'s tokens as stored (uint16 or int32), a read-only
        numpy view of the mapped shard: no copy, valid for as long as the
        array is alive (it keeps the dataset open). A document on the
        removal list (:meth:`is_removed`) is an int32 copy of ``pad_token``
        instead; a remote one an int32 copy. IndexError past the end."""
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

    def loss_mask(self, begin: int, count: int) -> np.ndarray:
        """The loss bits of tokens [begin, begin + count) of the stream, as
        uint8 (a copy): 1 where the token carries loss, 0 where a label
        naming it is -100: 0 on the loss mask's masked tokens (docs/format.md
        3.1) and on documents of the removal list (docs/format.md 17), else
        1."""
        return np.asarray(self._core.read_loss_mask(begin, count))

    @property
    def has_loss_masks(self) -> bool:
        """Whether the dataset has loss masks (built from records with loss
        spans): then the Loader's labels are -100 where a token carries no loss."""
        return self._core.has_loss_masks

    @property
    def num_removed(self) -> int:
        """Documents on the dataset's removal list (removed.json, written by
        ``tokpack.remove_documents``) when it was opened; of a split, those in
        its part. They read as ``pad_token`` and carry no loss."""
        return self._core.num_removed

    def is_removed(self, i: int) -> bool:
        """Whether document ``i`` is removed: ``doc(i)`` is then an int32 copy
        of ``pad_token``s (no view of the stored tokens), and the Loader's
        labels naming its tokens are -100."""
        return self._core.is_removed(self._index(i))

    @property
    def pad_token(self) -> int:
        """What a removed document's tokens read as, and what pads a packed
        row: the tokenizer's pad id, else its eos id, else 0."""
        return self._core.pad_token

    @property
    def has_sources(self) -> bool:
        """Whether the dataset records where each document came from
        (built with ``doc_sources``, the default)."""
        return self._core.has_sources

    def source(self, i: int) -> DocumentSource:
        """Where document ``i`` came from: its input, line (or row, or item)
        and id. RuntimeError "failed_precondition: ..." when the dataset has
        no sources."""
        return DocumentSource(*self._core.source(self._index(i)))

    def find(self, id: Optional[str] = None, *, input: Union[int, StrPath, None] = None,
             line: Optional[int] = None) -> List[int]:
        """The documents whose id is ``id``, or the document made from line
        (row, item) ``line`` of ``input`` (an index into the manifest's
        inputs, or a path as listed there): a list of document indices,
        empty when there is none (the record was skipped, blank or empty)."""
        if (id is None) == (input is None) or (input is None) != (line is None):
            raise TypeError("give id=..., or input=... and line=...")
        if id is not None:
            return list(self._core.find_by_id(str(id)))
        if isinstance(input, int):
            which = [input]
        else:
            path = os.fspath(input)
            which = [k for k, x in enumerate(self._core.input_paths()) if x == path]
            if not which:
                raise ValueError(f"{path!r} is not an input of {self.path}")
        found = (self._core.find_by_record(k, line) for k in which)
        return [d for d in found if d is not None]

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
        """Loads the dataset's copy of its tokenizer model, checked against the
        hash its manifest records. FileNotFoundError when the dataset has none
        (e.g. an import without a model)."""
        if not self.tokenizer_info.get("file"):
            raise FileNotFoundError(f"{self.path} carries no tokenizer model")
        return Tokenizer._of_dataset(self)

    def __reduce__(self):
        # Reopened by path in the receiving process (e.g. a spawned worker),
        # with the same storage settings and options, except verify_on_open:
        # this process checked these files when it opened them, and checking
        # again in each worker would read the whole dataset once per worker.
        options = {k: v for k, v in self._options.items() if k != "verify_on_open"}
        return (_reopen, (self.path, _storage_fields(self._storage), options))

    def __repr__(self) -> str:
        split = ""
        if self._options.get("split"):
            index = self._options.get("split_index", 0)
            split = f"split={self._options['split']!r}, split_index={index}, "
        return (
            f"tokpack.Dataset({self.path!r}, {split}documents={self.num_documents}, "
            f"tokens={self.num_tokens}, shards={self.num_shards}, dtype={self.dtype})"
        )


def remove_documents(path: StrPath, ids: Iterable[str] = (), documents: Iterable[int] = (), *,
                     restore: bool = False,
                     storage: Optional[_core.StorageOptions] = None) -> int:
    """Puts documents on the removal list of the dataset at ``path`` (a
    directory, or an ``s3://``/``gs://`` URL), or with ``restore=True`` takes
    them off; returns how many are on it afterwards. ``ids`` are record ids
    (every document with one of them; docs/format.md 3.2), ``documents``
    indices of the whole dataset. Readers opened afterwards serve a removed
    document's tokens as ``pad_token`` with no loss, in the same order, so a
    run resumed from its cursor continues exactly with them blanked
    (docs/reader.md, "Removing documents"). Nothing is written on an error:
    FileNotFoundError for an id no document has, ValueError for an index past
    the end, RuntimeError "failed_precondition: ..." for ids of a dataset
    without document sources, or a list made for another version of the
    dataset. ``storage`` as for ``Dataset``."""
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids is a list of ids, not one id: pass ids=[...]")
    return _core.remove_documents(os.fspath(path), [str(i) for i in ids], list(documents),
                                  bool(restore), storage)


def _storage_fields(storage: Optional[_core.StorageOptions]) -> Optional[Dict[str, Any]]:
    """The fields of a StorageOptions (which does not pickle itself), credentials
    included: a pickled Dataset goes to the worker processes of its owner."""
    if storage is None:
        return None
    return {k: getattr(storage, k) for k in dir(storage)
            if not k.startswith("_") and not callable(getattr(storage, k))}


def _reopen(path: str, storage_fields: Optional[Dict[str, Any]],
            options: Dict[str, Any]) -> Dataset:
    """Dataset.__reduce__'s other half."""
    storage = None
    if storage_fields is not None:
        storage = _core.StorageOptions()
        for k, v in storage_fields.items():
            setattr(storage, k, v)
    return Dataset(path, storage=storage, **options)


def _is_existing_input(name: str) -> bool:
    """An input the packer would read: "-", an object-store or HTTP URL, an
    existing file or directory, or a glob with matches."""
    kind = _core.input_name_kind(name)  # The packer's rules, not a copy.
    if kind in ("stdin", "url"):
        return True
    if len(name) > 4096 or "\n" in name or "\0" in name:
        return False  # No path is like this; most texts are: skip the syscalls.
    if os.path.exists(name):
        return True
    # A glob; a text with a "?" and spaces but no "/" is not worth a directory scan.
    if kind == "glob" and ("/" in name or not any(c.isspace() for c in name)):
        return next(glob.iglob(name, recursive=True), None) is not None
    return False


def _looks_like_path(name: str) -> bool:
    """Named like an input: no whitespace, and a path separator, a URL scheme or
    an input file's suffix. Such an item is a path that must exist, never a
    text: a mistyped path would otherwise become a one-document dataset."""
    if any(c.isspace() for c in name):
        return False
    return (os.sep in name or "/" in name or "://" in name
            or _core.looks_like_input(name))


def _list_is_paths(items: Sequence[Any]) -> bool:
    """Whether a list or tuple holds paths (True) or texts (False); raises
    FileNotFoundError when it cannot tell (see ``build``)."""
    first_missing: Any = None
    missing = any_existing = any_path_name = False
    for item in items:
        name: Optional[str] = None
        if isinstance(item, os.PathLike):
            name = os.fsdecode(os.fspath(item))
            any_path_name = True  # A Path is never a text.
        elif isinstance(item, str):
            name = item
            any_path_name = any_path_name or _looks_like_path(item)
        if name is not None and _is_existing_input(name):
            any_existing = True
        elif not missing:
            missing, first_missing = True, item
    if not missing:
        return True  # Also an empty list: the core then says there are no inputs.
    if not any_existing and not any_path_name:
        return False
    raise FileNotFoundError(
        f"{first_missing!r} is not an existing input (a file, directory, glob with matches, "
        "s3://, gs:// or http(s):// URL, or '-'); to pack strings as texts, pass "
        "iter(the_list)")


def build(
    inputs: BuildInputs,
    output: StrPath,
    tokenizer: StrPath,
    *,
    pattern: Optional[str] = None,
    special: Optional[Dict[str, int]] = None,
    eos_token: Optional[str] = None,
    bos_token: Optional[str] = None,
    progress: Optional[Callable[[Dict[str, float]], None]] = None,
    chat_template: Any = None,
    loss: str = "assistant",
    reasoning_loss: bool = True,
    **options: "Unpack[BuildOptions]",
) -> Dataset:
    """Packs corpora into a dataset at ``output``, exactly as ``tokpack build``
    does (same options, byte-identical output), and opens it. ``output`` is a
    directory, or an ``s3://``/``gs://`` URL: the dataset is then built in
    ``$TMPDIR`` and pushed, manifest last.

    ``inputs`` is one of:

    - a path (str or PathLike), or a list or tuple of them: files,
      directories, globs, ``s3://``/``gs://``/``http(s)://`` URLs or "-"
      (stdin), as ``tokpack build --input`` takes them;
    - an object with ``__arrow_c_stream__`` (a pyarrow Table or
      RecordBatchReader, a polars DataFrame, a duckdb result, ...): the texts
      are its column ``text_key`` (a nested field as "meta.text" or
      "/meta/text"), read one record batch at a time without the GIL;
      string, large_string, string_view and binary columns are read, a null
      is a bad record, and so is every row of a column of another type;
    - any other iterable of texts (a generator, a ``map``, a Hugging Face
      ``datasets`` column, ``iter(a_list)``): ``str`` items are encoded as
      UTF-8, ``bytes``/``bytearray`` are taken as they are, a ``dict`` is a
      record read exactly as its JSONL line (``json.dumps(item)``) would be:
      its ``text_key`` field and, with ``loss_masks=True``, its
      ``loss_spans`` or ``no_loss_spans`` ([start, end) character ranges,
      docs/format.md 9.3); None or other
      items are bad records, and so is a str with a lone surrogate
      ("\\ud800"), which has no UTF-8 form (as in a JSONL line). An
      exception the iterable raises stops the build and reaches the caller
      unchanged.

    Each text is one document, exactly as a JSONL line holding it would be
    (same UTF-8 policy, BOS/EOS): the same texts from a file give a
    byte-identical dataset. Bad records name the source and the 1-based
    record number ("<arrow stream>:7: text is null", "<python
    iterable>:3: item is int, not str") and fail the build unless
    ``skip_bad_lines``, which counts them.

    A list or tuple of str is paths or texts: paths when every item is an
    existing input (an existing file or directory, a glob with matches, a
    URL, or "-"); texts when no item is one and none looks like an input
    file's name (no whitespace and a name ending in an input format's
    suffix, in any case: .jsonl, .json, .ndjson, .txt, .text, .parquet, .pq,
    ..., optionally followed by .gz, .zst or .zstd); otherwise
    FileNotFoundError names the first item that is not an existing input. To pack strings as texts whatever they look like, pass
    ``iter(the_list)``: an iterator (like a generator) is never paths.

    The other keyword arguments are the packer's settings, declared once
    in the C++ core and listed with their types, defaults and docs in
    ``tokpack._options.BuildOptions`` (the flags of ``tokpack build``):
    ``text_key`` names the text field of JSONL, Parquet and Arrow inputs;
    ``input_format`` and ``text_per_line`` apply to files only; ``bos`` and
    ``eos`` add the tokenizer's BOS/EOS ids; ``invalid_utf8``,
    ``skip_bad_lines``, ``shard_tokens``, ``chunk_bytes``, ``threads`` and
    ``force`` are as the flags say.
    ``tokenizer`` is any file ``Tokenizer`` reads;
    ``pattern``, ``special``, ``eos_token`` and ``bos_token`` are as there
    (``--pattern``, ``--special``, ``--eos``, ``--bos-token`` of the CLI). ``progress`` is called with a dict (bytes_read,
    bytes_total, documents, tokens, elapsed_seconds) about twice a second.
    With ``chat_template`` (a ``tokenizer_config.json``, a model directory,
    a template file or a ``ChatTemplate``), ``inputs`` is an iterable of
    conversations (lists of messages, or dicts holding them under
    "messages"): each is rendered as ``transformers`` renders it and its
    loss spans chosen by ``loss`` ("assistant", "last_assistant" or "all")
    and ``reasoning_loss`` (``tokpack.chat_records``), and the dataset gets
    loss masks (``loss_masks=True``).
    Ctrl-C cancels the build and leaves nothing at ``output``. Errors name
    the file and line (ValueError for bad input, FileNotFoundError for a
    missing input, RuntimeError "already_exists: ..." for an existing output
    without ``force``).
    """
    paths: List[str] = []
    texts: Optional[Iterable[Any]] = None
    arrow_stream: Optional[ArrowStreamExportable] = None
    if chat_template is not None:
        if isinstance(inputs, (str, os.PathLike)) or hasattr(inputs, "__arrow_c_stream__"):
            raise TypeError("with chat_template, inputs is an iterable of conversations; render "
                            "files with `python -m tokpack.chat` and build the JSONL it writes")
        if options.get("loss_masks") is False:
            raise ValueError("chat_template builds loss masks; loss_masks=False contradicts it")
        from ._chat import chat_records
        options["loss_masks"] = True
        inputs = chat_records(inputs, chat_template, loss=loss, reasoning_loss=reasoning_loss)
    if isinstance(inputs, (str, os.PathLike)):
        paths = [os.fspath(inputs)]
    elif hasattr(inputs, "__arrow_c_stream__"):
        if options.get("loss_masks"):
            # Its rows reach the packer as bare texts: spans would be lost.
            raise ValueError("loss_masks=True reads loss spans from JSONL records and dicts, not "
                             "yet from Arrow streams: pass an iterable of dicts (e.g. "
                             "table.to_pylist()) instead")
        arrow_stream = inputs
    elif isinstance(inputs, (list, tuple)) and _list_is_paths(inputs):
        paths = [os.fspath(p) for p in inputs]
    else:
        texts = inputs
    _core.build(
        paths,
        os.fspath(output),
        os.fspath(tokenizer),
        pattern=pattern or "",
        special=_specials(special),
        eos_token=eos_token or "",
        bos_token=bos_token or "",
        progress=progress,
        texts=texts,
        arrow_stream=arrow_stream,
        **options,
    )
    return Dataset(output)
