#!/usr/bin/env python3
"""Writes docs/benchmarks.md and its PNG plots from the JSON results of
bench/packing_peers.py, bench/python_bench.py (--json-out) and
bench/resume_bench.py. Run by scripts/bench_all.sh in build/bench-venv (needs
matplotlib).

    bench_report.py --packing P.json --reading R.json --resume S.json \
        --doc docs/benchmarks.md --seconds TOTAL
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def machine():
    cpu = sh("lscpu | sed -n 's/^Model name:[[:space:]]*//p'") or platform.processor()
    hyper = sh("lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p'")
    return (f"{cpu}, {os.cpu_count()} vCPUs{' (' + hyper + ' VM)' if hyper else ''}, "
            f"{sh('free -g | awk ' + chr(39) + '/^Mem:/ {print $2}' + chr(39))} GiB RAM, "
            f"{sh('. /etc/os-release && echo $PRETTY_NAME')}, Linux {platform.release()}; "
            f"no GPU; shared with other work (another engineer's tests ran concurrently)")


def med(v):
    return statistics.median(v) if v else None


def ratio_rounds(num, den):
    """Per-round ratios num[i] / den[i] (runs close in time), then the median."""
    v = [x / y for x, y in zip(num, den) if y]
    return statistics.median(v) if v else None


def fmt(x, f="{:,.0f}"):
    return f.format(x) if x is not None else "n/a"


# --------------------------------------------------------------------------

def packing_section(P, plots):
    mb = P["input_bytes"] / 1e6
    S = P["seconds"]
    labels = {
        "tokpack": f"`tokpack build --threads {P['procs']}` (C++, system libsentencepiece)",
        "megatron": f"Megatron-style: `multiprocessing.Pool({P['procs']})`, "
                    f"`imap(encode, lines, 32)`, sentencepiece (Python), "
                    f"`IndexedDatasetBuilder.add_document` + `finalize`",
        "litdata": f"LitData `optimize(fn, inputs=<{len(P['inputs'])} files>, "
                   f"num_workers={P['procs']}, item_loader=TokensLoader(), "
                   f"chunk_bytes=\"{P['chunk_bytes']}\")`, sentencepiece (Python)",
    }
    rows = ["| packer | median s | per round, s | input MB/s | documents/s | tokpack is |",
            "|---|---:|---|---:|---:|---:|"]
    bars = []
    for n in ("tokpack", "megatron", "litdata"):
        if n in P["failed"]:
            rows.append(f"| {labels[n]} | not run: {P['failed'][n]} | | | | |")
            continue
        m = med(S[n])
        r = "1.00x" if n == "tokpack" else fmt(ratio_rounds(S[n], S["tokpack"]), "{:.2f}x")
        rows.append(f"| {labels[n]} | {m:.2f} | {', '.join(f'{x:.2f}' for x in S[n])} | "
                    f"{mb / m:.2f} | {P['documents'] / m:,.0f} | {r} |")
        bars.append((n if n != "megatron" else "Megatron-style", mb / m))
    plot_bars(plots / "benchmarks-packing.png", bars,
              f"Packing {mb:.1f} MB of JSONL, {P['procs']} processes/threads (higher is better)",
              "input MB/s", log=False)
    c = P["check"]
    return "\n".join(rows), mb, c


def reading_section(R, plots):
    res, failed, cfg = R["results"], R["failed"], R["configs"]
    base = f"py-torch-{R['threads']}"
    rows = ["| loader | samples/s (median) | per round | tokpack is | first batch |",
            "|---|---:|---|---:|---:|"]
    bars = []
    names = [base] + [c for c in cfg if cfg[c][1] is None]
    for c in names:
        label = cfg[c][3]
        if c == base:
            label = f'tokpack.Loader, as_="torch", threads={R["threads"]}, prefetch={R["prefetch"]}'
        if c in failed or not res.get(c):
            rows.append(f"| {label} | not run: {failed.get(c, 'not selected')} | | | |")
            continue
        v = [x["samples_per_s"] for x in res[c]]
        if c == base:
            rel = "1.00x"
        elif cfg[c][0] == "dataloader-floor":
            rel = "—"
        else:
            rel = fmt(ratio_rounds([x["samples_per_s"] for x in res[base]], v), "{:.1f}x")
        first = med([x["first_batch_s"] for x in res[c]])
        rows.append(f"| {label} | {med(v):,.0f} | {', '.join(f'{x:,.0f}' for x in v)} | {rel} | "
                    f"{first * 1000:.0f} ms |")
        short = {"tokpack-torch": "tokpack", "megatron": "Megatron-Core", "litdata": "LitData",
                 "mosaic": "MosaicML Streaming", "nanogpt": "nanoGPT memmap",
                 "dataloader-floor": "DataLoader floor"}[cfg[c][0]]
        w = cfg[c][2]
        bars.append((short + (f" (w={w})" if w is not None else ""), med(v)))
    plot_bars(plots / "benchmarks-reading.png", bars,
              f"Shuffled reading, seq_len {R['seq_len']}, batch {R['batch_size']} "
              f"(samples/s, log scale, higher is better)", "samples/s", log=True)
    return "\n".join(rows)


def resume_section(S, plots):
    res, failed, cfg = S["results"], S["failed"], S["configs"]
    rows = ["| loader | process start to first batch, median s | per round, s | "
            "of which imports | building the loader | load_state_dict | first batch | "
            "time / tokpack's |",
            "|---|---:|---|---:|---:|---:|---:|---:|"]
    bars = []
    tok = [x["wall"] for x in res.get("tokpack", [])]
    for c, (kind, w, label) in cfg.items():
        if c in failed or not res.get(c):
            rows.append(f"| {label} | not run: {failed.get(c, 'no result')} | | | | | | |")
            continue
        v = [x["wall"] for x in res[c]]
        ph = {k: med([x["phases"].get(k, 0.0) for x in res[c]])
              for k in ("import", "construct", "load_state", "first_batch")}
        rel = "1.00x" if c == "tokpack" else fmt(ratio_rounds(v, tok), "{:.2f}x")
        rows.append(f"| {label} | {med(v):.2f} | {', '.join(f'{x:.2f}' for x in v)} | "
                    f"{ph['import']:.2f} | {ph['construct']:.2f} | {ph['load_state']:.3f} | "
                    f"{ph['first_batch']:.3f} | {rel} |")
        bars.append((label.split(" + ")[0].split(" StreamingDataLoader")[0]
                     .replace("reference: ", "") + (f" (w={w})" if w is not None else ""),
                     med(v)))
    plot_bars(plots / "benchmarks-resume.png", bars,
              f"Process start to first batch after resuming at step {S['step']:,} "
              f"(seconds, lower is better)", "seconds", log=False)
    return "\n".join(rows)


def plot_bars(path, bars, title, xlabel, log):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.45 * len(bars) + 1.2), dpi=80)
    names = [b[0] for b in bars][::-1]
    vals = [b[1] for b in bars][::-1]
    colors = ["#d62728" if n.startswith("tokpack") else "#7f7f7f" for n in names]
    ax.barh(names, vals, color=colors)
    if log:
        ax.set_xscale("log")
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:,.0f}" if v >= 100 else f" {v:.2f}", va="center", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.margins(x=0.15)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--packing")
    ap.add_argument("--reading")
    ap.add_argument("--resume")
    ap.add_argument("--doc", default=str(REPO / "docs" / "benchmarks.md"))
    ap.add_argument("--seconds", type=float, default=0)
    a = ap.parse_args()
    doc = Path(a.doc)
    plots = doc.parent
    P = json.loads(Path(a.packing).read_text()) if a.packing and Path(a.packing).exists() else None
    R = json.loads(Path(a.reading).read_text()) if a.reading and Path(a.reading).exists() else None
    S = json.loads(Path(a.resume).read_text()) if a.resume and Path(a.resume).exists() else None
    commit = sh(f"git -C {REPO} rev-parse --short HEAD")
    vers = ", ".join(f"{k} {v}" for k, v in (R or {}).get("versions", {}).items())
    parts = [TEMPLATE_HEAD.format(machine=machine(), commit=commit, vers=vers or "see below",
                                  minutes=a.seconds / 60)]
    if P:
        table, mb, c = packing_section(P, plots)
        parts.append(TEMPLATE_PACKING.format(
            table=table, mb=mb, docs=P["documents"], files=len(P["inputs"]),
            procs=P["procs"], rounds=P["rounds"], model=P["model"],
            load=f"{P['loadavg'][0]:.1f} before, {P['loadavg'][1]:.1f} after",
            check=json.dumps(c)))
    else:
        parts.append("## Packing\n\nNot run (no results file).\n")
    if R:
        parts.append(TEMPLATE_READING.format(
            table=reading_section(R, plots), rounds=R["rounds"], seconds=R["seconds"],
            threads=R["threads"], workers=R["workers"],
            load=f"{R['loadavg'][0]:.1f} before, {R['loadavg'][1]:.1f} after",
            check=json.dumps(R["check"]),
            setup="\n".join(f"- {k}: {v:.1f} s" for k, v in R["setup"].items())
            or "- (all cached from an earlier run)"))
    else:
        parts.append("## Reading\n\nNot run (no results file).\n")
    if S:
        parts.append(TEMPLATE_RESUME.format(
            table=resume_section(S, plots), rounds=S["rounds"],
            load=f"{S['loadavg'][0]:.1f} before, {S['loadavg'][1]:.1f} after",
            states=json.dumps(S["setup"].get("states")),
            megatron=json.dumps(S["setup"].get("megatron-index"))))
    else:
        parts.append("## Resume\n\nNot run (no results file).\n")
    parts.append(TEMPLATE_TAIL)
    doc.write_text("\n".join(parts))
    print(doc.read_text())


TEMPLATE_HEAD = """# Benchmarks against peers

tokpack against the tools a training team would otherwise use, on one machine, one
corpus and one tokenizer: packing (tokenizing JSONL into a training dataset), reading
(shuffled batches of seq_len 2048) and resuming at step 1,000,000.

## Command

    scripts/bench_all.sh

It makes `build/bench-venv` (git-ignored) with the peers from PyPI (`torch
megatron-core litdata mosaicml-streaming sentencepiece matplotlib numpy`; pin them with
`PEERS=...`) and tokpack built from this checkout (`bench/peers_bench.sh`), builds
`build/bench-release` (Release: `tokpack`, `reader_bench`), then runs
`bench/packing_peers.py`, `bench/python_bench.py` and `bench/resume_bench.py`, each
writing JSON to `build/bench-all/`, and `bench/bench_report.py`, which writes this page
and the three PNGs beside it. The last run took {minutes:.0f} minutes (peers already
installed). Nothing of the peers is a dependency of the project.

## Machine

- {machine}
- tokpack at commit {commit}
- Versions: {vers}

Every measurement is a fresh process; the configurations run interleaved, the order
rotated each round, and ratios are taken within a round (runs seconds apart) and
then the median of those, because the machine is shared: absolute figures move
between rounds, the ratios much less.
"""

TEMPLATE_PACKING = """## Packing

![packing](benchmarks-packing.png)

Corpus: `scripts/make_demo_corpus.py` (the license and copyright texts of this Debian
machine, as `scripts/demo.sh` makes them), {docs} documents, {mb:.1f} MB of JSONL, split
into {files} files of about equal size so that per-file parallelism (LitData's) has work
for every worker; all three packers read the same files in the same order. Tokenizer:
`{model}`, sentencepiece unigram, vocabulary 8000, trained with `spm_train` as demo.sh
does. Every packer appends EOS to each document and writes uint16 tokens, with
{procs} processes or threads (tokpack `--threads {procs}`, `Pool({procs})`,
`num_workers={procs}`). Time: wall clock of the whole process, start to exit (the
Python rows include interpreter start and imports, as a user's run does), {rounds}
rounds. 1-minute load average {load}.

{table}

How each is used:

- **tokpack**: `tokpack build -i <files> -o DIR -t MODEL --threads {procs} --quiet`.
- **Megatron-style**: Megatron-LM's `tools/preprocess_data.py` is not in the
  megatron-core wheel, so `bench/packing_peers.py` repeats its steps: an `Encoder`
  whose `initializer` loads the tokenizer in every worker (sentencepiece's Python
  module, as Megatron's `SentencePieceTokenizer` does), `multiprocessing.Pool(N,
  initializer=...)`, `pool.imap(encoder.encode, fin, 32)` over the JSONL lines,
  `json.loads` and `encode` in the workers, EOD appended (`--append-eod`), and the main
  process writing each document with `IndexedDatasetBuilder(..., dtype=
  DType.optimal_dtype(vocab)).add_document(ids, [len(ids)])`, then `finalize(idx)`.
- **LitData**: `litdata.optimize(fn=tokenize_file, inputs=<the JSONL files>, output_dir,
  num_workers=N, chunk_bytes="64MB", item_loader=TokensLoader())`, where
  `tokenize_file` yields each document's ids plus EOS as a uint16 array, as litgpt's
  pretraining data preparation does (one input per file).

Same output? (`bench/packing_peers.py` compares after the last round):

`{check}`

- tokpack's shard and the Megatron-style `.bin`/`.idx` have the same layout
  (Megatron's `IndexedDataset` reads both), the same number of documents, and the
  same dtype; they differ only where the two *sentencepiece versions* differ: tokpack
  links Debian's libsentencepiece 0.1.97, the Python pipelines use PyPI's current
  wheel. Debian's `python3-sentencepiece` (also 0.1.97) run over the same documents
  (`system_sentencepiece_stream_equal`) gives tokpack's token stream exactly; the
  differing documents differ in how long runs of one repeated character (`*****`,
  `=====`, `-----` rulers in the copyright files) are cut into equal-scoring pieces.
  With the same sentencepiece on both sides the files are expected to be identical.
- LitData's chunks hold the same number of tokens as the Megatron-style output (both
  PyPI sentencepiece); its order depends on which worker took which file, so only the
  token count and histogram are compared.
"""

TEMPLATE_READING = """## Reading

![reading](benchmarks-reading.png)

The same 100,000,000-token synthetic dataset (`reader_bench make`, one uint16 shard,
48,935 documents of 50 to 4,049 tokens) read by every loader, shuffled, seq_len 2048,
batch 8, each loop ending with int64 `[8, 2048]` inputs and labels in hand. tokpack:
`tokpack.Loader(..., threads={threads}, prefetch=4)`; the peers with `num_workers=
{workers}` (Megatron's default) and `num_workers=0`. {rounds} rounds of {seconds:g} s per
configuration after 1 s of warm-up. 1-minute load average {load}. How each peer is used
(each as its documentation shows) is described in
[benchmarks-python.md](benchmarks-python.md); MosaicML Streaming, new here, is used as
its docs and llm-foundry's `convert_dataset_hf --concat_tokens` do for pretraining
text: the token stream (EOS between documents) cut into samples of 2,049 tokens,
written with `MDSWriter(out=DIR, columns={{"tokens": "ndarray:uint16"}})`, read with
`StreamingDataset(local=DIR, shuffle=True, shuffle_seed=1, batch_size=8)` and
`StreamingDataLoader(batch_size=8, num_workers=W, drop_last=True)`, cycled across
epochs, `x = t[:, :2048].long(); y = t[:, 1:].long()`.

{table}

One-time preparation, not in the numbers above:

{setup}

Same tokens: `{check}` (MosaicML's 48,804 samples of 2,049 tokens are the first
99,999,396 tokens of the stream; the tail shorter than a sample is dropped.)
"""

TEMPLATE_RESUME = """## Resume at step 1,000,000

![resume](benchmarks-resume.png)

Wall time from starting a fresh Python process to holding the first batch after
resuming at step 1,000,000 (batch 8, seq_len 2048: 8,000,000 samples consumed, about 164
epochs of the dataset above), measured by the parent from `Popen` to the child's line
saying the batch arrived; the child also times its phases (imports; building the
loader; `load_state_dict`; the first batch). {rounds} rounds, interleaved. 1-minute load
average {load}.

{table}

How each resumes (`bench/resume_bench.py`):

- **tokpack**: `Loader(data, seq_len=2048, batch_size=8, seed=1)`, `load_state_dict(state)`,
  `next()`. The state is a real `state_dict()` with `position` and `consumed` set to
  8,000,000 (the cursor counts global positions, docs/reader.md); the same edit at 800
  positions was checked equal to the state of a loader that really consumed them.
  Resuming costs O(1): the permutation of any epoch is computed, not stored.
- **Megatron-Core**: `GPTDataset` built by `BlendedMegatronDatasetBuilder` for the whole
  run (16,000,000 samples; its index files were built once and are cached in the
  workdir, as a restarted job finds them: {megatron}), then a `DataLoader` whose batch
  sampler starts at `consumed_samples` = 8,000,000, as Megatron-LM's
  `MegatronPretrainingSampler` does (that sampler lives in `megatron/training`, not in
  the megatron-core wheel, so its few lines are repeated). Most of its time is
  importing megatron.core (about 3 s beyond torch here), then loading the index files.
- **LitData**: `StreamingDataLoader.load_state_dict(state)` with a real `state_dict()`
  whose `current_epoch` and `num_samples_yielded` were set to step 1e6.
- **MosaicML Streaming**: `StreamingDataLoader.load_state_dict(state)` with a real
  `state_dict()` whose `epoch` and `sample_in_epoch` were set to step 1e6. Streaming
  builds its epoch's sample partition when iteration starts.
- **nanoGPT-style**: random offsets drawn with replacement have no data state to resume
  (nanoGPT's checkpoint restores `iter_num` only), so its row is a fresh start.
- **reference**: a process that imports torch and exits: every row above pays this.

The peers' resumed positions were not checked against an uninterrupted run (that would
mean reading 8,000,000 samples through each); their rows time the documented resume
path with a state for step 1e6. tokpack's resumed batches are checked for equality with
an uninterrupted run by its own tests.

States used: `{states}`
"""

TEMPLATE_TAIL = """## What was not run, and caveats

- Megatron-LM's own `tools/preprocess_data.py` and `MegatronPretrainingSampler` are not
  in the megatron-core wheel on PyPI (only `megatron/core`); the packing pipeline and
  the sampler are written out in `bench/` following them, using megatron-core's
  `IndexedDatasetBuilder`, `GPTDataset` and `BlendedMegatronDatasetBuilder`.
- The machine has 2 vCPUs and no GPU, shared with other work; DataLoader workers and
  packing processes compete with the consumer for the same two cores. A training node
  has more cores: the worker rows would improve there, the per-sample Python work would
  not.
- `mosaicml-streaming` pins `numpy<2.2`, so installing it downgraded the bench venv's
  numpy (2.4.6 to 2.1.3); the other peers work with it.
- Packing compares different sentencepiece builds (Debian's C++ 0.1.97 inside tokpack,
  PyPI's wheel in the Python pipelines); their speed may differ a little apart from the
  pipelines themselves.
"""

if __name__ == "__main__":
    main()
