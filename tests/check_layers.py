#!/usr/bin/env python3
"""Every #include "<module>/..." in sim/, calibrate/ and reports/ against DESIGN's module table.

The table is read from cmake/layers.cmake (the one copy the build also checks link edges
against): a file in folder F may include headers of F's module and of the modules F's row allows,
with their closure. Prints file:line for each forbidden include and exits 1.

  check_layers.py ROOT          scan a source tree
  check_layers.py --self-test   scan a fake tree holding one forbidden include; fail unless the
                                scan finds exactly it (so this check can be seen to fail)
"""
import pathlib
import re
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([A-Za-z0-9_]+)/')


def read_table(layers_cmake):
    text = layers_cmake.read_text()
    text = re.sub(r"#[^\n]*", "", text)
    layers = re.search(r"set\(MEGASIM_LAYERS\s+([^)]*)\)", text).group(1).split()
    rows = {m: [] for m in layers}
    for m, deps in re.findall(r"set\(MEGASIM_LAYER_([A-Za-z0-9_]+)\s*([^)]*)\)", text):
        rows[m] = [d for d in deps.replace('"', "").split() if d]
    return rows


def closure(rows, module):
    seen, frontier = set(), list(rows[module])
    while frontier:
        m = frontier.pop()
        if m not in seen:
            seen.add(m)
            frontier += rows.get(m, [])
    return seen


def module_of(rel):
    parts = rel.parts
    if parts[0] == "sim" and len(parts) > 2:
        return parts[1]
    if parts[0] == "calibrate":
        return "calibrate_tool" if len(parts) > 2 and parts[1] == "gpu" else "calibrate"
    if parts[0] == "reports":
        return "reports"
    return None


def scan(root, rows):
    errors = []
    for top in ("sim", "calibrate", "reports"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            rel = path.relative_to(root)
            module = module_of(rel)
            if module is None:
                continue
            if module not in rows:
                errors.append(f"{rel}: folder of module '{module}', which cmake/layers.cmake "
                              "does not list")
                continue
            allowed = closure(rows, module) | {module}
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) in rows and m.group(1) not in allowed:
                    errors.append(f"{rel}:{n}: {module} includes {m.group(1)} "
                                  f"(DESIGN.md lets {module} use: "
                                  f"{', '.join(sorted(allowed - {module})) or 'std only'})")
    return errors


def self_test(rows):
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        files = {"sim/engine/time.h": '#include "engine/units.h"\n',
                 "sim/step/x.cpp": '#include "collective/c.h"\n#include "engine/time.h"\n',
                 "sim/engine/bad.cpp": '// fine\n#include <vector>\n#include "io/scenario.h"\n',
                 "reports/r.cpp": '#include "step/step_model.h"\n'}
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        errors = scan(root, rows)
    if len(errors) == 1 and errors[0].startswith("sim/engine/bad.cpp:3: engine includes io"):
        print("self-test: the one forbidden include was found:", errors[0])
        return 0
    print("self-test FAILED: expected exactly sim/engine/bad.cpp:3, got:", *errors, sep="\n  ")
    return 1


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--self-test"
                        else HERE.parent)
    rows = read_table(HERE.parent / "cmake" / "layers.cmake")
    if "--self-test" in sys.argv:
        return self_test(rows)
    errors = scan(root.resolve(), rows)
    for e in errors:
        print(e)
    print(f"{len(errors)} forbidden include(s)" if errors else "layering: every include allowed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
