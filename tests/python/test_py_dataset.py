"""tokpack.Dataset, tokpack.Tokenizer and tokpack.build from Python."""
import filecmp
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from child import Child, wait_until

tokpack = pytest.importorskip("tokpack")


def test_documents_are_the_tokenizers_ids_plus_eos(packed, spm_model):
    path, texts = packed
    ds = tokpack.Dataset(path)
    tok = tokpack.Tokenizer(spm_model)
    nonempty = [t for t in texts if tok.encode(t)]
    assert len(ds) == ds.num_documents == len(nonempty)
    assert ds.num_shards > 1 and ds.dtype == np.uint16
    for i in [0, 1, 17, len(ds) // 2, len(ds) - 1, -1]:
        want = tok.encode(nonempty[i]) + [tok.eos_id]
        assert ds.doc(i).tolist() == want
        assert ds[i].tolist() == want
    assert ds.num_tokens == sum(len(tok.encode(t)) + 1 for t in nonempty)
    assert tok.decode(ds.doc(5)[:-1]) == nonempty[5]


def test_samples_are_windows_of_the_concatenated_stream(packed):
    path, _ = packed
    ds = tokpack.Dataset(path)
    stream = np.concatenate([ds.doc(i) for i in range(len(ds))]).astype(np.int64)
    L = 50
    assert ds.num_samples(L) == (len(stream) - 1) // L
    for i in [0, 1, 7, ds.num_samples(L) - 1]:
        np.testing.assert_array_equal(ds.sample(i, L), stream[i * L:i * L + L + 1])
    np.testing.assert_array_equal(ds.tokens(123, 456), stream[123:579])
    offset, length = ds.document_extent(9)
    np.testing.assert_array_equal(stream[offset:offset + length], ds.doc(9))
    with pytest.raises(IndexError):
        ds.sample(ds.num_samples(L), L)
    with pytest.raises(IndexError):
        ds.doc(len(ds))
    with pytest.raises(IndexError):
        ds.tokens(ds.num_tokens - 2, 3)


def test_metadata_and_the_bundled_tokenizer(packed, spm_model):
    path, _ = packed
    ds = tokpack.Dataset(path)
    tok = tokpack.Tokenizer(spm_model)
    info = ds.tokenizer_info
    assert info["type"] == "sentencepiece" and info["vocab_size"] == 1000 == tok.vocab_size
    assert (info["bos_id"], info["eos_id"], info["unk_id"]) == (tok.bos_id, tok.eos_id, tok.unk_id)
    m = ds.manifest
    assert (m["total_documents"], m["total_tokens"]) == (len(ds), ds.num_tokens)
    assert m["fingerprint"] == ds.fingerprint and len(ds.fingerprint) == 16
    bundled = ds.tokenizer()
    assert Path(bundled.model_path).parent == Path(path)
    assert bundled.encode("data token model") == tok.encode("data token model")


def test_a_bare_megatron_prefix_opens_too(packed):
    path, _ = packed
    shard = tokpack.Dataset(Path(path) / "shard-00000")
    ds = tokpack.Dataset(path)
    assert 0 < shard.num_documents < ds.num_documents
    assert shard.doc(0).tolist() == ds.doc(0).tolist()


def test_build_from_python_equals_the_cli_build(tmp_path, spm_model, run_tokpack, corpus):
    src, texts = corpus(300, seed=3)
    reports = []
    ds = tokpack.build([src], tmp_path / "py", spm_model, shard_tokens=3000, threads=2,
                       progress=reports.append)
    run_tokpack("build", "-i", src, "-o", tmp_path / "cli", "-t", spm_model, "--shard-tokens", 3000,
                "--threads", 2)
    names = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "py").iterdir())
    match, mismatch, errors = filecmp.cmpfiles(tmp_path / "cli", tmp_path / "py", names,
                                               shallow=False)
    assert mismatch == [] and errors == []
    assert isinstance(ds, tokpack.Dataset) and ds.num_shards > 1
    # progress is optional and periodic; when it came, its last numbers are sane
    for r in reports:
        assert 0 <= r["documents"] <= len(texts) and r["elapsed_seconds"] >= 0


def test_build_errors_name_the_problem(tmp_path, spm_model, corpus):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": oops}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        tokpack.build(bad, tmp_path / "out", spm_model)
    assert not (tmp_path / "out").exists()
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        tokpack.build(tmp_path / "missing.jsonl", tmp_path / "out", spm_model)
    src, _ = corpus(20)
    tokpack.build(src, tmp_path / "out", spm_model)
    with pytest.raises(RuntimeError, match="already_exists"):
        tokpack.build(src, tmp_path / "out", spm_model)
    tokpack.build(src, tmp_path / "out", spm_model, force=True)


def test_open_errors_map_to_python_exceptions(tmp_path, packed):
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        tokpack.Dataset(tmp_path / "nothing-here")
    # a truncated shard is data loss, named
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(packed[0], copy)
    bin_path = copy / "shard-00001.bin"
    bin_path.write_bytes(bin_path.read_bytes()[:-10])
    with pytest.raises(RuntimeError, match=r"data_loss.*shard-00001\.bin"):
        tokpack.Dataset(copy)


def test_ctrl_c_cancels_a_python_build_and_leaves_nothing(tmp_path, spm_model):
    # stdin stays open and idle: the build waits for more input until interrupted
    code = textwrap.dedent("""
        import sys, tokpack
        print("start", flush=True)
        try:
            tokpack.build("-", sys.argv[1], sys.argv[2])
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    out = tmp_path / "out"
    with Child([sys.executable, "-c", code, str(out), spm_model], stdin=subprocess.PIPE) as child:
        assert child.stdout.line().strip() == "start"
        child.proc.stdin.write('{"text": "one document"}\n')
        child.proc.stdin.flush()
        # The build has begun once its staging directory exists.
        wait_until(lambda: any(".out.tokpack-tmp-" in p.name for p in tmp_path.iterdir()),
                   "the build's staging directory")
        child.send_signal(signal.SIGINT)
        line = child.stdout.line().strip()  # stdin still open: no EOF yet
        child.proc.stdin.close()
        returncode, _, stderr = child.finish()
    assert line == "interrupted", stderr
    assert returncode == 0
    assert not out.exists()
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_a_dataset_pickles_by_path_for_worker_processes(packed):
    import pickle
    ds = tokpack.Dataset(packed[0])
    again = pickle.loads(pickle.dumps(ds))
    assert again.fingerprint == ds.fingerprint
    assert again.doc(7).tolist() == ds.doc(7).tolist()


def test_the_package_works_without_torch(packed):
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        import numpy as np, tokpack
        loader = tokpack.Loader(sys.argv[1], seq_len=16, batch_size=2, max_steps=3)
        batch = next(loader)
        assert isinstance(batch["input_ids"], np.ndarray), type(batch["input_ids"])
        assert batch["input_ids"].shape == (2, 16) and len(loader) == 3
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code, packed[0]], capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr
