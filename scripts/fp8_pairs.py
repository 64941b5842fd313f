#!/usr/bin/env python3
"""plan.fp8 against NVIDIA's published BF16/FP8 pairs on H100 (a check, not validation rows).

NVIDIA's DGX Cloud benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking, "Expected
Performance" tables) publish the step time of one plan in BF16 and in FP8 (delayed scaling in
these releases). Each pair here is simulated with the recipe's plan on the DGX H100 SuperPOD and
the megatron-core preset, in bf16 and with plan.fp8 and plan.fp8_params (the recipes set
fp8_params with FP8). A plan megasim's memory model refuses on the H100 profile is run again on a copy of
the H100 profile at 96 GiB, written to a temporary folder and never shipped, and marked †. The
published step times are typed from the READMEs linked in the output; nothing is fitted to them.
One source: they are not rows of validation/published_runs.json.

  scripts/fp8_pairs.py --binary build/dev/sim/cli/megasim                  # print the table
  scripts/fp8_pairs.py --binary ... --check README.md                      # README holds it?
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import readme_check

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "https://github.com/NVIDIA/dgxc-benchmarking/blob/{}/{}"
V24_11 = ("v24.11.1", "35a9aecc8d5b17d99d80f52f38c75ade0dbab7ae")
V25_02 = ("v25.02", "8f5cbb3799ea8cc031ed2c2cee1cbdbc15b240ad")
V24_09 = ("v24.09", "143b90dd91f9be958fed4773ae95d941a3356a82")
# (label, model, plan, [(release, README, published bf16 s, published fp8 s)]). GPT-3's plan is
# v25.02's nemo_megatron/gpt3_175b_hydra.yaml (VP 6, grad_sync_dtype bf16, dropout 0.1); the
# 405B one is the README's (its YAML is not in the repository: NeMo's default fp32 gradients).
PAIRS = [
    ("GPT-3 175B, 128 H100 (TP 4, PP 8, VP 6, seq 2048)", "gpt3-175b",
     {"tp": 4, "pp": 8, "vpp": 6, "dp": 4, "micro_batch": 1, "global_batch": 256,
      "fp32_gradients": False},
     [(V25_02, "nemo_megatron/README_175b.md", 8.309, 5.626)]),
    ("Llama 3.1 405B, 576 H100 (TP 8, PP 9, CP 2, VP 7, seq 8192)", "llama3-405b-like",
     {"tp": 8, "pp": 9, "vpp": 7, "cp": 2, "dp": 4, "micro_batch": 1, "global_batch": 252},
     [(V24_11, "llama3.1/README_405b.md", 17.20, 11.24),
      (V25_02, "llama3.1/README_405b.md", 17.50, 11.00)]),
    # The same recipe weak-scaled (batch 252 per 576 GPUs), NeMo 24.09's table.
    ("Llama 3.1 405B, 1,152 H100 (TP 8, PP 9, CP 2, VP 7, seq 8192)", "llama3-405b-like",
     {"tp": 8, "pp": 9, "vpp": 7, "cp": 2, "dp": 8, "micro_batch": 1, "global_batch": 504},
     [(V24_09, "llama3.1/README_405b.md", 17.52, 11.31)]),
    ("Llama 3.1 405B, 2,304 H100 (TP 8, PP 9, CP 2, VP 7, seq 8192)", "llama3-405b-like",
     {"tp": 8, "pp": 9, "vpp": 7, "cp": 2, "dp": 16, "micro_batch": 1, "global_batch": 1008},
     [(V24_09, "llama3.1/README_405b.md", 17.62, 12.35)]),
]


def step_time(binary, scenario, fp8, big_device):
    """The step time, and whether it needed the 96-GiB copy of the profile."""
    for device, marked in (("h100-sxm5-80gb", False), (str(big_device), True)):
        run = subprocess.run([binary, "simulate", str(scenario), "--json",
                              "--set", f"device={device}",
                              "--set", f"plan.fp8={'true' if fp8 else 'false'}",
                              "--set", f"plan.fp8_params={'true' if fp8 else 'false'}"],
                             capture_output=True, text=True)
        if run.returncode == 0:
            return json.loads(run.stdout)["step_time_s"], marked
        if "needs" not in run.stderr or marked:
            sys.exit(f"megasim failed on {scenario}: {run.stderr.strip()}")
    raise AssertionError("unreachable")


def table(binary):
    """The table's lines, header included."""
    profile = json.loads((ROOT / "calibrate/profiles/h100-sxm5-80gb.json").read_text())
    profile["name"] = "h100-sxm5-96gb-diagnosis"
    profile["memory_gib"] = 96
    lines = ["| plan | release | bf16 step: NVIDIA, megasim | FP8 step: NVIDIA, megasim "
             "| FP8 speed-up: NVIDIA, megasim |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "h100-96gb.json"
        big.write_text(json.dumps(profile))
        for label, model, plan, rows in PAIRS:
            scenario = Path(tmp) / f"{model}.json"
            scenario.write_text(json.dumps({
                "name": f"fp8-pair-{model}", "model": model, "cluster": "dgx-h100-superpod-6144",
                "device": "h100-sxm5-80gb",
                "plan": dict(plan, sequence_parallel=True, distributed_optimizer=True,
                             recompute="none"),
                "optimizations": {"preset": "megatron-core"}}))
            bf16, bf16_big = step_time(binary, scenario, False, big)
            fp8, fp8_big = step_time(binary, scenario, True, big)
            mark = lambda big_device: "†" if big_device else ""
            for (release, commit), readme, pub_bf16, pub_fp8 in rows:
                lines.append(
                    f"| {label} | [{release}]({SOURCE.format(commit, readme)}) "
                    f"| {pub_bf16:.2f} s, {bf16:.2f} s{mark(bf16_big)} "
                    f"({100 * (bf16 / pub_bf16 - 1):+.0f} %) "
                    f"| {pub_fp8:.2f} s, {fp8:.2f} s{mark(fp8_big)} "
                    f"({100 * (fp8 / pub_fp8 - 1):+.0f} %) "
                    f"| {pub_bf16 / pub_fp8:.2f}×, {bf16 / fp8:.2f}× |")
    return lines


if __name__ == "__main__":
    sys.exit(readme_check.run(__doc__.splitlines()[0], table, "scripts/fp8_pairs.py"))
