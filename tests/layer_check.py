#!/usr/bin/env python3
"""Checks every #include of stoker's sources against the layer table of docs/ARCHITECTURE.md,
and the installed headers against its public surface.

    layer_check.py ROOT            exit 0 when every include keeps to the table and
                                   include/stoker/ holds exactly the public surface's headers,
                                   else 1 and one line per finding ("FILE:LINE: includes X:
                                   REASON", "include/stoker/X: ...")
    layer_check.py --self-test     checks that crossings are found, on a made-up tree

It also finds include cycles among the headers (a private header that includes a front end
which includes it back), naming the cycle.

The table is read from ARCHITECTURE.md's section "The layers": a row's first cell names a folder
(`pipeline/`), optionally a part of it by file stems (`pipeline/` adapter: `loader`,
`device_feed`; the rest of the folder is its core), or the test code; the third cell lists the
folders it may include besides its own part; the fourth says whether it may include LibTorch
(yes/no). Files are those under src/stoker/ and include/stoker/; includes are the project's
("stoker/X/..." or, as the CLI writes them, "X/...") and LibTorch's (torch/, ATen/, c10/).
The public surface is every `stoker/....h` named in the section "The public surface".
"""
import os
import re
import sys
import tempfile

TORCH_PREFIXES = ("torch/", "ATen/", "c10/")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
TICKED = re.compile(r"`([^`]+)`")


class Part:
    def __init__(self, folder, stems, allowed, torch):
        self.folder = folder  # "pipeline/" or None for test code
        self.stems = stems  # file stems of a named part; empty for a folder's core
        self.allowed = allowed  # folders this part may include
        self.torch = torch

    def __repr__(self):
        if self.folder is None:
            return "test code"
        return f"{self.folder}{':' + ','.join(self.stems) if self.stems else ''}"


def read_table(architecture):
    """The table's parts and the test code's part, from ARCHITECTURE.md's text."""
    section = architecture.split("## The layers", 1)[1].split("\n## ", 1)[0]
    parts, test_part, test_names = [], None, []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not line.startswith("|") or cells[0] in ("folder", "---"):
            continue
        allowed = [t for t in TICKED.findall(cells[2]) if t.endswith("/")]
        torch = cells[3].startswith("yes")
        if cells[0].startswith("test code"):
            test_names = TICKED.findall(cells[0])
            test_part = Part(None, [], allowed, torch)
            continue
        ticked = TICKED.findall(cells[0])
        parts.append(Part(ticked[0], ticked[1:], allowed, torch))
    if not parts or test_part is None:
        raise SystemExit("layer_check: no layer table in ARCHITECTURE.md's 'The layers'")
    return parts, test_part, test_names


def folder_of(rel):
    """The table's folder of a path below stoker/ ("store/import/x.h" -> "store/import/")."""
    pieces = rel.split("/")
    if len(pieces) > 2 and pieces[0] == "store" and pieces[1] == "import":
        return "store/import/"
    return pieces[0] + "/"


def stem_of(rel):
    return os.path.splitext(rel.split("/")[-1])[0]


def is_test_code(rel, test_names):
    if rel.endswith("_test.cc") or rel.startswith("testing/"):
        return True
    return any(os.path.splitext(rel)[0] == name for name in test_names if "*" not in name)


def part_of(rel, parts):
    """The part of the table that owns path `rel` (below stoker/), or None."""
    folder, stem = folder_of(rel), stem_of(rel)
    core = None
    for part in parts:
        if part.folder != folder:
            continue
        if stem in part.stems:
            return part
        if not part.stems:
            core = part
    return core


def public_headers(architecture):
    """The headers named in ARCHITECTURE.md's section "The public surface"."""
    if "## The public surface" not in architecture:
        raise SystemExit("layer_check: no section 'The public surface' in ARCHITECTURE.md")
    section = architecture.split("## The public surface", 1)[1].split("\n## ", 1)[0]
    return {t for t in TICKED.findall(section) if re.fullmatch(r"stoker/[\w/]+\.h", t)}


def surface_mismatches(root, named):
    """include/stoker/'s headers that the public surface does not name, and the reverse."""
    include = os.path.join(root, "include")
    installed = set()
    for dirpath, _, files in os.walk(os.path.join(include, "stoker")):
        for name in files:
            installed.add(os.path.relpath(os.path.join(dirpath, name), include).replace(os.sep, "/"))
    found = [f"include/{h}: installed but not in ARCHITECTURE.md's public surface"
             for h in sorted(installed - named)]
    found += [f"include/{h}: in ARCHITECTURE.md's public surface but not installed"
              for h in sorted(named - installed)]
    return found


def crossings(root):
    """Every include of the tree at `root` that crosses the table, and every header installed
    or named against the public surface, as one-line messages."""
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        architecture = f.read()
    parts, test_part, test_names = read_table(architecture)
    found = surface_mismatches(root, public_headers(architecture)) + include_cycles(root)
    for base in ("src/stoker", "include/stoker"):
        for dirpath, _, files in os.walk(os.path.join(root, base)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.join(root, base)).replace(os.sep, "/")
                found += check_file(path, rel, parts, test_part, test_names)
    return found


def include_cycles(root):
    """One message per include cycle among the headers of src/stoker/ and include/stoker/
    ("include cycle: stoker/a.h -> stoker/b.h -> stoker/a.h")."""
    graph = {}
    for base in ("src/stoker", "include/stoker"):
        for dirpath, _, files in os.walk(os.path.join(root, base)):
            for name in files:
                if not name.endswith(".h"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.join(root, base)).replace(os.sep, "/")
                targets = graph.setdefault("stoker/" + rel, set())
                with open(path, encoding="utf-8") as f:
                    for line in f:
                        m = INCLUDE.match(line)
                        if m and m.group(1).endswith(".h") and not m.group(1).startswith(TORCH_PREFIXES):
                            target = m.group(1)
                            targets.add(target if target.startswith("stoker/") else "stoker/" + target)
    found, done = [], set()

    def visit(node, path):
        if node in path:
            cycle = path[path.index(node):] + [node]
            found.append("include cycle: " + " -> ".join(cycle))
            return
        if node in done or node not in graph:
            return
        for target in sorted(graph[node]):
            visit(target, path + [node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
    return found


def check_file(path, rel, parts, test_part, test_names):
    test = is_test_code(rel, test_names)
    owner = part_of(rel, parts) or (test_part if test else None)
    if owner is None:
        return [f"{path}: no row of the layer table owns {folder_of(rel)}"]
    rules = test_part if test else owner
    found = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = match.group(1)
            reason = judge(target, owner, rules, test, parts)
            if reason:
                found.append(f"{path}:{number}: includes {target}: {reason}")
    return found


def judge(target, owner, rules, test, parts):
    """Why including `target` from a file of `owner` (under `rules`) crosses the table, or ''."""
    if target.startswith(TORCH_PREFIXES):
        return "" if rules.torch else f"{owner} is LibTorch-free"
    rel = target[len("stoker/"):] if target.startswith("stoker/") else target
    folder = folder_of(rel)
    known = {p.folder for p in parts} | {"testing/"}
    if "/" not in rel or folder not in known:
        return ""  # a system or third-party header
    if folder == "testing/":
        return "" if test else "only test code includes testing/"
    included = part_of(rel, parts)
    if included.torch and not owner.torch and not test:
        return f"{owner} is LibTorch-free and {included} is not"
    if folder == owner.folder or folder in rules.allowed:
        return ""
    return f"{owner} may include {' '.join(rules.allowed) or 'no other folder'}"


def self_test():
    """Builds a tree with one crossing of each kind and checks that each is found."""
    table = """# x
## The layers
| folder | owns | may include | LibTorch | library |
|---|---|---|---|---|
| `util/` | u | — | no | core |
| `store/` | s | `util/` | no | core |
| `pipeline/` core | p | `util/` `store/` | no | core |
| `pipeline/` adapter: `loader` | l | `util/` | yes | torch |
| `cli/` | c | `util/` `store/` `pipeline/` | yes | cli |
| test code: `*_test.cc`, `testing/`, `store/fixture` | t | `util/` `store/` `pipeline/` `testing/` | yes | tests |
## The public surface
`stoker/store/x.h` and `stoker/util/gone.h`.
## Next
"""
    files = {
        "docs/ARCHITECTURE.md": table,
        "src/stoker/util/good.h": '#include <vector>\n#include "stoker/util/other.h"\n',
        "src/stoker/util/up.cc": '#include "stoker/store/x.h"\n',
        "src/stoker/store/torch.cc": "#include <ATen/Tensor.h>\n",
        "src/stoker/pipeline/core.cc": '#include "stoker/pipeline/loader.h"\n',
        "src/stoker/pipeline/loader.cc": '#include <torch/nn.h>\n#include "stoker/pipeline/x.h"\n',
        "src/stoker/store/helper.cc": '#include "stoker/testing/temp_dir.h"\n',
        "src/stoker/store/fixture.cc": '#include "stoker/testing/temp_dir.h"\n',
        "src/stoker/store/x_test.cc": '#include "stoker/pipeline/loader.h"\n',
        "src/stoker/testing/helper.h": '#include <ATen/Tensor.h>\n#include "stoker/cli/x.h"\n',
        "src/stoker/cli/main.cc": '#include "util/good.h"\n#include "cli/usage.h"\n',
        "include/stoker/store/x.h": '#include "stoker/pipeline/x.h"\n',
        "include/stoker/util/good.h": "",
        "src/stoker/pipeline/engine.h": '#include "stoker/pipeline/front.h"\n',
        "src/stoker/pipeline/front.h": '#include "stoker/pipeline/engine.h"\n',
    }
    expected = {
        "util/up.cc:1": "may include no other folder",
        "store/torch.cc:1": "LibTorch-free",
        "pipeline/core.cc:1": "LibTorch-free and pipeline/:loader is not",
        "store/helper.cc:1": "only test code",
        "store/x.h:1": "may include util/",
        "include/stoker/util/good.h": "not in ARCHITECTURE.md's public surface",
        "include/stoker/util/gone.h": "not installed",
        "testing/helper.h:2": "test code may include",
        "include cycle": "stoker/pipeline/engine.h -> stoker/pipeline/front.h -> stoker/pipeline/engine.h",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found = crossings(root)
    failures = [f"missed {where} ({why})" for where, why in expected.items()
                if not any(where + ":" in line and why in line for line in found)]
    failures += [f"unexpected: {line}" for line in found
                 if not any(where + ":" in line for where in expected)]
    if len(found) != len(expected):
        failures.append(f"{len(found)} findings for {len(expected)} planted: {found}")
    for failure in failures:
        print("layer_check self-test:", failure)
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    found = crossings(argv[1])
    for line in found:
        print(line)
    if found:
        print(f"layer_check: {len(found)} finding(s) against docs/ARCHITECTURE.md's layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
