"""Code examples of the docs, found by name, so that a test runs each one as
written. In a page, an example is the indented block (four spaces) that
follows a line `<!-- example: NAME -->`."""
import re

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
