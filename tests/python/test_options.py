"""Options are declared once, in the C++ core: the Python keyword arguments,
the generated python/tokpack/_options.py and the CLI flags all follow from
that table."""
import subprocess
import sys
from pathlib import Path

import pytest

import tokpack
from tokpack import _core, _options

REPO = Path(__file__).resolve().parents[2]


def test_the_generated_options_module_is_current():
    gen = REPO / "scripts" / "gen_options.py"
    assert subprocess.run([sys.executable, str(gen), "--check"]).returncode == 0, (
        "python/tokpack/_options.py is stale: run scripts/gen_options.py")
    assert set(_options.LoaderOptions.__annotations__) == {o["name"] for o in _core.loader_options()}
    assert set(_options.BuildOptions.__annotations__) == {o["name"] for o in _core.build_options()}
    assert (set(_options.DatasetOptions.__annotations__) ==
            {o["name"] for o in _core.dataset_options()})


def test_loader_keywords_are_the_core_table(packed):
    with pytest.raises(ValueError, match="unknown option 'seq_lne'.*did you mean 'seq_len'"):
        tokpack.Loader(packed[0], seq_lne=16)
    with pytest.raises(ValueError, match="prefetch must be between 1 and 64, not 0"):
        tokpack.Loader(packed[0], seq_len=16, prefetch=0)
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or 'cuda:N', not 'cuda:x'"):
        tokpack.Loader(packed[0], seq_len=16, device="cuda:x")
    with pytest.raises(ValueError, match="seed must be an integer from 0 to 18446744073709551615, "
                                         "not 18446744073709551616"):
        tokpack.Loader(packed[0], seq_len=16, seed=2**64)
    import numpy as np
    assert tokpack.Loader(packed[0], seq_len=np.int64(16), as_="numpy").seq_len == 16
    loader = tokpack.Loader(packed[0], 16, 2, 7, shuffle=False, as_="numpy")
    defaults = {o["name"]: o["default"] for o in _core.loader_options()}
    got = loader.options
    assert (got["seq_len"], got["batch_size"], got["seed"], got["shuffle"]) == (16, 2, 7, "none")
    assert str(got["prefetch"]) == defaults["prefetch"]


@pytest.mark.parametrize("command,table", [("build", _core.build_options),
                                           ("sample", _core.loader_options),
                                           ("show", _core.dataset_options)])
def test_cli_flags_come_from_the_same_table(tokpack_bin, command, table):
    help_text = subprocess.run([tokpack_bin, command, "--help"], capture_output=True,
                               text=True, check=True).stdout
    skipped = {"device", "device_prefetch", "dtype"} if command == "sample" else set()
    for option in table():
        if option["name"] in skipped:
            continue
        assert option["flag"] in help_text, option["flag"]
        # A negated flag (--no-eos) reads "Do not append ...".
        doc = option["doc"].split(" (")[0][:30].lower()
        assert doc in help_text.replace("\n", " ").lower(), option["doc"]


def test_storage_attributes_and_environment_follow_the_core_table(monkeypatch):
    table = _core.storage_options()
    assert {o["name"] for o in table} == {
        k for k in dir(tokpack.StorageOptions()) if not k.startswith("_")} - {"from_environment"}
    for o in table:
        for source in o["env"]:
            if not source.startswith(("/", "~/")):
                monkeypatch.delenv(source, raising=False)
    for o in table:
        variables = [v for v in o["env"] if not v.startswith(("/", "~/"))]
        value = "7" if o["type"] == "int" else "/from/" + variables[-1]
        monkeypatch.setenv(variables[-1], value)  # The last variable: the one read when alone.
        got = getattr(tokpack.StorageOptions.from_environment(), o["name"])
        assert str(got) == value, (o["name"], got)
        if o["type"] == "int":
            monkeypatch.setenv(variables[-1], "0")
            with pytest.raises(ValueError, match=f"{variables[-1]}='0' is not a positive integer"):
                tokpack.StorageOptions.from_environment()
        monkeypatch.delenv(variables[-1])
