#!/usr/bin/python3
"""Fits the shared constants that no kernel measurement pins down, on the validation rows
marked "role": "fit", and writes them back with their provenance.

Constants (one value each, shared by every scenario that uses the A100 profile or the
Megatron-LM preset):
  - the A100 GEMM efficiency of the largest size class (calibrate/profiles/a100-sxm4-80gb.json),
  - the GEMM k_half (efficiency scaled by k / (k + k_half) for short reduction dimensions),
  - Megatron-LM's host cost of a blocking pipeline exchange (systems/megatron-lm.json).
Objective: mean absolute relative error of `megasim validate` over the fit rows.
Usage: scripts/fit_shared_constants.py [path/to/megasim] [--write]
"""
import itertools
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
args = [a for a in sys.argv[1:] if not a.startswith("--")]
megasim = args[0] if args else str(root / "build/release/sim/cli/megasim")
profile_path = root / "calibrate/profiles/a100-sxm4-80gb.json"
system_path = root / "systems/megatron-lm.json"


def load(p):
    return json.loads(p.read_text())


def save(p, d):
    p.write_text(json.dumps(d, indent=2, ensure_ascii=False) + "\n")


fit_dir = pathlib.Path(tempfile.mkdtemp())
fit_rows = []
for f in sorted((root / "scenarios/validation").glob("*.json")):
    d = load(f)
    if d.get("validation", {}).get("role") == "fit":
        shutil.copy(f, fit_dir / f.name)
        fit_rows.append(f.stem)
if not fit_rows:
    sys.exit("no validation scenario has role 'fit'")

profile, system = load(profile_path), load(system_path)


def apply(eff, k_half, interference, p2p_us):
    p = json.loads(json.dumps(profile))
    p["interference"]["compute_slowdown"] = interference
    classes = p["gemm_model"]["size_classes"]
    classes[-1]["efficiency"] = eff
    p["gemm_model"]["k_half"] = k_half
    save(profile_path, p)
    s = json.loads(json.dumps(system))
    s["blocking_p2p_overhead"]["us"] = p2p_us
    save(system_path, s)


def objective():
    out = subprocess.run([megasim, "validate", "--json", "--scenarios", str(fit_dir)],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)["rows"]
    return sum(abs(r["error"]) for r in rows) / len(rows), rows


best = None
try:
    # The large-GEMM efficiency stays at the measured best (0.86, see the profile's source):
    # a fit may not exceed what cuBLAS reaches on this GPU. The interference factor keeps the
    # profile's literature estimate: fitting it too leaves the objective flat (it trades off
    # against k_half and the p2p cost), so the data cannot pin it.
    for eff, k_half, interference, p2p in itertools.product(
            [0.86], [256, 384, 448, 512, 576, 640, 768], [profile["interference"]["compute_slowdown"]],
            [0, 100, 200, 300, 400, 500, 600, 800, 1000]):
        apply(eff, k_half, interference, p2p)
        score, rows = objective()
        if best is None or score < best[0]:
            best = (score, eff, k_half, interference, p2p, rows)
finally:
    save(profile_path, profile)
    save(system_path, system)

score, eff, k_half, interference, p2p, rows = best
print(f"fit on {len(fit_rows)} rows: {', '.join(fit_rows)}")
print(f"best: efficiency {eff}, k_half {k_half}, interference {interference}, blocking p2p {p2p} us;"
      f" mean |error| {score:.2%}")
for r in rows:
    print(f"  {r['scenario']:<40} {r['error']:+.1%}")
if "--write" in sys.argv:
    apply(eff, k_half, interference, p2p)
    print("written to", profile_path.name, "and", system_path.name)
