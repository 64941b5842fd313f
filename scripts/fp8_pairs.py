#!/usr/bin/env python3
"""plan.fp8 against NVIDIA's published BF16/FP8 pairs on H100 (a check, not validation rows).

NVIDIA's DGX Cloud benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking, "Expected
Performance" tables) publish the step time of one plan in BF16 and in FP8 (delayed scaling in
these releases). Each pair here is simulated with the same plan on the DGX H100 SuperPOD and the
megatron-core preset, in bf16 and with plan.fp8. megasim's memory model refuses both plans at
80 GiB (GPT-3 175B with FP8 at 80.5 GiB, Llama 3.1 405B at 81.9 and 87.8), where NVIDIA ran
them, so they run on a copy of the H100 profile at 96 GiB, written to a temporary folder and
never shipped. The published step times are typed from the READMEs named below; nothing is
fitted to them. One source: they are not rows of validation/published_runs.json.

  scripts/fp8_pairs.py --binary build/dev/sim/cli/megasim                  # print the table
  scripts/fp8_pairs.py --binary ... --check README.md                      # README holds it?
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "https://github.com/NVIDIA/dgxc-benchmarking/blob/{}/{}"
# (name, model, plan, [(release, commit, README, published bf16 s, published fp8 s)])
PAIRS = [
    ("GPT-3 175B, 128 H100 (TP 4, PP 8, VP 12, seq 2048)", "gpt3-175b",
     {"tp": 4, "pp": 8, "vpp": 12, "dp": 4, "micro_batch": 1, "global_batch": 256},
     [("v24.11.1", "35a9aecc8d5b17d99d80f52f38c75ade0dbab7ae", "nemo_megatron/README_175b.md",
       8.91, 5.92),
      ("v25.02", "8f5cbb3799ea8cc031ed2c2cee1cbdbc15b240ad", "nemo_megatron/README_175b.md",
       8.309, 5.626)]),
    ("Llama 3.1 405B, 576 H100 (TP 8, PP 9, CP 2, VP 7, seq 8192)", "llama3-405b-like",
     {"tp": 8, "pp": 9, "vpp": 7, "cp": 2, "dp": 4, "micro_batch": 1, "global_batch": 252},
     [("v24.11.1", "35a9aecc8d5b17d99d80f52f38c75ade0dbab7ae", "llama3.1/README_405b.md",
       17.20, 11.24),
      ("v25.02", "8f5cbb3799ea8cc031ed2c2cee1cbdbc15b240ad", "llama3.1/README_405b.md",
       17.50, 11.00)]),
]


def step_time(binary, scenario, fp8):
    out = subprocess.run([binary, "simulate", str(scenario), "--json", "--set",
                          f"plan.fp8={'true' if fp8 else 'false'}"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["step_time_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--check", help="a README that must hold the table's rows verbatim")
    args = ap.parse_args()
    profile = json.loads((ROOT / "calibrate/profiles/h100-sxm5-80gb.json").read_text())
    profile["name"] = "h100-sxm5-96gb-diagnosis"
    profile["memory_gib"] = 96
    lines = ["| plan | release | bf16 step: NVIDIA, megasim | FP8 step: NVIDIA, megasim "
             "| FP8 speed-up: NVIDIA, megasim |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        device = Path(tmp) / "h100-96gb.json"
        device.write_text(json.dumps(profile))
        for name, model, plan, rows in PAIRS:
            scenario = Path(tmp) / f"{model}.json"
            scenario.write_text(json.dumps({
                "name": f"fp8-pair-{model}", "model": model, "cluster": "dgx-h100-superpod-6144",
                "device": str(device),
                "plan": dict(plan, sequence_parallel=True, distributed_optimizer=True,
                             recompute="none"),
                "optimizations": {"preset": "megatron-core"}}))
            bf16, fp8 = step_time(args.binary, scenario, False), step_time(args.binary, scenario, True)
            for release, commit, readme, pub_bf16, pub_fp8 in rows:
                lines.append(f"| {name} | [{release}]({SOURCE.format(commit, readme)}) "
                      f"| {pub_bf16:.2f} s, {bf16:.2f} s ({100 * (bf16 / pub_bf16 - 1):+.0f} %) "
                      f"| {pub_fp8:.2f} s, {fp8:.2f} s ({100 * (fp8 / pub_fp8 - 1):+.0f} %) "
                             f"| {pub_bf16 / pub_fp8:.2f}×, {bf16 / fp8:.2f}× |")
    if not args.check:
        print("\n".join(lines))
        return 0
    readme = Path(args.check).read_text(encoding="utf-8")
    missing = [line for line in lines if line not in readme]
    for line in missing:
        print(f"{args.check} does not say: {line!r}; regenerate with scripts/fp8_pairs.py")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
