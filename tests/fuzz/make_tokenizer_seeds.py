"""Writes the seeds of tokenizer_file_fuzz (tests/fuzz/seeds/tokenizer_file/):
small tokenizer files of each kind, trained here with PyPI tokenizers and
sentencepiece, each as the target reads an input: a selector byte, a text
length byte, the file, the text.

    .venv/bin/python tests/fuzz/make_tokenizer_seeds.py
"""
import base64
import io
import json
import pathlib

import sentencepiece as spm
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

OUT = pathlib.Path(__file__).parent / "seeds" / "tokenizer_file"
CORPUS = ["Hello world, the quick brown fox jumps over the lazy dog 123 4567.",
          "Grüße aus Köln: 東京 2024年, ½ ﬁne ﷺ and \t tabs\r\n",
          "def f(x):\n    return x ** 2  # squares\n"] * 20
TEXT = "Hello wörld 123 <|endoftext|> ﬁ  東京\n"


def seed(name, selector, file_bytes, text=TEXT):
    text_bytes = text.encode()
    assert len(text_bytes) < 256 and len(file_bytes) < 50_000, name
    (OUT / name).write_bytes(bytes([selector, len(text_bytes)]) + file_bytes + text_bytes)


def tokenizer_json(name, tok, vocab_size):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_tokens(["<tool>", " lstrip"])
    seed(name, 0, tok.to_str().encode())


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    # GPT-2 style: ByteLevel with its regex.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tokenizer_json("bytelevel.json", tok, 300)
    # Llama 3 style: a Split regex, then ByteLevel without its own; NFKC.
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+"), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer_json("split_nfkc.json", tok, 300)
    # Character level with Digits, Replace and Prepend, byte fallback and unk.
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁"), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Digits(individual_digits=True)
    trainer = trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>"] +
                                  [f"<0x{b:02X}>" for b in range(256)])
    tok.train_from_iterator(CORPUS, trainer)
    seed("charlevel.json", 0, tok.to_str().encode())
    # tiktoken: every byte, then the byte-level merges of the first file.
    merged = json.loads((OUT / "bytelevel.json").read_bytes()[2:-len(TEXT.encode())])
    inverse = {c: b for b, c in enumerate(pre_tokenizers.ByteLevel.alphabet())}
    ranks = [bytes([b]) for b in range(256)]
    for token in merged["model"]["vocab"]:
        raw = bytes(inverse.get(c, 0) for c in token) if all(c in inverse for c in token) else None
        if raw and len(raw) > 1 and raw not in ranks:
            ranks.append(raw)
    lines = b"".join(base64.b64encode(r) + b" %d\n" % i for i, r in enumerate(ranks))
    seed("cl100k_pattern.tiktoken", 1 + 3 * 1, lines)
    seed("pcre2_pattern.tiktoken", 1 + 3 * (5 + 7 * 6), lines)  # Also a special token.
    # sentencepiece: small unigram and BPE models, without a normalization
    # table (it alone is 240 KB).
    for model_type in ("unigram", "bpe"):
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(CORPUS), model_writer=model, vocab_size=400,
            model_type=model_type, normalization_rule_name="identity", byte_fallback=True,
            character_coverage=1.0, hard_vocab_limit=False)
        seed(f"{model_type}.model", 2, model.getvalue())


if __name__ == "__main__":
    main()
