#!/usr/bin/env python3
"""Golden outputs of `megasim simulate` for every shipped scenario.

Each case runs the binary from the repository root with a relative scenario path (so no output
can depend on where the checkout lives) and compares stdout byte for byte with
tests/golden/<stem>.txt (text) and <stem>.json (--json). events.txt holds each case's event
count (simulation.events of the JSON), a fingerprint that says at a glance whether a change
moved the simulation itself or only its printing.

  golden.py --binary B list             the cases, one "stem|scenario|extra args" a line
  golden.py --binary B check STEM       run one case; on mismatch print a unified diff, exit 1
  golden.py --binary B coverage         every shipped scenario has goldens, and no golden is stale
  golden.py --binary B update           rewrite every golden from the binary
"""
import argparse
import difflib
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
EVENTS = GOLDEN / "events.txt"
# Cases beyond one per scenario: the full (unfolded) default step, under a second.
EXTRA = [("megascale-175b-12288.full", "scenarios/megascale-175b-12288.json", ["--full"])]
MAX_DIFF_LINES = 200


def golden_files():
    """Every stored golden output (not this folder's CMakeLists.txt and events.txt)."""
    return [p for p in GOLDEN.rglob("*") if p.suffix in (".txt", ".json") and
            p.relative_to(GOLDEN).as_posix() not in ("CMakeLists.txt", "events.txt")]


def scenarios():
    files = sorted(ROOT.glob("scenarios/*.json")) + sorted(ROOT.glob("scenarios/validation/*.json"))
    return [f.relative_to(ROOT).as_posix() for f in files if f.name != "schema.json"]


def cases():
    out = []
    for s in scenarios():
        out.append((s[len("scenarios/"):-len(".json")], s, []))
    return out + EXTRA


def run(binary, scenario, args, json_out):
    cmd = [binary, "simulate", scenario, *args] + (["--json"] if json_out else [])
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr.decode(errors='replace')}")
    return p.stdout


def events_of(json_bytes):
    return json.loads(json_bytes)["simulation"]["events"]


def read_events():
    table = {}
    if EVENTS.exists():
        for line in EVENTS.read_text().splitlines():
            if line and not line.startswith("#"):
                stem, events = line.split()[:2]
                table[stem] = int(events)
    return table


def diff(expected_path, got):
    expected = expected_path.read_bytes() if expected_path.exists() else b""
    if expected == got:
        return True
    rel = expected_path.relative_to(ROOT).as_posix()
    lines = list(difflib.unified_diff(expected.decode(errors="replace").splitlines(True),
                                      got.decode(errors="replace").splitlines(True),
                                      fromfile=rel, tofile="megasim output"))
    if not expected_path.exists():
        print(f"{rel}: missing")
    sys.stdout.writelines(lines[:MAX_DIFF_LINES])
    if len(lines) > MAX_DIFF_LINES:
        print(f"... {len(lines) - MAX_DIFF_LINES} more diff lines")
    return False


def check(binary, stem):
    case = next((c for c in cases() if c[0] == stem), None)
    if case is None:
        sys.exit(f"no golden case {stem}")
    _, scenario, args = case
    text, js = run(binary, scenario, args, False), run(binary, scenario, args, True)
    ok = True
    expected_events = read_events().get(stem)
    if expected_events != events_of(js):
        print(f"{stem}: event count {expected_events} in events.txt, {events_of(js)} now")
        ok = False
    ok &= diff(GOLDEN / f"{stem}.txt", text)
    ok &= diff(GOLDEN / f"{stem}.json", js)
    if not ok:
        print("If the change is intended: scripts/update-goldens.sh, and say why in the commit.")
    return 0 if ok else 1


def coverage():
    want = {c[0] for c in cases()}
    have = {p.relative_to(GOLDEN).as_posix().rsplit(".", 1)[0] for p in golden_files()}
    missing, stale = sorted(want - have), sorted(have - want)
    for m in missing:
        print(f"no golden for case {m}: run scripts/update-goldens.sh")
    for s in stale:
        print(f"golden {s} has no scenario: delete it")
    if set(read_events()) != want:
        print("events.txt does not list exactly the cases: run scripts/update-goldens.sh")
        return 1
    return 1 if missing or stale else 0


RESIDUALS = ROOT / "validation/residuals.json"


def validate_json(binary):
    p = subprocess.run([binary, "validate", "--json"], cwd=ROOT, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"megasim validate --json exited {p.returncode}:\n{p.stderr.decode(errors='replace')}")
    return p.stdout


def residuals(binary):
    """validation/residuals.json, which `simulate` draws its error bands from, is today's
    `megasim validate --json`."""
    ok = diff(RESIDUALS, validate_json(binary))
    if not ok:
        print("If the change is intended: scripts/update-goldens.sh, and say why in the commit.")
    return 0 if ok else 1


def update(binary):
    # The residuals first: every simulate output's error band is drawn from them.
    RESIDUALS.write_bytes(validate_json(binary))
    for p in golden_files():
        p.unlink()
    rows = ["# golden case, simulation.events, mode, ranks simulated (scripts/update-goldens.sh)"]
    for stem, scenario, args in cases():
        text, js = run(binary, scenario, args, False), run(binary, scenario, args, True)
        (GOLDEN / stem).parent.mkdir(parents=True, exist_ok=True)
        (GOLDEN / f"{stem}.txt").write_bytes(text)
        (GOLDEN / f"{stem}.json").write_bytes(js)
        sim = json.loads(js)["simulation"]
        rows.append(f"{stem} {sim['events']} {sim['mode']} {sim['ranks_simulated']}")
    EVENTS.write_text("\n".join(rows) + "\n")
    print(f"wrote {len(rows) - 1} cases under {GOLDEN.relative_to(ROOT)}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("mode", choices=["list", "check", "coverage", "residuals", "update"])
    ap.add_argument("stem", nargs="?")
    a = ap.parse_args()
    binary = str(pathlib.Path(a.binary).resolve())
    if a.mode == "list":
        for stem, scenario, args in cases():
            print(f"{stem}|{scenario}|{' '.join(args)}")
        return 0
    if a.mode == "check":
        return check(binary, a.stem)
    if a.mode == "coverage":
        return coverage()
    if a.mode == "residuals":
        return residuals(binary)
    return update(binary)


if __name__ == "__main__":
    sys.exit(main())
