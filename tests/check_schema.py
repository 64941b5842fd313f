#!/usr/bin/python3
"""Every shipped scenario validates against scenarios/schema.json (Debian's python3-jsonschema).

The key-set agreement between schema and loader is checked by the C++ test
io/scenario_test.cpp ("schema and loader know the same keys"); this script checks the files.
"""
import json
import pathlib
import sys

import jsonschema

root = pathlib.Path(sys.argv[1])
schema = json.loads((root / "schema.json").read_text())
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)
files = sorted(p for p in root.rglob("*.json") if p.name != "schema.json")
failed = 0
for path in files:
    errors = list(validator.iter_errors(json.loads(path.read_text())))
    for e in errors:
        print(f"{path}: {'.'.join(map(str, e.path)) or '<root>'}: {e.message}")
    failed += bool(errors)
print(f"{len(files) - failed} passed, {failed} failed")
sys.exit(1 if failed or not files else 0)
