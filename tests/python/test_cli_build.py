"""The tokpack CLI as a user drives it: real processes, real files, real
signals, a real full disk (tmpfs where the machine allows mounting, and the
kernel's file-size limit everywhere)."""
import json
import os
import pty
import resource
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from child import Child
from conftest import REPO, random_text, write_jsonl


def build_args(inputs, out, model, *extra):
    return ["build", "-i", *map(str, inputs), "-o", str(out), "-t", model, *extra]


def token_stream(ds):
    """All token bytes of a dataset, in manifest order."""
    m = json.loads((Path(ds) / "manifest.json").read_text())
    return b"".join((Path(ds) / (s["path"] + ".bin")).read_bytes() for s in m["shards"])


def leftovers(parent, name):
    return sorted(p.name for p in Path(parent).iterdir() if name in p.name)


def test_stdin_and_compressed_files_give_the_same_dataset(tmp_path, run_tokpack, spm_model,
                                                          corpus):
    path, _ = corpus(300)
    run_tokpack(*build_args([path], tmp_path / "file", spm_model))
    subprocess.run(["zstd", "-q", str(path), "-o", str(tmp_path / "c.jsonl.zst")], check=True)
    run_tokpack(*build_args([tmp_path / "c.jsonl.zst"], tmp_path / "zst", spm_model))
    with open(path, "rb") as f:
        run_tokpack(*build_args(["-"], tmp_path / "stdin", spm_model), stdin=f)
    want = token_stream(tmp_path / "file")
    assert len(want) > 0
    assert token_stream(tmp_path / "zst") == want
    assert token_stream(tmp_path / "stdin") == want


def test_malformed_line_is_an_error_naming_file_and_line(tmp_path, run_tokpack, spm_model):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "one"}\n{"text": "two"}\n{"text": oops}\n{"text": "four"}\n')
    proc = run_tokpack(*build_args([bad], tmp_path / "out", spm_model), check=False)
    assert proc.returncode == 1
    assert f"{bad}:3: malformed JSON" in proc.stderr
    assert "--skip-bad-lines" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert leftovers(tmp_path, "out") == []

    proc = run_tokpack(*build_args([bad], tmp_path / "out", spm_model, "--skip-bad-lines"))
    assert "1 bad lines" in proc.stderr
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["total_documents"] == 3
    assert m["provenance"]["counts"]["bad_lines"] == 1


def test_missing_text_key_names_the_key(tmp_path, run_tokpack, spm_model):
    f = write_jsonl(tmp_path / "k.jsonl", ["a b c"], key="content")
    proc = run_tokpack(*build_args([f], tmp_path / "out", spm_model), check=False)
    assert proc.returncode == 1
    assert f"{f}:1: missing text key 'text'" in proc.stderr
    run_tokpack(*build_args([f], tmp_path / "out", spm_model, "--text-key", "content"))


def test_missing_input_is_reported_before_any_work(tmp_path, run_tokpack, spm_model, corpus):
    path, _ = corpus(5)
    proc = run_tokpack(*build_args([path, tmp_path / "nope.jsonl"], tmp_path / "out", spm_model),
                       check=False)
    assert proc.returncode == 1
    assert "nope.jsonl" in proc.stderr
    assert list(tmp_path.iterdir()) == [path]


def test_existing_output_needs_force_and_is_replaced_only_when_done(tmp_path, run_tokpack,
                                                                     spm_model, corpus):
    a, _ = corpus(50, seed=1, name="a.jsonl")
    b, _ = corpus(80, seed=2, name="b.jsonl")
    out = tmp_path / "out"
    run_tokpack(*build_args([a], out, spm_model))
    first = token_stream(out)
    proc = run_tokpack(*build_args([b], out, spm_model), check=False)
    assert proc.returncode == 1 and "already exists" in proc.stderr and "--force" in proc.stderr
    assert token_stream(out) == first
    run_tokpack(*build_args([b], out, spm_model, "--force"))
    assert token_stream(out) != first
    assert leftovers(tmp_path, ".tokpack-") == []


def start_build_fed_by_stdin(tokpack_bin, out, model, first_part):
    """A build (a Child) reading stdin that has consumed `first_part` and waits for more."""
    child = Child([tokpack_bin, *build_args(["-"], out, model, "--threads", "2",
                                            "--progress-every", "0.05")],
                  stdin=subprocess.PIPE, text=False)
    child.proc.stdin.write(first_part)
    child.proc.stdin.flush()
    # Wait until the build reports progress: it is running and has staged output.
    line = b""
    while b"docs/s" not in line:
        line = child.stderr.line(timeout=60)
        assert line, "the build ended without reporting progress"
    return child


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_interrupted_build_never_looks_complete(tmp_path, tokpack_bin, run_tokpack, spm_model,
                                                corpus, sig):
    path, _ = corpus(2000)
    out = tmp_path / "out"
    with start_build_fed_by_stdin(tokpack_bin, out, spm_model, path.read_bytes()) as child:
        staged = [p for p in tmp_path.iterdir() if ".tokpack-tmp-" in p.name]
        assert len(staged) == 1, "the build should be writing into a staging directory"
        # stdin stays open: the build is blocked on a pipe with no data and must
        # notice the signal by itself.
        child.send_signal(sig)
        returncode, _, stderr = child.finish()
    assert not out.exists()
    if sig == signal.SIGKILL:
        assert returncode == -signal.SIGKILL
        # The hidden staging directory may remain, but it has no manifest.
        for d in staged:
            assert not (d / "manifest.json").exists()
            v = run_tokpack("verify", d, check=False)
            assert v.returncode != 0 and "no manifest.json" in v.stderr
    else:
        assert returncode == 130
        assert b"interrupted" in stderr
        assert leftovers(tmp_path, ".tokpack-") == []


def test_file_size_limit_makes_a_clear_error_and_no_manifest(tmp_path, tokpack_bin, spm_model,
                                                             corpus):
    path, _ = corpus(3000)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    proc = subprocess.run([tokpack_bin, *build_args([path], tmp_path / "out", spm_model)],
                          capture_output=True, text=True, preexec_fn=limit)
    assert proc.returncode == 1
    assert "cannot write" in proc.stderr and "File too large" in proc.stderr
    assert "shard-00000.bin" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert leftovers(tmp_path, ".tokpack-") == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=768k", "tmpfs", str(mnt)],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.decode().strip())
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_full_disk_is_a_clear_error_and_keeps_the_old_dataset(tmp_path, tiny_tmpfs, run_tokpack,
                                                              spm_model, corpus):
    small, _ = corpus(20, name="small.jsonl")
    big, _ = corpus(8000, seed=9, name="big.jsonl")
    out = tiny_tmpfs / "ds"
    run_tokpack(*build_args([small], out, spm_model))
    before = token_stream(out)
    proc = run_tokpack(*build_args([big], out, spm_model, "--force"), check=False)
    assert proc.returncode == 1
    assert "No space left on device" in proc.stderr
    assert token_stream(out) == before
    assert run_tokpack("verify", out).returncode == 0
    assert leftovers(tiny_tmpfs, ".tokpack-") == []


def test_progress_is_a_live_bar_on_a_terminal_and_lines_otherwise(tmp_path, tokpack_bin,
                                                                  spm_model, corpus):
    path, _ = corpus(1500)
    args = [tokpack_bin, *build_args([path], tmp_path / "a", spm_model, "--threads", "1",
                                     "--progress-every", "0.01")]
    plain = subprocess.run(args, capture_output=True, text=True, check=True)
    lines = [l for l in plain.stderr.splitlines() if l.startswith("tokpack build: ") and "ETA" in l]
    assert lines, plain.stderr
    assert "\r" not in plain.stderr
    assert "documents" in plain.stderr and "tokens" in plain.stderr and "MB/s" in plain.stderr

    args[args.index(str(tmp_path / "a"))] = str(tmp_path / "b")
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(master)
    text = out.decode(errors="replace")
    assert proc.returncode == 0
    assert "\r" in text and "[" in text and "ETA" in text and "tok/s" in text


def test_parts_built_by_the_slurm_script_merge_into_the_single_build(tmp_path, tokpack_bin,
                                                                     run_tokpack, spm_model,
                                                                     corpus):
    inputs = [corpus(60 + 40 * i, seed=i, name=f"in{i}.jsonl")[0] for i in range(5)]
    run_tokpack(*build_args(inputs, tmp_path / "single", spm_model))
    env = dict(os.environ, TOKPACK=tokpack_bin, TOKPACK_INPUT=str(tmp_path / "in*.jsonl"),
               TOKPACK_OUTPUT=str(tmp_path / "merged"), TOKPACK_TOKENIZER=spm_model,
               SLURM_ARRAY_TASK_COUNT="3", SLURM_CPUS_PER_TASK="1")
    for i in range(3):
        env["SLURM_ARRAY_TASK_ID"] = str(i)
        subprocess.run(["bash", str(REPO / "scripts" / "slurm_build.sbatch")], env=env, check=True,
                       capture_output=True)
    parts = sorted((tmp_path / "merged.parts").iterdir())
    assert [p.name for p in parts] == ["part-0", "part-1", "part-2"]
    run_tokpack("merge", tmp_path / "merged", *reversed(parts))
    assert token_stream(tmp_path / "merged") == token_stream(tmp_path / "single")
    assert run_tokpack("verify", tmp_path / "merged").returncode == 0
    single = json.loads((tmp_path / "single" / "manifest.json").read_text())
    merged = json.loads((tmp_path / "merged" / "manifest.json").read_text())
    assert merged["total_tokens"] == single["total_tokens"]
    assert merged["total_documents"] == single["total_documents"]
    # No token data was copied: the merged manifest points into the parts.
    assert not list((tmp_path / "merged").glob("*.bin"))

    proc = run_tokpack("merge", tmp_path / "m2", parts[0], parts[2], check=False)
    assert proc.returncode == 1 and "part 1/3 is missing" in proc.stderr


def test_import_megatron_pair_then_info_and_verify(tmp_path, run_tokpack, spm_model, corpus):
    path, _ = corpus(200)
    run_tokpack(*build_args([path], tmp_path / "src", spm_model))
    mega = tmp_path / "megatron"
    mega.mkdir()
    for ext in ("bin", "idx"):
        shutil.copy(tmp_path / "src" / f"shard-00000.{ext}", mega / f"web_text_document.{ext}")
    run_tokpack("import", mega / "web_text_document", "-o", tmp_path / "imp", "-t", spm_model)
    info = json.loads(run_tokpack("info", tmp_path / "imp", "--json").stdout)
    src = json.loads((tmp_path / "src" / "manifest.json").read_text())
    assert info["tokens"] == src["total_tokens"]
    assert info["documents"] == src["total_documents"]
    assert info["vocab_size"] == 1000
    assert run_tokpack("verify", tmp_path / "imp").returncode == 0

    with open(mega / "web_text_document.bin", "r+b") as f:
        f.seek(10)
        f.write(b"\xff\xff")
    v = run_tokpack("verify", tmp_path / "imp", check=False)
    assert v.returncode == 1
    assert "BAD" in v.stdout and "web_text_document.bin: chunk 0" in v.stdout


def test_show_decodes_with_the_dataset_tokenizer(tmp_path, run_tokpack, spm_model):
    texts = ["hello world the data", "attention layer memory"]
    f = write_jsonl(tmp_path / "t.jsonl", texts)
    run_tokpack(*build_args([f], tmp_path / "ds", spm_model))
    out = run_tokpack("show", tmp_path / "ds", "--count", "2", "--decode").stdout
    assert texts[0] in out and texts[1] in out
    ids = run_tokpack("show", tmp_path / "ds", "--doc", "1").stdout.splitlines()[1].split()
    assert ids[-1] == "2"  # EOS
    proc = run_tokpack("show", tmp_path / "ds", "--doc", "5", check=False)
    assert proc.returncode == 1 and "past the last of 2 documents" in proc.stderr



def test_thousands_of_inputs_are_counted_hashed_and_listed_in_a_side_file(
        tmp_path, run_tokpack, spm_model):
    src = tmp_path / "many"
    src.mkdir()
    for i in range(1001):
        (src / f"{i:04d}.jsonl").write_text(json.dumps({"text": f"document {i}"}) + "\n")
    run_tokpack(*build_args([src], tmp_path / "ds", spm_model, "-q"))
    m = json.loads((tmp_path / "ds" / "manifest.json").read_text())["provenance"]
    assert m["inputs"] == [] and m["input_count"] == 1001 and m["inputs_file"] == "inputs.jsonl"
    lines = (tmp_path / "ds" / "inputs.jsonl").read_text().splitlines()
    assert [json.loads(x)["path"] for x in lines] == sorted(str(p) for p in src.iterdir())
    # The hash is xxh3-64 of the sorted lines, each with its newline.
    xxhash = pytest.importorskip("xxhash")
    want = xxhash.xxh3_64_hexdigest("".join(sorted(x + "\n" for x in lines)).encode())
    assert m["inputs_xxh3"] == want
    assert run_tokpack("verify", tmp_path / "ds").returncode == 0
    # Parts merge their side files into one.
    for i in range(2):
        run_tokpack(*build_args([src], tmp_path / f"p{i}", spm_model, "-q", "--part", f"{i}/2"))
    run_tokpack("merge", tmp_path / "merged", tmp_path / "p0", tmp_path / "p1")
    merged = json.loads((tmp_path / "merged" / "manifest.json").read_text())["provenance"]
    assert merged["input_count"] == 1001 and merged["inputs_xxh3"] == want
    # A tampered side file is caught.
    (tmp_path / "ds" / "inputs.jsonl").write_text("\n".join(lines[1:]) + "\n")
    proc = run_tokpack("verify", tmp_path / "ds", check=False)
    assert proc.returncode != 0 and "inputs.jsonl" in proc.stdout + proc.stderr
