#!/usr/bin/env python3
"""Writes the packing and resume sections of docs/benchmarks.md, and their
PNG plots beside it, from the JSON results of bench/packing_peers.py and
bench/resume_bench.py (--json-out). Run by scripts/bench_all.sh in
build/bench-venv (needs matplotlib). The reading section is python_bench.py's.

    bench_report.py --packing P.json --resume S.json --report docs/benchmarks.md
"""
import argparse
import json
from pathlib import Path

import harness
from harness import fmt, plot_bars, ratio_rounds
from harness import median as med


# --------------------------------------------------------------------------

def spm_label(version, where):
    return f"sentencepiece {version} ({where})" if version else f"sentencepiece ({where})"


def packing_section(P, plots):
    mb = P["input_bytes"] / 1e6
    S = P["seconds"]
    c = P["check"]
    tok_spm = spm_label(c.get("tokpack_sentencepiece"), "C++, built from its PyPI sdist")
    py_spm = spm_label(c.get("sentencepiece_python"), "Python wheel")
    labels = {
        "tokpack": f"`tokpack build --threads {P['procs']}` (C++, {tok_spm})",
        "megatron": f"Megatron-style: `multiprocessing.Pool({P['procs']})`, "
                    f"`imap(encode, lines, 32)`, {py_spm}, "
                    f"`IndexedDatasetBuilder.add_document` + `finalize`",
        "litdata": f"LitData `optimize(fn, inputs=<{len(P['inputs'])} files>, "
                   f"num_workers={P['procs']}, item_loader=TokensLoader(), "
                   f"chunk_bytes=\"{P['chunk_bytes']}\")`, {py_spm}",
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
    return "\n".join(rows), mb, c


def packing_check_prose(c):
    """What the outputs' comparison found, in words, from the check alone."""
    out = []
    tok_v, py_v = c.get("tokpack_sentencepiece"), c.get("sentencepiece_python")
    same_spm = tok_v is not None and tok_v == py_v
    spm = (f"tokpack and the Python pipelines encode with the same sentencepiece release "
           f"({tok_v})" if same_spm else
           f"tokpack encodes with sentencepiece {tok_v or '(release not recorded)'}, the "
           f"Python pipelines with {py_v or '(not recorded)'}")
    if "megatron_error" in c:
        out.append(f"- Megatron-style output not compared: {c['megatron_error']}.")
    elif "megatron_stream_equal" in c:
        files = c.get("megatron_files_byte_identical") or {}
        ident = [ext for ext, same in files.items() if same]
        layout = ("byte-identical `.bin`/`.idx` files" if files and len(ident) == len(files)
                  else "the same layout (Megatron's `IndexedDataset` reads both)")
        head = (f"- tokpack's shard and the Megatron-style `.bin`/`.idx`: "
                f"{c['tokpack_documents']:,} against {c['megatron_documents']:,} documents, "
                f"{c['tokpack_tokens']:,} against {c['megatron_tokens']:,} tokens, "
                f"{c['megatron_dtype']}; {spm}. ")
        if c["megatron_stream_equal"]:
            out.append(head + f"The token streams are identical: {layout}.")
        else:
            n = c.get("megatron_docs_differing")
            which = (f"{n:,} of {c['tokpack_documents']:,} documents differ (the first: "
                     f"{', '.join(map(str, c.get('megatron_first_differing_doc', [])))})"
                     if n is not None else "the document counts differ")
            why = ("" if same_spm else
                   " This run did not record which sentencepiece tokpack encoded with."
                   if tok_v is None else
                   " The two sentencepiece releases may cut some texts differently.")
            out.append(head + f"The token streams differ: {which}.{why}")
    if "litdata_error" in c:
        out.append(f"- LitData's output not compared: {c['litdata_error']}.")
    elif "litdata_tokens" in c:
        same = c.get("litdata_token_histogram_equal")
        out.append(
            f"- LitData's chunks hold {c['litdata_tokens']:,} tokens against tokpack's "
            f"{c['tokpack_tokens']:,}, and the same histogram of token ids: "
            f"{'yes' if same else 'no'}; its order depends on which worker took which file, "
            "so only the count and the histogram are compared.")
    return "\n".join(out)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--packing")
    ap.add_argument("--resume")
    ap.add_argument("--report", default=str(harness.REPORT))
    a = ap.parse_args()
    report = Path(a.report)
    plots = report.parent
    machine = harness.machine_line()
    if a.packing and Path(a.packing).exists():
        P = json.loads(Path(a.packing).read_text())
        table, mb, c = packing_section(P, plots)
        harness.write_section("packing", TEMPLATE_PACKING.format(
            table=table, mb=mb, docs=P["documents"], files=len(P["inputs"]), machine=machine,
            procs=P["procs"], rounds=P["rounds"], model=P["model"],
            load=f"{P['loadavg'][0]:.1f} before, {P['loadavg'][1]:.1f} after",
            check=json.dumps(c), prose=packing_check_prose(c)), report)
    if a.resume and Path(a.resume).exists():
        S = json.loads(Path(a.resume).read_text())
        harness.write_section("resume", TEMPLATE_RESUME.format(
            table=resume_section(S, plots), rounds=S["rounds"], machine=machine,
            load=f"{S['loadavg'][0]:.1f} before, {S['loadavg'][1]:.1f} after",
            states=json.dumps(S["setup"].get("states")),
            megatron=json.dumps(S["setup"].get("megatron-index"))), report)


TEMPLATE_PACKING = """Made by `bench/packing_peers.py` and `bench/bench_report.py` (scripts/bench_all.sh) on
{machine}.

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

{prose}
"""

TEMPLATE_RESUME = """Made by `bench/resume_bench.py` and `bench/bench_report.py` (scripts/bench_all.sh) on
{machine}.

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

if __name__ == "__main__":
    main()
