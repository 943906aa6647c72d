"""The tokenizer examples of docs/cli.md and docs/tokenizers.md run as written,
against tokenizer files made here under the names the examples use."""
import json
import re
import shlex
import subprocess
import sys

import pytest

import tokenizer_refs as refs
from conftest import REPO

tokpack = pytest.importorskip("tokpack")


def shell_commands(block):
    """The `build/tokpack ...` commands of an indented block, continuations joined."""
    text = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in text.splitlines() if line.strip().startswith("build/tokpack")]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """llama3/tokenizer.json (+ tokenizer_config.json), tokenizer.json with
    <|im_end|>, cl100k_base.tiktoken, ranks.tiktoken, corpus/ and demo/corpus/."""
    d = tmp_path_factory.mktemp("docs")
    texts = refs.make_texts(800, seed=3)
    (d / "llama3").mkdir()
    llama3 = refs.train_llama3_style(texts, d / "llama3" / "tokenizer.json")
    (d / "llama3" / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": "<|endoftext|>", "bos_token": None}))
    chat = refs.train_gpt2_style(texts, d / "tokenizer.json")
    chat.add_special_tokens(["<|im_end|>"])
    chat.save(str(d / "tokenizer.json"))
    refs.tiktoken_from(llama3, d / "cl100k_base.tiktoken")
    refs.tiktoken_from(llama3, d / "ranks.tiktoken")
    for corpus in (d / "corpus", d / "demo" / "corpus"):
        corpus.mkdir(parents=True)
        path = corpus / "part.jsonl"
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[:200]))
        subprocess.run(["zstd", "-q", "--rm", str(path)], check=True)
    (d / "corpus.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[:50]))
    (d / "data").mkdir()
    return d


def run_commands(commands, cwd, tokpack_bin):
    assert commands
    for command in commands:
        args = shlex.split(command)
        args[0] = tokpack_bin
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (command, proc.stderr)
        out = args[args.index("-o" if "-o" in args else "--output") + 1]
        assert (cwd / out / "manifest.json").exists(), command
        (cwd / "done").mkdir(exist_ok=True)
        (cwd / out).rename(cwd / "done" / f"{len(list((cwd / 'done').iterdir()))}")


def test_the_cli_doc_tokenizer_examples_run(files, tokpack_bin):
    readme = (REPO / "docs" / "cli.md").read_text()
    section = readme.split("\n## build\n", 1)[1].split("\n- ", 1)[0]
    commands = [c for c in shell_commands(section) if "demo/tok.model" not in c]
    assert len(commands) == 2
    run_commands(commands, files, tokpack_bin)


def test_the_tokenizers_doc_examples_run(files, tokpack_bin):
    doc = (REPO / "docs" / "tokenizers.md").read_text()
    section = doc.split("\n## Examples\n", 1)[1].split("\n## ", 1)[0]
    commands = shell_commands(section)
    assert len(commands) == 4
    run_commands(commands, files, tokpack_bin)
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], cwd=files, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ds = tokpack.Dataset(files / "data" / "web")
    assert ds.tokenizer_info["type"] == "huggingface" and len(ds) == 50
