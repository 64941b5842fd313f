#!/usr/bin/python3
"""Fits the shared constants that no kernel measurement pins down (scripts/shared_constants.py)
on the validation rows marked "role": "fit", and with --write writes the values back (their
source texts, in the profile and the preset, are kept by hand).
Objective: mean absolute relative error of `megasim validate` over the fit rows.
Usage: scripts/fit_shared_constants.py [path/to/megasim] [--write]
"""
import pathlib
import shutil
import sys
import tempfile

import shared_constants as sc

args = [a for a in sys.argv[1:] if not a.startswith("--")]
megasim = args[0] if args else str(sc.root / "build/release/sim/cli/megasim")

fit_dir = pathlib.Path(tempfile.mkdtemp())
fit_rows = []
for f in sorted((sc.root / "scenarios/validation").glob("*.json")):
    if sc.load(f).get("validation", {}).get("role") == "fit":
        shutil.copy(f, fit_dir / f.name)
        fit_rows.append(f.stem)
if not fit_rows:
    sys.exit("no validation scenario has role 'fit'")

(score, k_half, p2p, rows), _ = sc.search(megasim, fit_dir)
print(f"fit on {len(fit_rows)} rows: {', '.join(fit_rows)}")
print(f"best: efficiency {sc.EFFICIENCY}, k_half {k_half}, blocking p2p {p2p} us;"
      f" mean |error| {score:.2%}")
for r in rows:
    print(f"  {r['scenario']:<40} {r['error']:+.1%}")
if "--write" in sys.argv:
    sc.apply(sc.load(sc.profile_path), sc.load(sc.system_path), k_half, p2p)
    print("written to", sc.profile_path.name, "and", sc.system_path.name)
