"""docs/python.md's quick tour runs as written (against files laid out as
scripts/demo.sh lays them out)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytest.importorskip("tokpack")
pytest.importorskip("torch")


def readme_python_example():
    text = (REPO / "docs" / "python.md").read_text()
    section = text.split("\n## Quick tour\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"\n((?:    .*\n|\n)+)", section[section.index("import tokpack") - 5:])
    lines = [line[4:] for line in block.group(1).splitlines()]
    return "\n".join(lines)


def test_the_python_quick_tour_runs(tmp_path, packed, spm_model):
    demo = tmp_path / "demo"
    (demo / "corpus").mkdir(parents=True)
    shutil.copytree(packed[0], demo / "data")
    shutil.copy(spm_model, demo / "tok.model")
    subprocess.run(["zstd", "-q", str(Path(packed[0]).parent / "corpus.jsonl"), "-o",
                    str(demo / "corpus" / "copyrights.jsonl.zst")], check=True)
    code = readme_python_example()
    assert "tokpack.Loader(" in code and "load_state_dict" in code
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (demo / "py" / "manifest.json").exists() and (demo / "ckpt.pt").exists()
