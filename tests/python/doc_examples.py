"""Code examples of the docs, found by name, so that a test runs each one as
written. In a page, an example is the indented block (four spaces) that
follows a line `<!-- example: NAME -->`."""
import re
import shlex
import subprocess

from conftest import REPO


def doc_example(page, name):
    """The code of example NAME in docs/PAGE, dedented. Fails (KeyError) when
    the page has no such example, so a renamed example cannot go untested."""
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    marker = f"<!-- example: {name} -->"
    if marker not in text:
        raise KeyError(f"docs/{page} has no {marker}")
    after = text.split(marker, 1)[1]
    block = re.match(r"\s*\n((?:    .*\n|[ \t]*\n)+)", after)
    if block is None:
        raise KeyError(f"docs/{page}: {marker} is not followed by an indented code block")
    return "\n".join(line[4:] for line in block.group(1).splitlines()).strip() + "\n"


# The docs.jsonl of the provenance examples (docs/cli.md and docs/python.md:
# document sources, explain, removal): two documents with ids, and a blank,
# an empty and a bad line, so that document 1 is line 4.
DOCS_JSONL = ('{"text": "the first document", "id": "a-16"}\n\n{"text": ""}\n'
              '{"text": "the second document", "id": "a-17"}\n{not json\n')


def run_cli_example(tokpack_bin, page, name, cwd):
    """Runs each line of example NAME in docs/PAGE, a `tokpack ...` command, in
    `cwd`; a line's `# comment`, when it has one, is what it must print."""
    for line in doc_example(page, name).splitlines():
        command, _, comment = line.partition("#")
        args = shlex.split(command)
        assert args[0] == "tokpack", line
        proc = subprocess.run([tokpack_bin, *args[1:]], cwd=cwd, capture_output=True, text=True,
                              check=True)
        if comment:
            assert proc.stdout.strip() == comment.strip(), line
