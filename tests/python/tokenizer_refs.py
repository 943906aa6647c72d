"""Reference tokenizers for the exactness tests, trained here with PyPI
`tokenizers` on generated text (nothing is downloaded), and that text.

Each trainer writes a tokenizer.json in the style of a current model family;
`tiktoken_from` turns a trained byte-level vocabulary into a tiktoken ranks
file, and `tiktoken_reference` builds tiktoken's own Encoding for a preset
pattern (tiktoken's pattern and special tokens, our ranks).
"""
import base64
import random

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, trainers

FRAGMENTS = [
    "hello world", "The quick brown fox jumps over the lazy dog.", "Grüße aus Köln",
    "naïve café résumé", "东京都は日本の首都です。", "Привет, мир!", "مرحبا بالعالم",
    "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "안녕하세요 세계", "Γειά σου Κόσμε",
    "🙂👍🏽🇩🇪👨‍👩‍👧 ok", "e\u0301 a\u0308 n\u0303 A\u030a", "x = f(42) + 3.14159;",
    "def f(x):\n    return x**2\r\n", "   \t  multiple   spaces", "\n\n\n", "\r\n\r\n",
    "1234567890 123,456.78 2024-11-23", "I'm you're they've we'll he'd she's IT'S DON'T",
    "<|endoftext|>", "<tool>call</tool>", " assistant: hi", "ALL CAPS TEXT", "tabs\there",
    "trailing space ", "\u00a0non-breaking\u2003em space", "ｆｕｌｌｗｉｄｔｈ", "ﬁ ligature",
    "https://example.com/path?q=1&r=2", "$100.00 €5 ¥300", "a" * 40, "    ", "...!!!???",
]
WORDS = ("the of and to in is was for on that with as by at from data token model "
         "train shard über café 東京 データ привет мир 123 4567 3.5").split()


def make_texts(n, seed=0):
    """`n` documents mixing scripts, digits, whitespace runs, CRLF, emoji and
    combining marks, with separators that make pre-tokenizer edge cases."""
    rng = random.Random(seed)
    seps = [" ", "", "\n", "\r\n", "  ", "\t", " \n", "\n\n"]
    texts = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.5:
                parts.append(rng.choice(FRAGMENTS))
            else:
                parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))))
            parts.append(rng.choice(seps))
        texts.append("".join(parts))
    return texts


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _train(tok, texts, path, vocab_size=1200):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken("<tool>", single_word=False),
                    AddedToken("</tool>", rstrip=True),
                    AddedToken(" assistant:", lstrip=True, normalized=False)])
    tok.save(str(path))
    return Tokenizer.from_file(str(path))


def train_gpt2_style(texts, path):
    """Byte-level BPE with ByteLevel's own regex and an NFC normalizer (GPT-2)."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return _train(tok, texts, path)


def train_llama3_style(texts, path):
    """A Split regex then ByteLevel without its regex, ignore_merges (Llama 3)."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return _train(tok, texts, path)


def train_deepseek_style(texts, path):
    """A Sequence of Splits and single digits before ByteLevel (DeepSeek V3, Qwen)."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Split(Regex(r"[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
                             behavior="isolated"),
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    return _train(tok, texts, path)


def byte_decoder():
    """ByteLevel's alphabet back to bytes: printable bytes stand for themselves,
    the others for the characters from U+0100 on, in byte order."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def tiktoken_from(trained, path):
    """Writes `trained`'s byte-level vocabulary as a tiktoken ranks file (ranks
    in id order, special tokens left out); returns the ranks."""
    dec = byte_decoder()
    specials = {t.content for t in trained.get_added_tokens_decoder().values()}
    vocab = sorted((i, t) for t, i in trained.get_vocab(with_added_tokens=False).items()
                   if t not in specials)
    ranks = {bytes(dec[c] for c in t): r for r, (_, t) in enumerate(vocab)}
    with open(path, "w") as f:
        for b, r in ranks.items():
            f.write(f"{base64.b64encode(b).decode()} {r}\n")
    return ranks


def tiktoken_reference(preset, ranks):
    """tiktoken's Encoding for `preset` (its pattern and special tokens) over `ranks`."""
    import tiktoken
    from tiktoken_ext import openai_public

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: ranks
    try:
        spec = getattr(openai_public, preset)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)
