#!/usr/bin/env python3
"""The HTML pages' number formatting (reports/html/common.js: fixed, general) against the
text reports', which fmt and C's printf give and Python's format gives alike: the double's
exact value, ties to even, %g's trailing zeros dropped. The page rounded ties and shortest
forms away from zero until 2026-12-06 (8.25 as 8.3, 74.05 stored as 74.0499... as 74.1,
0.03125 as 0.0313); the page prints no negative zero, by design. Run with node; skipped (77)
without it."""
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path


def function_source(text, name):
    start = text.index(f"  function {name}(")
    depth = 0
    for i in range(text.index("{", start), len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    raise ValueError(name)


def main():
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        print("SKIP: no node")
        return 77
    source = (Path(sys.argv[1]) / "reports/html/common.js").read_text(encoding="utf-8")
    rng = random.Random(1)
    values = [8.25, 74.05, 2.675, -92.6745, 0.03125, 0.05, 1e-7, 0.5, 1.5, 2.5, 9.995, 99.995,
              0.0999999, 100.0, 999.5, 123456.785, 1e21, 1.5e22, 0.125, 1 / 3, 12.75, 7.25]
    for _ in range(3000):
        kind = rng.randrange(3)
        if kind == 0:
            values.append(rng.randrange(100000) / rng.choice([4, 8, 20, 40, 100, 1000]))
        elif kind == 1:
            values.append(rng.uniform(-1e6, 1e6))
        else:
            values.append(10 ** rng.uniform(-8, 16) * rng.choice([1, -1]))
    cases = [("f", v, d, format(v, f".{d}f")) for v in values for d in range(4)]
    cases += [("g", v, 3, format(v, ".3g")) for v in values if v > 0]
    script = "".join(function_source(source, n) for n in ("roundDigits", "fixed", "general"))
    script += """
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(cases.map(([k, v, d]) => (k === 'f' ? fixed(v, d) : general(v, d)))));
"""
    out = subprocess.run([node, "-e", script], input=json.dumps([c[:3] for c in cases]),
                         capture_output=True, text=True, check=True).stdout
    failures = []
    for (kind, value, digits, want), got in zip(cases, json.loads(out)):
        if kind == "f" and want.startswith("-") and got == want[1:] and not any(
                c in "123456789" for c in want):
            continue  # no negative zero on the page
        if got != want:
            failures.append(f"{kind} {value!r} {digits}: page {got!r}, text {want!r}")
    for line in failures[:20]:
        print("FAIL", line)
    print(f"{len(cases)} numbers, {len(failures)} formatted otherwise than the text")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
