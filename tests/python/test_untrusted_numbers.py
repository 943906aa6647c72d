"""Numbers from outside (an .idx, a saved loader state, a flag, a Python
argument) are checked before use: a clear error naming the thing, never a
crash, a wrapped count or a silently wrong batch (issue 16)."""
import json
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

tokpack = pytest.importorskip("tokpack")

U64_MAX = 2**64 - 1


@pytest.fixture
def copy_of_packed(packed, tmp_path):
    """A private copy of the session's built dataset, to damage."""
    dst = tmp_path / "data"
    shutil.copytree(packed[0], dst)
    return dst


def idx_layout(idx_path):
    """(sequences, offset of lengths, of pointers, of the document index)."""
    with open(idx_path, "rb") as f:
        header = f.read(34)
    (sequences,) = struct.unpack_from("<Q", header, 18)
    return sequences, 34, 34 + 4 * sequences, 34 + 12 * sequences


def patch(path, offset, fmt, value):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, value))


# Opens the dataset, then reads document `mid` and builds a batch with
# document boundaries: exit 0 and "refused: ..." when the open is refused.
CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import tokpack
    path, mid = sys.argv[1], int(sys.argv[2])
    try:
        ds = tokpack.Dataset(path)
    except RuntimeError as e:
        print("refused:", e)
        sys.exit(0)
    print("served", int(np.asarray(ds.doc(mid), dtype=np.int64).sum()), flush=True)
    loader = tokpack.Loader(path, seq_len=64, batch_size=4, document_boundaries=True,
                            as_="numpy")
    print("cu_seqlens", next(loader)["cu_seqlens"].tolist())
    sys.exit(3)
""")


@pytest.mark.parametrize("damage,needle", [
    ("size too large", "sequence {next} has pointer"),
    ("pointer past the end", "sequence {mid} has pointer 1099511627776"),
    ("pointer going backwards", "sequence {mid} has pointer 2"),
    ("doc_idx out of range", "document index entry {mid} is {too_far}"),
])
def test_one_bad_idx_entry_is_refused_at_open_without_a_crash(copy_of_packed, damage, needle):
    # Before: opening checked the header and the last entry only, so
    # Dataset.doc() viewed memory past the mapping (SIGSEGV) and cu_seqlens
    # followed the bad entry. The child process keeps a crash from taking
    # pytest down: it fails the test instead.
    idx = copy_of_packed / "shard-00001.idx"
    sequences, lengths, pointers, doc_index = idx_layout(idx)
    mid = sequences // 2
    if damage == "size too large":
        patch(idx, lengths + 4 * mid, "<i", 1 << 28)
    elif damage == "pointer past the end":
        patch(idx, pointers + 8 * mid, "<q", 1 << 40)
    elif damage == "pointer going backwards":
        patch(idx, pointers + 8 * mid, "<q", 2)
    else:
        patch(idx, doc_index + 8 * mid, "<q", sequences + 5)
    shard0 = json.loads((copy_of_packed / "manifest.json").read_text())["shards"][0]
    proc = subprocess.run([sys.executable, "-c", CHILD, str(copy_of_packed),
                           str(shard0["documents"] + mid)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    out = proc.stdout
    assert out.startswith("refused: data_loss: ") and str(idx) in out, out
    assert needle.format(mid=mid, next=mid + 1, too_far=sequences + 5) in out, out


def test_verify_on_open_finds_a_flipped_token_byte(copy_of_packed, run_tokpack):
    bin_path = copy_of_packed / "shard-00001.bin"
    manifest = json.loads((copy_of_packed / "manifest.json").read_text())
    first = manifest["shards"][0]["tokens"]
    clean = tokpack.Dataset(copy_of_packed).tokens(first + 50, 1)[0]
    with open(bin_path, "r+b") as f:  # Token 50 of shard 1: bytes 100..101.
        f.seek(101)
        byte = f.read(1)[0]
        f.seek(101)
        f.write(bytes([byte ^ 0x01]))
    # Without verification the damaged token is served as it is...
    assert tokpack.Dataset(copy_of_packed).tokens(first + 50, 1)[0] == clean ^ 0x100
    # ...with it, the open fails naming the shard file and the chunk.
    with pytest.raises(RuntimeError, match=r"data_loss: .*shard-00001\.bin: chunk 0 \(bytes 0\.\."):
        tokpack.Dataset(copy_of_packed, verify_on_open=True)
    proc = run_tokpack("show", copy_of_packed, "--verify-on-open", check=False)
    assert proc.returncode != 0 and "shard-00001.bin: chunk 0" in proc.stderr, proc.stderr
    with pytest.raises(ValueError, match="verify_on_open must be a bool"):
        tokpack.Dataset(copy_of_packed, verify_on_open="yes")


def test_verify_on_open_passes_an_intact_dataset(packed):
    ds = tokpack.Dataset(packed[0], verify_on_open=True)
    loader = tokpack.Loader(ds, seq_len=16, batch_size=2, as_="numpy")
    assert next(loader)["input_ids"].shape == (2, 16)


def test_a_pickled_dataset_is_not_verified_again_in_each_worker(copy_of_packed):
    # The parent verified the files when it opened them; a worker that got
    # the dataset by pickle reopens it without reading every chunk again.
    import pickle
    ds = tokpack.Dataset(copy_of_packed, verify_on_open=True)
    with open(copy_of_packed / "shard-00001.bin", "r+b") as f:
        f.seek(101)
        byte = f.read(1)[0]
        f.seek(101)
        f.write(bytes([byte ^ 0x01]))
    again = pickle.loads(pickle.dumps(ds))
    assert len(again) == len(ds)


@pytest.mark.parametrize("option", ["max_steps", "epochs"])
def test_step_limits_that_pass_the_position_range_are_refused_naming_the_option(packed, option):
    # Before: 2^62 steps of 8 wrapped past 2^64 and len() said "endless".
    with pytest.raises(ValueError, match=f"{option} 4611686018427387904 .*times"):
        tokpack.Loader(packed[0], seq_len=16, batch_size=8, as_="numpy", **{option: 2**62})
    loader = tokpack.Loader(packed[0], seq_len=16, batch_size=1, max_steps=2**62, as_="numpy")
    assert len(loader) == 2**62


def test_loader_states_with_unreachable_numbers_are_refused_naming_the_field(packed, packed_small):
    loader = tokpack.Loader({packed[0]: 3.0, packed_small[0]: 1.0}, seq_len=16, batch_size=4,
                            as_="numpy")
    for _ in range(25):
        next(loader)
    state = loader.state_dict()
    position = state["position"]

    def refused(change, needle):
        bad = json.loads(json.dumps(state))
        change(bad)
        with pytest.raises(ValueError, match=needle):
            loader.load_state_dict(bad)

    def wrap(s):  # Counts that add up to the position only modulo 2^64.
        s["sources"][0]["consumed"] = U64_MAX
        s["sources"][1]["consumed"] = position + 1

    def skew(s):  # Counts that add up but ignore the weights.
        s["sources"][0]["consumed"] = 0
        s["sources"][1]["consumed"] = position

    def top(s):  # A position where the next step wraps.
        s["position"] = U64_MAX
        s["sources"][0]["consumed"] = U64_MAX - position
        s["sources"][1]["consumed"] = position

    refused(wrap, r"sources\[0\]\.consumed 18446744073709551615")
    refused(skew, rf"sources\[0\]\.consumed is 0 at position {position}")
    refused(top, "position 18446744073709551615 is past")
    loader.load_state_dict(state)  # The real one still loads.


def test_show_a_document_past_the_end_fails_naming_index_and_count(packed, run_tokpack):
    count = tokpack.Dataset(packed[0]).num_documents
    for doc in (str(U64_MAX), str(count)):
        proc = run_tokpack("show", packed[0], "--doc", doc, check=False)
        assert proc.returncode != 0 and proc.stdout == "", proc
        assert f"document {doc} is past the last of {count} documents" in proc.stderr
    for doc, needle in [("-1", "at least 0"), (str(2**64), f"between 0 and {U64_MAX}")]:
        proc = run_tokpack("show", packed[0], "--doc", doc, check=False)  # Not read as 2^64 - 1.
        assert proc.returncode != 0 and f"--doc: must be {needle}, not '{doc}'" in proc.stderr


def test_out_of_range_integer_arguments_name_the_argument(packed, spm_model):
    ds = tokpack.Dataset(packed[0])
    cases = [
        (lambda: ds.tokens(-1, 5), f"begin must be an integer from 0 to {U64_MAX}, not -1"),
        (lambda: ds.tokens(0, 2**64), "count must be an integer from 0 to"),
        (lambda: ds._core.document(2**64), "document index must be an integer"),
        (lambda: ds._core.document_extent(-1), "document index must be an integer"),
        (lambda: tokpack.Loader(packed[0], 2**64, 2), "seq_len must be an integer"),
        (lambda: tokpack.Loader(packed[0], -1, 2),
         "seq_len must be between 1 and 2147483647, not -1"),
        (lambda: tokpack.Loader(packed[0], 16, -1), "batch_size must be between 1 and"),
        (lambda: tokpack.Loader(packed[0], 16, 2, -1), "seed must not be negative"),
        (lambda: tokpack.Loader(packed[0], 16, 2, 2**64), "seed must be an integer from 0 to"),
        (lambda: tokpack.Loader(packed[0], 16, 2, prefetch=2**63), "prefetch is too large"),
        (lambda: setattr(tokpack.StorageOptions(), "cache_bytes", -1), "cache_bytes must be"),
        (lambda: setattr(tokpack.StorageOptions(), "http_attempts", 2**40),
         "http_attempts must be"),
        (lambda: tokpack.Tokenizer(spm_model, special={"<x>": 2**64}), r"special\['<x>'\] must be"),
        (lambda: tokpack.Tokenizer(spm_model).decode([5, 2**40]), r"ids\[1\] must be"),
    ]
    for call, needle in cases:
        with pytest.raises(ValueError, match=needle):
            call()
    with pytest.raises(TypeError, match="begin must be an integer, not float"):
        ds._core.read_tokens(1.5, 2)
    with pytest.raises(IndexError, match="document 18446744073709551616 is outside"):
        ds.doc(2**64)


@pytest.mark.parametrize("args,needle", [
    (["import", "x", "-o", "y", "--chunk-bytes", "0"],
     "--chunk-bytes: must be at least 1, not '0'"),
    (["push", "x", "s3://b/p", "--part-bytes", "1"],
     "--part-bytes: must be between 5242880 and 5368709120, not '1'"),
    (["profile", "x", "--steps", "0"], "--steps: must be between 1 and 2147483647, not '0'"),
])
def test_cli_ranges_are_printed_as_integers(run_tokpack, args, needle):
    # Before: "Value 0 not in range 0.000000 to 1797693134862315708145...".
    proc = run_tokpack(*args, check=False)
    assert proc.returncode != 0 and needle in proc.stderr, proc.stderr
    assert "0.000000" not in proc.stderr


def test_build_option_ranges_are_printed_as_integers(run_tokpack, tmp_path, spm_model):
    src = tmp_path / "c.jsonl"
    src.write_text('{"text": "hello"}\n')
    proc = run_tokpack("build", "-i", src, "-o", tmp_path / "out", "-t", spm_model,
                       "--shard-tokens", "0", check=False)
    assert proc.returncode != 0
    assert "shard_tokens must be at least 1, not 0" in proc.stderr, proc.stderr


def test_a_cache_size_that_is_not_a_number_is_refused(packed, tokpack_bin, monkeypatch):
    # Already refused on main since b038883; this keeps it so.
    monkeypatch.setenv("TOKPACK_CACHE_BYTES", "abc")
    with pytest.raises(ValueError, match="TOKPACK_CACHE_BYTES='abc' is not a positive integer"):
        tokpack.StorageOptions.from_environment()
    proc = subprocess.run([tokpack_bin, "info", packed[0]], capture_output=True, text=True)
    assert proc.returncode != 0 and "TOKPACK_CACHE_BYTES='abc'" in proc.stderr, proc.stderr
