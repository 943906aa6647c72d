"""The options of tokpack.Loader, tokpack.build and tokpack.Dataset, as
keyword-argument types.

Generated from the C++ option tables (LoaderOptions in include/tokpack/loader.h,
BuildOptions in include/tokpack/builder.h, DatasetOptions in include/tokpack/dataset.h)
by scripts/gen_options.py; do not edit. The core validates every value.
"""
from typing import Literal, TypedDict, Union


class LoaderOptions(TypedDict, total=False):
    seq_len: int
    """Tokens per sample (the model's context length). Default: 2048."""
    batch_size: int
    """Samples per rank per step. Default: 8."""
    seed: int
    """Shuffle seed. Default: 0."""
    rank: Union[int, None]
    """This rank (data-parallel index). Default: 0."""
    world_size: Union[int, None]
    """Number of data-parallel ranks. Default: 1."""
    shuffle: Union[Literal['auto', 'full', 'window', 'block', 'none'], bool]
    """Sample order: auto (window for remote data larger than its cache, else full), full (a fresh permutation each epoch), window (each fetch chunk read once per epoch), block or none. Default: auto."""
    block_size: int
    """shuffle=block: samples per block. Default: 64."""
    block_window: int
    """shuffle=block: blocks shuffled together. Default: 16."""
    window_chunks: int
    """shuffle=window: fetch chunks per window (0: 24 GiB of chunks with a remote source, 64 chunks for local data). Default: 0."""
    dtype: Union[Literal['int64', 'int32'], object]
    """Integer type of input_ids and labels. Default: int64."""
    labels: Literal['next', 'same']
    """labels: next (the token after each input, for a loss computed directly) or same (equal to input_ids, for models that shift internally such as Hugging Face causal LMs). Default: next."""
    document_boundaries: bool
    """Also return position_ids and cu_seqlens (document boundaries). Default: false."""
    loss_mask: bool
    """Also return loss_mask: 1 where a label carries loss, 0 where it is -100 (labels are -100 where a dataset's loss mask says so either way). Default: false."""
    packing: Literal['concat', 'best_fit']
    """What a sample is: concat (a window of the token stream) or best_fit (whole documents packed by best-fit decreasing, padded, labels -100 across documents). Default: concat."""
    max_docs_per_sequence: int
    """packing=best_fit: at most this many documents per sample (0: no cap). Default: 0."""
    allow_mixed_tokenizers: bool
    """Serve a mixture of datasets with different tokenizers or BOS/EOS settings (only for one vocabulary exported twice; refused otherwise). Default: false."""
    epochs: int
    """Stop after this many passes over the data (0: endless). Default: 0."""
    max_steps: int
    """Stop after this many steps from the start (0: no limit). Default: 0."""
    threads: int
    """Assembler threads. Default: 2."""
    prefetch: int
    """Host ring depth: batches assembled ahead. Default: 4."""
    lookahead_steps: int
    """Remote datasets: steps ahead whose chunks are fetched in the background. Default: 16."""
    device: Union[str, object]
    """Where batches are delivered: cpu, cuda (device 0) or cuda:N. Default: cpu."""
    device_prefetch: int
    """With a CUDA device: device ring depth. Default: 3."""


class BuildOptions(TypedDict, total=False):
    text_key: str
    """JSONL field or Parquet/Arrow column holding the text; nested: /meta/text or meta.text. Default: text."""
    input_format: Literal['auto', 'jsonl', 'text', 'parquet']
    """auto (by file name), jsonl, text or parquet (applies to every input file). Default: auto."""
    text_per_line: bool
    """Plain text: one document per line instead of one per file. Default: false."""
    bos: bool
    """Prepend the tokenizer's BOS id to every document. Default: false."""
    eos: bool
    """Append the tokenizer's EOS id to every document. Default: true."""
    invalid_utf8: Literal['replace', 'skip', 'error']
    """replace (with U+FFFD, as Python's errors='replace'), skip the document, or error. Default: replace."""
    skip_bad_lines: bool
    """Skip and count bad records (malformed JSON, missing, null or non-string text) instead of failing. Default: false."""
    loss_masks: bool
    """Write a loss mask beside every shard (SFT): a record's tokens carry loss inside its loss_spans (or outside its no_loss_spans), every token of a record without them does; without this, a record with spans is an error. Default: false."""
    loss_spans_key: str
    """JSONL field (or /pointer) of a record's [start, end) character ranges whose tokens carry loss. Default: loss_spans."""
    no_loss_spans_key: str
    """JSONL field (or /pointer) of a record's [start, end) character ranges whose tokens carry no loss (all others do). Default: no_loss_spans."""
    doc_sources: bool
    """Record where each document came from (input, line or row, id) beside every shard, for `tokpack show --source`, `tokpack find` and Dataset.source(). Default: true."""
    id_key: str
    """JSONL field (or /pointer), Python dict key or Parquet column of a record's id (a string or an integer), recorded with document sources; records without it have none. Default: id."""
    skip_unknown_files: bool
    """Leave out (and list) files whose format the name does not tell, instead of failing. Default: false."""
    shard_tokens: int
    """Token budget per shard. Default: 536870912."""
    chunk_bytes: int
    """Checksum chunk size in bytes. Default: 4194304."""
    max_document_bytes: int
    """Refuse, as a bad record, any JSONL line, text line or file, Parquet value or text longer than this many bytes (at most 1 GiB); it bounds the build's memory. Default: 268435456."""
    threads: int
    """Tokenizer threads (0: one per hardware thread). Default: 0."""
    force: bool
    """Replace an existing dataset at the output. Default: false."""


class DatasetOptions(TypedDict, total=False):
    verify_on_open: bool
    """Check every chunk of the local .bin/.idx files against the manifest's checksums at open (reads the whole dataset; remote chunks are checked when fetched). Default: false."""
    split: str
    """Open one part of a held-out split: weights such as "949,50,1" (split_index picks the part; empty: the whole dataset). Default: ""."""
    split_index: int
    """The part of split to open, 0-based. Default: 0."""
