#!/usr/bin/env python3
"""What Transformer Engine's cut of the TP overlap costs, the README's table, from today's build.

Each case is simulated with the megatron-core preset as shipped (TE's decomposition) and on a
copy of the data folders whose preset has `tp_overlap_decomposition.enabled` false (the pairs
priced whole), read through MEGASIM_DATA_DIR; the shipped preset is never touched. With --check
the README must hold each row verbatim.

  scripts/te_decomposition.py --binary build/dev/sim/cli/megasim                # print the rows
  scripts/te_decomposition.py --binary ... --check README.md                    # README holds them?
"""
import sys
import tempfile

import readme_check
from preset_copy import simulate, variant

MCORE = "scenarios/validation/mcore-h100-177b-2304.json"
# (label, scenario, --set, published MFU %)
CASES = [
    ("177B on 2,304 H100, VPP 2", MCORE, (), 44),
    ("70B on 768 H100, VPP 2", "scenarios/validation/mcore-h100-70b-768.json", (), 42),
    ("177B strong-scaled, 96 GPUs, VPP 4", MCORE, ("plan.dp=2", "plan.vpp=4"), 47),
    ("177B strong-scaled, 4,608 GPUs, VPP 4", MCORE, ("plan.dp=96", "plan.vpp=4"), 42),
    ("Llama 3 405B on 8,192 H100 (a stand-in preset, below)",
     "scenarios/validation/llama3-405b-8k-8192.json", (), 43),
]


def whole(preset):
    preset["tp_overlap_decomposition"]["enabled"] = False


def rows(binary):
    with tempfile.TemporaryDirectory() as tmp:
        data = variant(tmp, "whole", "megatron-core", whole)
        out = []
        for label, scenario, sets, published in CASES:
            pairs = simulate(binary, scenario, sets, data)["mfu"]
            cut = simulate(binary, scenario, sets)["mfu"]
            out.append(f"| {label} | {100 * pairs:.1f} % | {100 * cut:.1f} % | {published} % |")
    return out


if __name__ == "__main__":
    sys.exit(readme_check.run(__doc__.splitlines()[0], rows, "scripts/te_decomposition.py"))
