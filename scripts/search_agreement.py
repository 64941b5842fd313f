#!/usr/bin/env python3
"""The README's table of `megasim search`'s estimate against its event level, from today's build.

For each scenario, `search --top 200 --json` re-simulates the 200 best plans by estimate event
by event (all of them where fewer are feasible; the scenario's own plan too, where it falls
beyond). Each row: how many plans were compared, the Spearman rank correlation of the two step
times (ordinal ranks, the formula of tests/plan/search_agreement_test.cpp), and whether the
estimate's first plan is the event-level best (else how much slower it simulates). With --check
the README must hold every row verbatim.

  scripts/search_agreement.py --binary build/dev/sim/cli/megasim              # print the rows
  scripts/search_agreement.py --binary ... --check README.md                  # README holds them?
"""
import json
import subprocess
import sys
from pathlib import Path

import readme_check

ROOT = Path(__file__).resolve().parent.parent

# (scenario file, the name the table gives it)
SCENARIOS = (
    ("scenarios/validation/megascale-175b-256-megascale-iteration.json",
     "megascale-175b-256-megascale-iteration"),
    ("scenarios/validation/megascale-175b-256-megatron-iteration.json",
     "megascale-175b-256-megatron-iteration"),
    ("scenarios/validation/korthikanti-175b-selective.json", "korthikanti-175b-selective (64 GPUs)"),
    ("scenarios/validation/korthikanti-22b-selective.json", "korthikanti-22b-selective (8 GPUs)"),
    ("scenarios/megascale-production-530b.json", "megascale-production-530b (12,040 GPUs)"),
    ("scenarios/validation/sc21-t1-18.4b.json", "sc21-t1-18.4b (256 GPUs)"),
    ("scenarios/validation/sc21-t1-39.1b.json", "sc21-t1-39.1b (512 GPUs)"),
    ("scenarios/megascale-175b-12288.json", "megascale-175b-12288"),
    ("scenarios/validation/mcore-h100-70b-768.json", "mcore-h100-70b-768"),
    ("scenarios/validation/mcore-h100-177b-2304.json", "mcore-h100-177b-2304"),
)


def ordinal_ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0] * len(values)
    for k, i in enumerate(order):
        ranks[i] = k
    return ranks


def spearman(a, b):
    ra, rb = ordinal_ranks(a), ordinal_ranks(b)
    n = len(a)
    d2 = sum((x - y) ** 2 for x, y in zip(ra, rb))
    return 1.0 - 6.0 * d2 / (n * (n * n - 1.0))


def row(binary, scenario, name):
    out = subprocess.run([binary, "search", str(ROOT / scenario), "--top", "200", "--json"],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    ranked = result["ranked"]
    event = [r["step_time_s"] for r in ranked]
    estimate = [r["analytic"]["step_time_s"] for r in ranked]
    first = min(range(len(ranked)), key=lambda i: estimate[i])
    best = min(event)
    same = "yes" if event[first] == best else f"no: {100 * (event[first] / best - 1):.2f} % slower"
    feasible = result["space"]["feasible"]
    plans = f"all {len(ranked)}" if len(ranked) == feasible else f"{len(ranked)} of {feasible:,}"
    return f"| {name} | {plans} | {spearman(estimate, event):.3f} | {same} |"


def rows(binary):
    return [row(binary, scenario, name) for scenario, name in SCENARIOS]


if __name__ == "__main__":
    sys.exit(readme_check.run(__doc__.splitlines()[0], rows, "scripts/search_agreement.py"))
