"""The rules of docs/architecture.md that a grep can check: the CLI and the
binding use only the public API, and the environment is read in one place."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return [REPO / p for p in out.split()]


def test_tools_and_bindings_include_only_the_public_api():
    for path in tracked("tools/*", "bindings/*"):
        for include in re.findall(r'#include "([^"]+)"', path.read_text()):
            # The public API, or the directory's own headers.
            own = path.parent.name + "/"
            assert include.startswith(("tokpack/", own)), f"{path.name}: {include}"


def test_the_environment_is_read_only_by_from_environment():
    readers = set()
    for path in tracked("src/*", "tools/*", "bindings/*", "include/*"):
        if "getenv" in path.read_text():
            readers.add(path.relative_to(REPO).as_posix())
    assert readers == {"src/storage/storage_options.cc"}, readers
