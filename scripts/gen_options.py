#!/usr/bin/env python3
"""Writes python/tokpack/_options.py from the C++ option tables (the one
declaration of every option), so the Python keyword arguments are typed and
documented without a second list. tests/python/test_options.py fails when
the checked-in file is stale; rerun this then:

    .venv/bin/python scripts/gen_options.py
"""
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "python" / "tokpack" / "_options.py"

HEADER = '''"""The options of tokpack.Loader, as keyword-argument types.

Generated from the C++ option table (LoaderOptions in include/tokpack/loader.h)
by scripts/gen_options.py; do not edit. The core validates every value.
"""
from typing import Literal, TypedDict, Union
'''

# What the Python layer accepts besides the core's own type (see _loader.py).
PYTHON_ALSO = {"shuffle": "bool", "dtype": "object", "device": "object", "rank": "None",
               "world_size": "None"}


def annotation(option):
    core = option["type"]
    if option["choices"]:
        core = "Literal[" + ", ".join(repr(c) for c in option["choices"]) + "]"
    also = PYTHON_ALSO.get(option["name"])
    return f"Union[{core}, {also}]" if also else core


def render(name, options):
    lines = ["", "", f"class {name}(TypedDict, total=False):"]
    for o in options:
        lines.append(f"    {o['name']}: {annotation(o)}")
        lines.append(f'    """{o["doc"]}. Default: {o["default"]}."""')
    return lines


def generate():
    from tokpack import _core

    return HEADER + "\n".join(render("LoaderOptions", _core.loader_options())) + "\n"


def main():
    text = generate()
    if "--check" in sys.argv:
        return 0 if OUT.read_text() == text else 1
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
