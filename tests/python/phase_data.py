"""Datasets whose tokens say where they come from, and the phase rule of
docs/reader.md written out in Python, for the phase tests of the Python API
and the CLI.

Source k's token stream is k * BASE + 0, 1, 2, ... (a bare Megatron int32
prefix), so a row's first token names its source and its sample:
source = token // BASE, sample = (token % BASE) // seq_len. Unshuffled
(shuffle="none"), a source's n-th draw overall is its sample n mod its
samples per epoch, so a whole run can be computed here and compared."""
import math
import struct
from pathlib import Path

import numpy as np

BASE = 10_000_000
IDX_MAGIC = b"MMIDIDX\x00\x00"


def write_source(prefix, k, num_tokens, doc_tokens=97):
    """A Megatron .bin/.idx pair (int32) holding k * BASE + range(num_tokens)."""
    tokens = k * BASE + np.arange(num_tokens, dtype=np.int64)
    docs = [tokens[i:i + doc_tokens] for i in range(0, num_tokens, doc_tokens)]
    lengths = [len(d) for d in docs]
    pointers = np.concatenate([[0], np.cumsum(np.array(lengths, np.int64) * 4)])[:-1]
    idx = (IDX_MAGIC + struct.pack("<QBQQ", 1, 4, len(docs), len(docs) + 1)
           + np.array(lengths, "<i4").tobytes() + np.array(pointers, "<i8").tobytes()
           + np.arange(len(docs) + 1, dtype="<i8").tobytes())
    Path(str(prefix) + ".idx").write_bytes(idx)
    Path(str(prefix) + ".bin").write_bytes(tokens.astype("<i4").tobytes())
    return str(prefix)


def make_sources(directory, sizes):
    """{name: prefix} for sizes {name: tokens}; source k is the k-th name."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return {name: write_source(directory / name, k, n) for k, (name, n) in enumerate(sizes.items())}


def decode(row_first_token, seq_len):
    """(source index, sample index) of a row from its first token."""
    t = int(row_first_token)
    return t // BASE, (t % BASE) // seq_len


def phase_sources(weights, length):
    """The sources of the first `length` positions of a phase: position q
    goes, among the sources behind their share (w_s * (q + 1) > c_s, weights
    normalized, c_s its draws in the phase so far), to the one whose next
    draw is due first ((c_s + 1) / w_s), ties to the lowest index, weight-0
    sources never."""
    total = sum(weights)
    w = [x / total for x in weights]
    counts = [0] * len(w)
    out = []
    for q in range(length):
        best, due = -1, math.inf
        for s, ws in enumerate(w):
            if ws > 0 and ws * (q + 1) > counts[s] and (counts[s] + 1) / ws < due:
                best, due = s, (counts[s] + 1) / ws
        counts[best] += 1
        out.append(best)
    return out


def expected_rows(phases, starts, positions, samples_per_source):
    """(source, sample) of positions [0, positions), unshuffled: `phases`
    are weight lists (one per source), `starts` their start positions."""
    rows = []
    drawn = [0] * len(samples_per_source)
    for j, weights in enumerate(phases):
        end = starts[j + 1] if j + 1 < len(starts) else positions
        end = min(end, positions)
        for s in phase_sources(weights, max(0, end - starts[j])):
            rows.append((s, drawn[s] % samples_per_source[s]))
            drawn[s] += 1
    return rows


def source_namer(paths, seq_len):
    """source_of(rows) for a loader over {name: dataset path} with this
    seq_len: the one source all the rows (input_ids) are windows of."""
    import tokpack

    windows = {}
    for name, path in paths.items():
        ds = tokpack.Dataset(path)
        tokens = ds.tokens(0, ds.num_tokens).tolist()
        windows[name] = {tuple(tokens[i:i + seq_len])
                         for i in range(0, ds.num_samples(seq_len) * seq_len, seq_len)}

    def source_of(rows):
        rows = rows.tolist() if hasattr(rows, "tolist") else rows
        names = {name for row in rows for name, w in windows.items() if tuple(row) in w}
        assert len(names) == 1, f"rows from {sorted(names) or 'no source'}"
        return names.pop()

    return source_of
