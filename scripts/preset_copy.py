"""A copy of megasim's data folders with one preset changed, and simulate run on it.

The shipped presets are never touched: each variant is a copy under a temporary folder, which
megasim reads through MEGASIM_DATA_DIR (sim/io/resolve.cpp). Used by the scripts that hold a
README's what-a-key-costs figures to today's build (zero3_ablation.py, te_decomposition.py).
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ["calibrate", "models", "power", "reliability", "systems", "topologies", "validation"]


def variant(tmp, name, preset, change):
    """A copy of the data folders under tmp/name whose systems/<preset>.json `change` edits."""
    root = Path(tmp) / name
    for d in DATA:
        shutil.copytree(ROOT / d, root / d)
    path = root / "systems" / f"{preset}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return root


def simulate(binary, scenario, sets=(), data_dir=None):
    """`megasim simulate --json` of a scenario (a path under the repository), on data_dir's data
    or, without it, on the repository's own (a MEGASIM_DATA_DIR of the caller's is not read: the
    variants are copies of the repository's folders, so both sides of a difference are)."""
    env = dict(os.environ)
    env.pop("MEGASIM_DATA_DIR", None)
    if data_dir is not None:
        env["MEGASIM_DATA_DIR"] = str(data_dir)
    args = [binary, "simulate", str(ROOT / scenario), "--json"]
    for s in sets:
        args += ["--set", s]
    return json.loads(subprocess.run(args, env=env, check=True, capture_output=True,
                                     text=True).stdout)
