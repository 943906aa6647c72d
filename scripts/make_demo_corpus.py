#!/usr/bin/env python3
"""Builds the demo corpus from text every Debian machine has: the license
texts in /usr/share/common-licenses and every package's copyright file.

Writes OUT/licenses.jsonl (one document per license) and
OUT/copyrights.jsonl (one document per copyright file; demo.sh compresses it
with zstd), plus OUT/train.txt for training the demo tokenizer.
"""
import json
import sys
from pathlib import Path


def documents(paths):
    for path in sorted(paths):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace").strip()
            if text:
                yield {"text": text, "source": str(path)}


def main(out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = {
        "licenses.jsonl": Path("/usr/share/common-licenses").glob("*"),
        "copyrights.jsonl": Path("/usr/share/doc").glob("*/copyright"),
    }
    with (out / "train.txt").open("w", encoding="utf-8") as train:
        for name, paths in groups.items():
            n = 0
            with (out / name).open("w", encoding="utf-8") as f:
                for doc in documents(paths):
                    f.write(json.dumps(doc, ensure_ascii=False) + "\n")
                    train.write(doc["text"] + "\n")
                    n += 1
            print(f"demo corpus: {n} documents in {out / name}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo/corpus")
