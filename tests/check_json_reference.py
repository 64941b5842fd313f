"""Every key `megasim simulate --json` prints is in reports/simulate_json.md.

The shipped scenarios' golden outputs (tests/golden/, which the golden tests hold to the
binary) are walked key by key; each dotted path (arrays as `key[]`, the causes of
`run.interruptions_by_cause` and `run.interruption_sources` as `<cause>`, `timeline_ns` whole) must appear in the reference in
backquotes (`a.{x,y}` stands for both), so a key added to the output fails here until the reference says what it counts. One way only:
the reference also names keys that only some runs print (interval_none, usd_energy), which no
golden holds.
"""
import json
import re
import sys
from pathlib import Path


def paths(value, prefix):
    if prefix == "timeline_ns":
        yield prefix
    elif prefix in ("run.interruptions_by_cause", "run.interruption_sources"):
        yield prefix + ".<cause>"
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for child in value:
            yield from paths(child, prefix + "[]")
    elif isinstance(value, list):
        yield prefix + "[]"  # of numbers or strings, or empty (run.interval_sweep without a sweep)
    else:
        yield prefix


def documented(text):
    """The backquoted paths of the reference, `run.days.{mean,p10}` taken as both."""
    out = set()
    for name in re.findall(r"`([^`]+)`", text):
        m = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", name)
        alternatives = [m.group(1) + a + m.group(3) for a in m.group(2).split(",")] if m else [name]
        out.update(alternatives)
    return out


def main(root: Path) -> int:
    reference = documented((root / "reports/simulate_json.md").read_text(encoding="utf-8"))
    goldens = sorted((root / "tests/golden").rglob("*.json"))
    if not goldens:
        print("no golden JSON outputs under tests/golden")
        return 1
    missing = {}
    for golden in goldens:
        for path in paths(json.loads(golden.read_text(encoding="utf-8")), ""):
            # An array may be named with or without its brackets, or by its members' keys.
            if path not in reference and path.removesuffix("[]") not in reference and not any(
                    d.startswith(path + ".") for d in reference):
                missing.setdefault(path, golden.name)
    for path, golden in sorted(missing.items()):
        print(f"reports/simulate_json.md does not document `{path}` (in {golden})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
