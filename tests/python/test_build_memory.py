"""Memory for one document is bounded (issue 16): a record longer than
--max-document-bytes is a bad record naming file:line, found while it is read
and never held whole, so a build's peak RSS does not follow a huge line. RSS
is compared, with a generous margin, to the same command on a small input: a
bound on memory, not a timing."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import REPO, random_text, write_jsonl

MiB = 1 << 20


# Runs a command and prints its own peak RSS (see the script).
PEAK_RSS = REPO / "scripts" / "peak_rss.py"


def run_measured(cmd):
    """Runs `cmd`: (exit code, stderr, its peak RSS in bytes)."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.run([sys.executable, "-S", PEAK_RSS, *map(str, cmd)],
                           stdout=subprocess.PIPE, stderr=err, timeout=600)
        err.seek(0)
        peak = json.loads(p.stdout.decode().strip().splitlines()[-1])["maxrss_kb"]
        return p.returncode, err.read().decode(), peak * 1024


def build_cmd(tokpack_bin, spm_model, src, out, *extra):
    return [tokpack_bin, "build", "-i", src, "-o", out, "-t", spm_model, "--threads", "2",
            "--quiet", *extra]


def counts(out):
    return json.loads((out / "manifest.json").read_text())["provenance"]["counts"]


def texts(n, seed=0):
    import random
    rng = random.Random(seed)
    return [random_text(rng) for _ in range(n)]


def test_a_line_over_the_limit_is_refused_naming_file_and_line(tmp_path, spm_model, tokpack_bin):
    docs = texts(4)
    docs.insert(2, "word " * (2 * MiB // 5 + 1))  # Line 3: just over 2 MiB.
    src = write_jsonl(tmp_path / "c.jsonl", docs)
    line3 = len(src.read_text().splitlines()[2].encode())
    limit = ["--max-document-bytes", str(MiB)]
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, src, tmp_path / "out", *limit))
    assert code == 1
    assert f"c.jsonl:3: a record of {line3} bytes, over --max-document-bytes ({MiB})" in err
    assert not (tmp_path / "out").exists()
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, src, tmp_path / "out", *limit,
                                          "--skip-bad-lines"))
    assert code == 0, err
    assert counts(tmp_path / "out")["bad_lines"] == 1
    assert counts(tmp_path / "out")["documents"] == 4


def test_plain_text_over_the_limit_per_file_and_per_line(tmp_path, spm_model, tokpack_bin):
    (tmp_path / "big.txt").write_text("a b c " * 400_000)  # 2.4 MB, one document.
    (tmp_path / "small.txt").write_text("one small document")
    (tmp_path / "lines.txt").write_text("short\n" + "x y " * 300_000 + "\nshort too\n")
    limit = ["--max-document-bytes", str(MiB)]
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "big.txt",
                                          tmp_path / "o1", *limit))
    assert code == 1
    assert f"big.txt: a document of more than {MiB} bytes, over --max-document-bytes" in err
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "lines.txt",
                                          tmp_path / "o2", *limit, "--text-per-line"))
    assert code == 1
    assert "lines.txt:2: a record of 1200000 bytes, over --max-document-bytes" in err
    for name, extra in (("o3", ["-i", tmp_path / "small.txt"]), ("o4", ["--text-per-line"])):
        src = tmp_path / ("big.txt" if name == "o3" else "lines.txt")
        code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, src, tmp_path / name,
                                              *limit, "--skip-bad-lines", *extra))
        assert code == 0, err
        assert counts(tmp_path / name)["bad_lines"] == 1
        assert counts(tmp_path / name)["documents"] == (1 if name == "o3" else 2)


def test_a_huge_line_is_never_held_whole(tmp_path, spm_model, tokpack_bin):
    # A 1 GB line scaled down by the limit: 64 MiB against a 1 MiB limit. Were
    # the line buffered (or, worse, tokenized) the build would hold 64 MiB or
    # many times that; read through, it costs what a small build does.
    small = write_jsonl(tmp_path / "small.jsonl", texts(50))
    huge = tmp_path / "huge.jsonl"
    with huge.open("w") as f:
        f.write(small.read_text())
        f.write('{"text": "' + "abcdefgh " * (64 * MiB // 9) + '"}\n')
        f.write(small.read_text())
    limit = ["--max-document-bytes", str(MiB), "--skip-bad-lines"]
    code, err, base = run_measured(build_cmd(tokpack_bin, spm_model, small, tmp_path / "o1",
                                             *limit))
    assert code == 0, err
    code, err, peak = run_measured(build_cmd(tokpack_bin, spm_model, huge, tmp_path / "o2",
                                             *limit))
    assert code == 0, err
    assert counts(tmp_path / "o2")["bad_lines"] == 1
    assert counts(tmp_path / "o2")["documents"] == 100
    print(f"peak RSS: {peak / MiB:.1f} MiB with the huge line, {base / MiB:.1f} MiB without")
    assert peak - base < 40 * MiB, (peak / MiB, base / MiB)


def test_python_texts_over_the_limit_are_bad_records(tmp_path, spm_model):
    tokpack = pytest.importorskip("tokpack")
    items = ["fine", "y" * (2 * MiB), "fine again"]
    with pytest.raises(ValueError, match=r"<python iterable>:2: a record of 2097152 bytes, over "
                                         r"--max-document-bytes \(1048576\)"):
        tokpack.build(iter(items), tmp_path / "out", spm_model, max_document_bytes=MiB)
    ds = tokpack.build(iter(items), tmp_path / "out", spm_model, max_document_bytes=MiB,
                       skip_bad_lines=True)
    assert len(ds) == 2 and ds.manifest["provenance"]["counts"]["bad_lines"] == 1
    for bad in (0, (1 << 30) + 1):
        with pytest.raises(ValueError, match="max_document_bytes must be"):
            tokpack.build(iter(items), tmp_path / "bad", spm_model, max_document_bytes=bad)


def test_parquet_values_over_the_limit_are_bad_records(tmp_path, spm_model, tokpack_bin):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"text": ["one", "z" * (2 * MiB), "three"]}), tmp_path / "t.parquet")
    limit = ["--max-document-bytes", str(MiB)]
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "t.parquet",
                                          tmp_path / "out", *limit))
    assert code == 1
    assert f"t.parquet:2: a record of {2 * MiB} bytes, over --max-document-bytes" in err
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "t.parquet",
                                          tmp_path / "out", *limit, "--skip-bad-lines"))
    assert code == 0, err
    assert counts(tmp_path / "out")["bad_lines"] == 1


def test_a_parquet_page_too_large_for_any_document_is_not_decompressed(tmp_path, spm_model,
                                                                       tokpack_bin):
    # The 144 KB zstd file whose one value inflates to 1.5 GB, scaled down by
    # the limit: 64 MiB against 1 MiB. Its page is refused before it is
    # decompressed (it was decompressed, twice for a dictionary page, before
    # the value was found too large); its rows are bad rows, the others read.
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    small = texts(50)
    pq.write_table(pa.table({"text": small}), tmp_path / "small.parquet", compression="zstd")
    # Three row groups; the second's dictionary page holds rows 51 to 53.
    schema = pa.schema([("text", pa.string())])
    with pq.ParquetWriter(tmp_path / "bomb.parquet", schema, compression="zstd") as w:
        for rows in (small, ["one", "z" * (64 * MiB), "three"], small):
            w.write_table(pa.table({"text": rows}, schema=schema))
    assert (tmp_path / "bomb.parquet").stat().st_size < MiB
    limit = ["--max-document-bytes", str(MiB)]
    code, err, _ = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "bomb.parquet",
                                          tmp_path / "o", *limit))
    assert code == 1
    cap = 2 * MiB + MiB
    assert f"bomb.parquet:51: text is in a Parquet page of " in err, err
    assert f"bytes once decompressed, over the cap of {cap}" in err, err
    code, err, base = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "small.parquet",
                                             tmp_path / "o1", *limit, "--skip-bad-lines"))
    assert code == 0, err
    code, err, peak = run_measured(build_cmd(tokpack_bin, spm_model, tmp_path / "bomb.parquet",
                                             tmp_path / "o2", *limit, "--skip-bad-lines"))
    assert code == 0, err
    assert counts(tmp_path / "o2")["bad_lines"] == 3
    assert counts(tmp_path / "o2")["documents"] == 100
    print(f"peak RSS: {peak / MiB:.1f} MiB with the huge page, {base / MiB:.1f} MiB without")
    assert peak - base < 32 * MiB, (peak / MiB, base / MiB)
