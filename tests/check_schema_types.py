#!/usr/bin/python3
"""The loader's enums and JSON types are the ones scenarios/schema.json states.

For each key of the scenario schema (nested objects included):
- with an `enum`: a value outside it makes `megasim inspect BASE --set KEY=...` exit 2 naming
  the key, and the values the loader lists in that refusal ("'x' is not one of 'a', 'b'") are
  the schema's enum, as a set; each value of the enum is taken (no refusal naming the key as
  "not one of");
- with a `type` (or the schema's `text` definition): a value of another JSON type exits 2
  naming the key and saying what it expected ("expected an integer", "expected true or false",
  "expected a string or an array of strings", ...). A key whose schema states neither a type
  nor an enum is reported;
- with type string: the empty string is refused naming the key ("expected a non-empty
  string") exactly where the schema says minLength 1, and taken where it does not (a schema
  without minLength let `$schema: ""` pass that the loader refused, found 2026-12-05).

Where the key's object has required keys and the base scenario lacks it, the object is set
whole, the others at their minimum (check_schema_bounds.setting). Number bounds are checked by
check_schema_bounds.py, the shipped files by check_schema.py.

  check_schema_types.py --binary MEGASIM --root SOURCE
"""
import json
import pathlib
import re
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_schema_bounds import BASE, arguments, report, setting  # noqa: E402

# A value of another type than the schema's, and the word the loader's refusal must carry.
WRONG = {
    "integer": ("\"x\"", "expected an integer"),
    "number": ("true", "expected a number"),
    "string": ("3", "expected a string"),
    "boolean": ("3", "expected true or false"),
    "object": ("3", "expected an object"),
    "array": ("3", "expected an array"),
    # The schema's `text` definition: a string or an array of strings.
    "#/definitions/text": ("3", "expected a string or an array of strings"),
}


def keys(node, path=""):
    """(dotted path, its schema, the schema of the object holding it) of every key."""
    for key, sub in node.get("properties", {}).items():
        dotted = f"{path}.{key}" if path else key
        yield dotted, sub, node
        if "properties" in sub:
            yield from keys(sub, dotted)


def inspect(binary, root, assignment):
    return subprocess.run([binary, "inspect", BASE, "--set", assignment],
                          cwd=root, capture_output=True, text=True)


def listed_values(stderr, key):
    """The values the loader's "is not one of" refusal for `key` lists, or None."""
    m = re.search(re.escape(key) + r": '[^']*' is not one of (.*)", stderr)
    return None if m is None else set(re.findall(r"'([^']*)'", m.group(1)))


def check_enum(a, base, path, sub, holder):
    key = path.split(".")[-1]
    failures, probes = [], 1
    r = inspect(a.binary, a.root, setting(path, "no-such-value", holder, base))
    listed = listed_values(r.stderr, key)
    if r.returncode != 2 or listed is None:
        failures.append(f"{path} = 'no-such-value': exit {r.returncode}, {r.stderr.strip()[:160]}")
    elif listed != set(sub["enum"]):
        failures.append(f"{path}: the loader takes {sorted(listed)}, the schema says "
                        f"{sorted(sub['enum'])}")
    for value in sub["enum"]:
        probes += 1
        r = inspect(a.binary, a.root, setting(path, value, holder, base))
        if listed_values(r.stderr, key) is not None:
            failures.append(f"{path} = '{value}', in the schema's enum: {r.stderr.strip()[:160]}")
    return failures, probes


def schema_type(sub):
    """The key's JSON type, or the definition it refers to."""
    return sub.get("type", sub.get("$ref"))


def check_type(a, base, path, sub, holder):
    value, expected = WRONG[schema_type(sub)]
    r = inspect(a.binary, a.root, setting(path, json.loads(value), holder, base))
    key = path.split(".")[-1]
    if r.returncode != 2 or f"{key}: {expected}" not in r.stderr:
        return [f"{path} = {value} (schema type {schema_type(sub)}): exit {r.returncode}, "
                f"{r.stderr.strip()[:160]}"], 1
    return [], 1


def check_empty_string(a, base, path, sub, holder):
    r = inspect(a.binary, a.root, setting(path, "", holder, base))
    key = path.split(".")[-1]
    refused = r.returncode == 2 and f"{key}: expected a non-empty string" in r.stderr
    if refused != (sub.get("minLength", 0) >= 1):
        return [f"{path} = \"\": the schema's minLength is {sub.get('minLength', 0)}, and the "
                f"loader {'refuses' if refused else 'takes'} it: {r.stderr.strip()[:160]}"], 1
    return [], 1


def main():
    a, schema, base = arguments()
    failures, probes = [], 0
    for path, sub, holder in keys(schema):
        found = []
        if "enum" in sub:
            found.append(check_enum(a, base, path, sub, holder))
        if schema_type(sub) in WRONG:
            found.append(check_type(a, base, path, sub, holder))
        elif schema_type(sub) is not None:
            failures.append(f"{path}: schema type {schema_type(sub)!r} is not checked here")
        if schema_type(sub) == "string" and "enum" not in sub:
            found.append(check_empty_string(a, base, path, sub, holder))
        if not found:
            failures.append(f"{path}: the schema states neither a type nor an enum")
        for f, n in found:
            failures += f
            probes += n
    return report(failures, probes)


if __name__ == "__main__":
    sys.exit(main())
