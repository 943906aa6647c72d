"""The rules of docs/architecture.md that a grep can check: the layers of
src/ (declared once, in src/CMakeLists.txt) include only what lies below them,
the CLI and the binding use only the public API and the frontend layer, and
the environment is read in one place."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return [REPO / p for p in out.split()]


def includes(path):
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M)


def layers():
    """{layer: (deps, public headers)} in the order src/CMakeLists.txt declares them."""
    text = (REPO / "src/CMakeLists.txt").read_text()
    out = {}
    for call in re.findall(r"^tokpack_layer\(([^)]*)\)", text, re.M):
        words = call.split()
        name, field, fields = words[0], None, {"DEPS": [], "PRIVATE_DEPS": [], "HEADERS": []}
        for w in words[1:]:
            if w.isupper() and w.isidentifier():
                field = w
            elif field in fields:
                fields[field].append(w)
        out[name] = (fields["DEPS"] + fields["PRIVATE_DEPS"], fields["HEADERS"])
    return out


def below(table):
    """{layer: the layers it may include, itself among them}."""
    reach = {}
    for name, (deps, _) in table.items():  # Declared bottom-up: deps come first.
        reach[name] = {name}.union(*(reach[d] for d in deps))
    return reach


def header_layer(table):
    return {h: name for name, (_, headers) in table.items() for h in headers}


def test_every_folder_is_a_declared_layer_and_every_public_header_has_one():
    table = layers()
    folders = {p.relative_to(REPO / "src").parts[0] for p in tracked("src/*") if p.parent != REPO / "src"}
    assert folders == set(table), folders ^ set(table)
    public = {p.name for p in tracked("include/tokpack/*.h")}
    owned = [h for _, headers in table.values() for h in headers]
    assert sorted(owned) == sorted(public), set(owned) ^ public
    for name, (deps, _) in table.items():
        earlier = list(table)[:list(table).index(name)]
        assert set(deps) <= set(earlier), f"{name} depends on a layer declared after it"


def test_each_layer_includes_only_the_layers_below_it():
    table, reach = layers(), below(layers())
    owner = header_layer(table)
    bad = []
    for path in tracked("src/*"):
        rel = path.relative_to(REPO / "src")
        if len(rel.parts) < 2 or path.suffix not in (".h", ".cc", ".cu"):
            continue
        layer = rel.parts[0]
        for inc in includes(path):
            top = inc.split("/")[0]
            target = owner.get(inc[len("tokpack/"):]) if top == "tokpack" else top
            if target is None and top != "tokpack" and top not in table:
                continue  # A generated or third-party header.
            if target not in reach[layer]:
                bad.append(f"src/{rel}: {inc} ({target}, above {layer})")
    assert not bad, "\n".join(bad)


def test_public_headers_include_only_public_headers_of_their_layer_or_below():
    table, reach = layers(), below(layers())
    owner = header_layer(table)
    bad = []
    for path in tracked("include/tokpack/*.h"):
        mine = owner[path.name]
        for inc in includes(path):
            assert inc.startswith("tokpack/"), f"{path.name}: {inc} is not public"
            if owner[inc[len("tokpack/"):]] not in reach[mine]:
                bad.append(f"{path.name} ({mine}): {inc}")
    assert not bad, "\n".join(bad)


def test_architecture_page_lists_the_layers_bottom_up():
    page = (REPO / "docs/architecture.md").read_text()
    listed = re.findall(r"^  (\w+)/ {2,}", page.split("## The layers", 1)[1].split("```")[1], re.M)
    assert listed == list(layers()), listed


def test_tools_and_bindings_include_only_the_public_api_and_the_frontend():
    for path in tracked("tools/*", "bindings/*"):
        for include in includes(path):
            # The public API, the frontend layer, or the directory's own headers.
            own = path.parent.name + "/"
            assert include.startswith(("tokpack/", "frontend/", own)), f"{path.name}: {include}"


def test_the_environment_is_read_only_by_from_environment():
    readers = set()
    for path in tracked("src/*", "tools/*", "bindings/*", "include/*"):
        if "getenv" in path.read_text():
            readers.add(path.relative_to(REPO).as_posix())
    assert readers == {"src/storage/storage_options.cc"}, readers
