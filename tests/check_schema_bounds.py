#!/usr/bin/python3
"""The loader takes every number at a bound scenarios/schema.json states and refuses, by the
key's name, every number just past one; and the schema states both bounds of every number key.

For each integer or number key of the scenario schema (nested objects included): the schema
gives its minimum and maximum (the loader has both for each); `megasim inspect BASE --set
KEY=max+1` and `KEY=min-1` exit 2 with the key named, and at max and min no range error names
the key (other keys' rules may refuse the plan there). Where the key's object has required
keys and the base scenario lacks it, the object is set whole, the others at their minimum. A
schema bound looser than the loader's shows up at the bound; a stricter one shows up past it,
unless another key's rule refuses the plan there first (naming this key). The shipped files
are checked by check_schema.py.

  check_schema_bounds.py --binary MEGASIM --root SOURCE
"""
import argparse
import json
import pathlib
import subprocess
import sys

BASE = "scenarios/validation/sc21-t1-1.7b.json"


def number_keys(node, path=""):
    """(dotted path, its schema, the schema of the object holding it) of every number key."""
    for key, sub in node.get("properties", {}).items():
        dotted = f"{path}.{key}" if path else key
        if sub.get("type") in ("integer", "number"):
            yield dotted, sub, node
        if "properties" in sub:
            yield from number_keys(sub, dotted)


def setting(path, value, holder, base):
    """The --set that puts `value` at `path`: where the base scenario lacks the holder object and
    it has required keys, the object whole, the others at their minimum."""
    required = [k for k in holder.get("required", []) if k != path.split(".")[-1]]
    node = base
    for part in path.split(".")[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not required or isinstance(node, dict):
        return f"{path}={json.dumps(value)}"
    parent, key = path.rsplit(".", 1)
    whole = {k: holder["properties"][k].get("minimum", 1) for k in required}
    whole[key] = value
    return f"{parent}={json.dumps(whole)}"


def arguments():
    """--binary and --root, the scenario schema and the base scenario."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--root", required=True, type=pathlib.Path)
    a = ap.parse_args()
    schema = json.loads((a.root / "scenarios/schema.json").read_text())
    return a, schema, json.loads((a.root / BASE).read_text())


def main():
    a, schema, base = arguments()
    failures, probes = [], 0
    for path, sub, holder in number_keys(schema):
        if "maximum" not in sub or "minimum" not in sub:
            failures.append(f"{path}: the schema states no minimum or maximum")
            continue
        # At the bound itself the key's own range check must pass (other keys' rules may not).
        for value in (sub["maximum"], sub["minimum"]):
            probes += 1
            r = subprocess.run(
                [a.binary, "inspect", BASE, "--set", setting(path, value, holder, base)],
                cwd=a.root, capture_output=True, text=True)
            if "out of range" in r.stderr and path.split(".")[-1] in r.stderr:
                failures.append(f"{path} = {value}, the schema's bound: {r.stderr.strip()[:160]}")
        step = 1 if sub["type"] == "integer" else max(1e-6, abs(sub["maximum"]) * 1e-3)
        for value in (sub["maximum"] + step, sub["minimum"] - step):
            probes += 1
            r = subprocess.run(
                [a.binary, "inspect", BASE, "--set", setting(path, value, holder, base)],
                cwd=a.root, capture_output=True, text=True)
            if r.returncode != 2 or path.split(".")[-1] not in r.stderr:
                failures.append(f"{path} = {value}: exit {r.returncode}, {r.stderr.strip()[:160]}")
    return report(failures, probes)


def report(failures, probes):
    """Prints the failures and the tally; the exit status (1 for a failure or no probe)."""
    for f in failures:
        print("FAIL " + f)
    print(f"{probes - len(failures)} of {probes} probes as the schema says")
    return 1 if failures or probes == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
