#!/usr/bin/env python3
"""Writes python/tokpack/_options.py from the C++ option tables (the one
declaration of every option), so the Python keyword arguments are typed and
documented without a second list. tests/python/test_options.py fails when
the checked-in file is stale; rerun this then:

    .venv/bin/python scripts/gen_options.py
"""
import os
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "python" / "tokpack" / "_options.py"

HEADER = '''"""The options of tokpack.Loader, tokpack.build and tokpack.Dataset, as
keyword-argument types.

Generated from the C++ option tables (LoaderOptions in include/tokpack/loader.h,
BuildOptions in include/tokpack/builder.h, DatasetOptions in include/tokpack/dataset.h)
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
        default = o["default"] if o["default"] != "" else '""'
        lines.append(f'    """{o["doc"]}. Default: {default}."""')
    return lines


def load_core():
    """tokpack._core alone: the package's __init__ imports the file this writes."""
    import glob
    import importlib.machinery
    import importlib.util

    package = importlib.util.find_spec("tokpack").submodule_search_locations[0]
    path = glob.glob(os.path.join(package, "_core*.so"))[0]
    loader = importlib.machinery.ExtensionFileLoader("tokpack._core", path)
    spec = importlib.util.spec_from_file_location("tokpack._core", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def generate():
    _core = load_core()

    lines = render("LoaderOptions", _core.loader_options())
    lines += render("BuildOptions", _core.build_options())
    lines += render("DatasetOptions", _core.dataset_options())
    return HEADER + "\n".join(lines) + "\n"


def main():
    text = generate()
    if "--check" in sys.argv:
        return 0 if OUT.read_text() == text else 1
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
