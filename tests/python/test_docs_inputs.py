"""The raw-input examples of docs/cli.md and docs/inputs.md run as written: a
FineWeb-style Parquet build, a bucket-to-bucket build (against the loopback
S3, with the bucket and keys the examples name) and a Python-iterable build."""
import os
import random
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, random_text
from remote_servers import MotoServer

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
tokpack = pytest.importorskip("tokpack")


def commands(block):
    """The `build/tokpack ...` commands of a text, line continuations joined."""
    text = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in text.splitlines() if line.strip().startswith("build/tokpack")]


@pytest.fixture
def workdir(tmp_path, spm_model, monkeypatch):
    """demo/tok.model, fineweb/data/... Parquet shards, and my-bucket/fineweb/ in a
    loopback S3 whose credentials are in the environment."""
    rng = random.Random(5)
    (tmp_path / "demo").mkdir()
    shutil.copy(spm_model, tmp_path / "demo" / "tok.model")
    for i in range(2):
        d = tmp_path / "fineweb" / "data" / f"CC-MAIN-2024-{10 + i}"
        d.mkdir(parents=True)
        texts = [random_text(rng, 5, 60) for _ in range(200)]
        pq.write_table(pa.table({"text": texts, "id": list(range(200))}),
                       d / "000_00000.parquet", row_group_size=50)
    monkeypatch.setenv("TOKPACK_CACHE_DIR", str(tmp_path / "cache"))
    with MotoServer() as s3:
        for k, v in s3.env().items():
            monkeypatch.setenv(k, v)
        s3.upload(tmp_path / "fineweb", "s3://my-bucket/fineweb")
        yield tmp_path


def run(command, cwd, tokpack_bin):
    args = shlex.split(command)
    args[0] = tokpack_bin
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, (command, proc.stderr)
    return args[args.index("-o") + 1]


def test_the_cli_doc_raw_input_examples_run(workdir, tokpack_bin):
    readme = (REPO / "docs" / "cli.md").read_text()
    section = readme.split("\n## Raw data where it lives", 1)[1].split("\n## ", 1)[0]
    cmds = commands(section)
    assert len(cmds) == 2 and ".parquet" in cmds[0] and "s3://" in cmds[1]
    local = tokpack.Dataset(workdir / run(cmds[0], workdir, tokpack_bin))
    remote = tokpack.Dataset(run(cmds[1], workdir, tokpack_bin))
    assert len(local) == 400 and remote.fingerprint == local.fingerprint
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(tokpack.Dataset(workdir / "demo" / "from-python")) == 1000


def test_the_inputs_doc_bucket_example_runs(workdir, tokpack_bin):
    doc = (REPO / "docs" / "inputs.md").read_text()
    cmds = commands(doc)
    assert len(cmds) == 1
    url = run(cmds[0], workdir, tokpack_bin)
    assert len(tokpack.Dataset(url)) == 400
