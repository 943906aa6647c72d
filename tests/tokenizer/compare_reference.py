"""Checks tokpack's BpeTokenizer against PyPI tokenizers and tiktoken.

Trains small byte-level BPE models with tokenizers' BpeTrainer on generated
multi-script text, writes them as tokenizer.json files (GPT-2 style, Llama 3
style, and variants of every supported normalizer, pre-tokenizer and added
token option) and as tiktoken ranks files (with the cl100k/o200k/llama3/gpt2
split patterns), encodes generated documents with the reference and with
bpe_encode_tool, and reports every difference.

  python compare_reference.py build/tests/bpe_encode_tool [--docs N] [--seed S] [--workdir DIR]

Exits 1 on any mismatch. Needs `pip install tokenizers tiktoken`.
"""

import argparse
import base64
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

import tiktoken
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# The byte-level alphabet and the Llama 3 pattern are shared with the pytest suite.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tokenizer_refs  # noqa: E402

LLAMA3 = tokenizer_refs.LLAMA3_PATTERN
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

DEEPSEEK_V3 = [
    r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|"
    r" ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]

# tiktoken_ext/openai_public.py (tiktoken 0.14) and Meta's/Qwen's patterns.
TIKTOKEN_PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""",
        r"""\s+"""]),
    "llama3": LLAMA3,
    "qwen2": QWEN2,
}

WORDS = {
    "en": "the of and to in is was for that with as on by it from at this be are an or we "
          "they can't won't I'm you're it's we've they'll he'd don't Hello World TOKEN "
          "tokenizer encoding dataset running quickly jump lazy dog fox over_under snake_case "
          "CamelCase URL https://example.com/path?q=1 foo@bar.org".split(),
    "de": "über straße Größe Mädchen schön Fußgänger".split(),
    "fr": "été déjà garçon œuvre naïve coïncidence".split(),
    "ru": "привет мир кошка собака Москва Ёлка".split(),
    "el": "Καλημέρα κόσμε ΣΊΣΥΦΟΣ σοφία".split(),
    "zh": "我们 今天 天气 很好 中文 分词 测试 人工智能".split(),
    "ja": "こんにちは 世界 カタカナ ひらがな 東京 日本語".split(),
    "ko": "안녕하세요 세계 한국어 토큰".split(),
    "ar": "مرحبا بالعالم اللغة العربية".split(),
    "hi": "नमस्ते दुनिया हिन्दी भाषा".split(),
    "th": "สวัสดี ภาษาไทย".split(),
    "he": "שלום עולם".split(),
}
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "❤️", "✨", "🤖", "☃"]
COMBINING = ["e\u0301", "a\u0308", "n\u0303", "\u1100\u1161", "o\u0302\u0323", "A\u030a"]
SPACES = [" ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n ", "\u00a0", "\u3000",
          "\u2028", "\u0085", "\u2009", "\u200b", "\x0b", "\x0c", "\u1680"]
PUNCT = list(".,;:!?()[]{}<>\"'`~@#$%^&*-_=+/\\|") + ["...", "--", "''", "'s", "'S", "'ll",
                                                     "'RE", "«", "»", "“", "”", "—", "¿", "°"]
DIGITS = ["0", "7", "42", "123", "2024", "3.14159", "1,000,000", "٣٤٥", "१२३", "²", "½", "Ⅻ"]
SPECIAL_IN_TEXT = ["<|endoftext|>", "<|im_start|>", "[MASK]", "<pad>", "hello", "Hello",
                   " <|endoftext|> ", "<|endoftext|><|endoftext|>", "<|im_start", "mask"]


def random_doc(rng, specials):
    parts = []
    langs = rng.sample(sorted(WORDS), rng.randint(1, 3))
    for _ in range(rng.randint(1, 120)):
        r = rng.random()
        if r < 0.55:
            w = rng.choice(WORDS[rng.choice(langs)])
            parts.append(w.upper() if rng.random() < 0.05 else w)
        elif r < 0.63:
            parts.append(rng.choice(PUNCT))
        elif r < 0.70:
            parts.append(rng.choice(DIGITS) if rng.random() < 0.7 else
                         "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 12))))
        elif r < 0.76:
            parts.append(rng.choice(SPACES))
        elif r < 0.80:
            parts.append(rng.choice(EMOJI))
        elif r < 0.84:
            parts.append(rng.choice(COMBINING))
        elif r < 0.86 and specials:
            parts.append(rng.choice(specials))
        elif r < 0.88:
            parts.append(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x24f),
                                         rng.randint(0x370, 0x3ff), rng.randint(0x4e00, 0x9fff),
                                         rng.randint(0x1f300, 0x1f64f), rng.randint(1, 0x1f)])))
        elif r < 0.89:
            parts.append(rng.choice("ab ") * rng.randint(20, 300))  # Long runs.
        parts.append(rng.choice([" ", " ", " ", "", "\n", "  "]))
    return "".join(parts)


def write_docs(path, docs):
    with open(path, "wb") as f:
        for d in docs:
            b = d.encode("utf-8")
            f.write(b"%d\n" % len(b))
            f.write(b)


def run_tool(tool, args):
    out = subprocess.run([tool] + args, check=True, capture_output=True).stdout.decode()
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    extra = [l for l in lines if l.startswith("decode-mismatch")]
    lines = [l for l in lines if not l.startswith("decode-mismatch")]
    return [[int(x) for x in l.split()] if l else [] for l in lines], extra


def train_base(docs, vocab_size, llama_style):
    tok = Tokenizer(models.BPE())
    if llama_style:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(docs, trainer=trainer)
    return json.loads(tok.to_str())


def added(content, special=False, **kw):
    d = {"id": 0, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": not special, "special": special}
    d.update(kw)
    return d


def variants(gpt2, llama):
    """(name, tokenizer.json dict) pairs covering the supported options."""
    out = [("gpt2", gpt2), ("llama3", llama)]
    v = copy.deepcopy(llama)
    v["model"]["ignore_merges"] = True
    out.append(("llama3-ignore-merges", v))
    v = copy.deepcopy(gpt2)
    v["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in v["model"]["merges"]]
    v["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                          "use_regex": True}
    v["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"},
                                                           {"type": "Lowercase"}]}
    v["added_tokens"] += [added("<|im_start|>", True), added("[MASK]", True, lstrip=True),
                          added("hello", single_word=True), added("mask", rstrip=True),
                          added("<pad>", True, lstrip=True, rstrip=True),
                          added("world", normalized=False)]
    out.append(("prefix-nfkc-lower-added", v))
    v = copy.deepcopy(llama)
    v["pre_tokenizer"]["pretokenizers"][0:1] = [  # DeepSeek V3's split sequence.
        {"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated", "invert": False}
        for p in DEEPSEEK_V3]
    out.append(("deepseek-v3", v))
    v = copy.deepcopy(llama)
    v["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": QWEN2}
    v["added_tokens"] += [added("<|im_start|>", True), added("Hello", single_word=True,
                                                             normalized=False)]
    out.append(("qwen2", v))
    for behavior in ["Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for invert in [False, True]:
            v = copy.deepcopy(llama)
            v["normalizer"] = {"type": "NFD"}
            v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": invert},
                {"type": "Split", "pattern": {"Regex": r"\s+|[.,!?]"}, "behavior": behavior,
                 "invert": invert},
                {"type": "ByteLevel", "add_prefix_space": behavior == "Removed",
                 "trim_offsets": False, "use_regex": not invert}]}
            out.append((f"split-{behavior}-invert{invert}", v))
    v = copy.deepcopy(gpt2)
    v["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"Regex": r"\d+"}, "content": "#"}, {"type": "NFKD"}]}
    v["pre_tokenizer"] = {"type": "Split", "pattern": {"String": "\u2581"},
                          "behavior": "MergedWithNext", "invert": False}
    v["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        v["pre_tokenizer"], {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": False, "use_regex": False}]}
    out.append(("replace-prepend-nfkd", v))
    # Character-level BPE (no ByteLevel): unk, fuse_unk and byte fallback.
    for fuse, fallback in [(False, False), (True, False), (False, True)]:
        v = copy.deepcopy(llama)
        v["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": LLAMA3},
                              "behavior": "Isolated", "invert": False}
        vocab = {}
        for k in v["model"]["vocab"]:
            chars = "".join(bytes([pre_tokenizers_byte(c)]).decode("latin-1") for c in k) \
                if all(is_bl(c) for c in k) else None
            if chars is not None:
                vocab[chars] = len(vocab)
        merges = []
        for m in v["model"]["merges"]:
            a, b = (m if isinstance(m, list) else m.split(" "))
            a2 = "".join(chr(pre_tokenizers_byte(c)) for c in a)
            b2 = "".join(chr(pre_tokenizers_byte(c)) for c in b)
            if a2 in vocab and b2 in vocab and a2 + b2 in vocab:
                merges.append([a2, b2])
        vocab["<unk>"] = len(vocab)
        if fallback:
            for b in range(0, 256, 2):
                vocab.setdefault("<0x%02X>" % b, len(vocab))
        v["model"].update(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=fuse,
                          byte_fallback=fallback)
        v["added_tokens"] = [added("<|endoftext|>", True)]
        out.append((f"charlevel-fuse{fuse}-fallback{fallback}", v))
    return out


def bytes_to_unicode():
    return tokenizer_refs.byte_decoder()


def is_bl(c):
    return c in bytes_to_unicode()


def pre_tokenizers_byte(c):
    return bytes_to_unicode()[c]


def tiktoken_ranks(gpt2):
    """Ranks in merge order from the byte-level vocabulary of a trained model."""
    inv = bytes_to_unicode()
    ranks = {bytes([b]): b for b in range(256)}
    for m in gpt2["model"]["merges"]:
        a, b = (m if isinstance(m, list) else m.split(" "))
        tok = bytes(inv[c] for c in a + b)
        ranks.setdefault(tok, len(ranks))
    return ranks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=3000)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="tokpack_bpe_")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    train_docs = [random_doc(rng, []) for _ in range(2000)]
    docs = [random_doc(rng, SPECIAL_IN_TEXT) for _ in range(args.docs)]
    docs += ["", " ", "a", "\n", "a" * 5000, " " * 3000 + "x", "'s'S'll", "<|endoftext|>"]
    docs_path = os.path.join(work, "docs.bin")
    write_docs(docs_path, docs)
    gpt2 = train_base(train_docs, args.vocab, llama_style=False)
    llama = train_base(train_docs, args.vocab, llama_style=True)
    total_bad = 0
    checked = 0

    def report(name, ref, got, extra):
        nonlocal total_bad, checked
        bad = [i for i in range(len(docs)) if ref[i] != got[i]]
        checked += len(docs)
        total_bad += len(bad)
        print(f"{name:40s} docs {len(docs):6d} mismatches {len(bad):5d} "
              f"{' '.join(extra)}", flush=True)
        for i in bad[:3]:
            r, g = ref[i], got[i]
            k = next((j for j in range(min(len(r), len(g))) if r[j] != g[j]), min(len(r), len(g)))
            print(f"  doc {i} {docs[i][:60]!r}: first difference at token {k}: "
                  f"ref {r[max(0, k - 2):k + 4]} got {g[max(0, k - 2):k + 4]}")

    for name, spec in variants(gpt2, llama):
        path = os.path.join(work, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False)
        ref_tok = Tokenizer.from_file(path)
        ref = [e.ids for e in ref_tok.encode_batch(docs, add_special_tokens=False)]
        got, extra = run_tool(args.tool, ["hf", path, docs_path])
        if spec.get("normalizer") is not None or "charlevel" in name or "prefix" in name:
            extra = []  # Decoding is not the inverse there.
        report("hf " + name, ref, got, extra)

    ranks = tiktoken_ranks(gpt2)
    ranks_path = os.path.join(work, "ranks.tiktoken")
    with open(ranks_path, "wb") as f:
        for tok, rank in ranks.items():
            f.write(base64.b64encode(tok) + b" %d\n" % rank)
    special = {"<|endoftext|>": len(ranks), "<|fim|>": len(ranks) + 5}
    for preset, pat in TIKTOKEN_PATTERNS.items():
        enc = tiktoken.Encoding(name="t_" + preset, pat_str=pat, mergeable_ranks=ranks,
                                special_tokens=special)
        ref = [enc.encode_ordinary(d) for d in docs]
        got, extra = run_tool(args.tool, ["tiktoken", ranks_path, preset, docs_path] +
                              [f"{k}={v}" for k, v in special.items()])
        report("tiktoken " + preset, ref, got, extra)
    print(f"total: {checked} encodings compared, {total_bad} mismatches")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
