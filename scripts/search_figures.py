#!/usr/bin/env python3
"""The figures of the README's "What it recommends" table, from today's `megasim search`.

For MegaScale's 175B on 12,288 GPUs and the 530B production run, `search --json` is run and
the figures the README quotes are formed from it: the scenario's own plan (step, MFU, free
memory, its rank among the plans simulated event by event), the best plan (the same), what
separates them (bubble and compute), the next plan of the best one's kind with another pipeline
depth, and the estimate's rank of the best plan. The plan columns themselves are not checked. With --check
every one must appear in the README verbatim; the table's prose around them is the README's.

  scripts/search_figures.py --binary build/dev/sim/cli/megasim                  # print them
  scripts/search_figures.py --binary ... --check README.md                      # README holds them?
"""
import json
import subprocess
import sys
from pathlib import Path

import readme_check

ROOT = Path(__file__).resolve().parent.parent


def ordinal(n):
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def search(binary, scenario):
    out = subprocess.run([binary, "search", str(ROOT / scenario), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["ranked"]


def figures(binary):
    """The strings the README must hold."""
    want = []
    for scenario, mfu_word in (("scenarios/megascale-175b-12288.json", " MFU"),
                               ("scenarios/megascale-production-530b.json", "")):
        ranked = search(binary, scenario)
        own_rank = next(i for i, r in enumerate(ranked) if r["scenario_plan"]) + 1
        own, best = ranked[own_rank - 1], ranked[0]
        want.append(f"{own['step_time_s']:.2f} s, {100 * own['mfu']:.1f} %{mfu_word}, "
                    f"{own['memory_headroom_gib']:.1f} GiB free; {ordinal(own_rank)} of {len(ranked)}")
        want.append(f"**{best['step_time_s']:.2f} s, {100 * best['mfu']:.1f} %**, "
                    f"{best['memory_headroom_gib']:.1f} GiB free")
        want.append(f"bubble {own['breakdown_s']['bubble']:.2f} → "
                    f"{best['breakdown_s']['bubble']:.2f} s")
        if mfu_word:
            want.append(f"compute {own['breakdown_s']['compute']:.2f} → "
                        f"{best['breakdown_s']['compute']:.2f} s")
            # The next plan of the best one's kind with another pipeline depth.
            kind = lambda r: {k: v for k, v in r["plan"].items()
                              if k not in ("pp", "dp", "gpus", "micro_batches_per_replica")}
            rank, other = next((i + 1, r) for i, r in enumerate(ranked)
                               if i > 0 and kind(r) == kind(best) and r["plan"]["pp"] !=
                               best["plan"]["pp"])
            want.append(f"(PP {other['plan']['pp']} of the same kind, "
                        f"{other['step_time_s']:.2f} s, {ordinal(rank)})")
            by_estimate = sorted(ranked, key=lambda r: r["analytic"]["step_time_s"])
            estimate_rank = by_estimate.index(best) + 1
            want.append(f"At 12,288 GPUs the plan it recommends is the estimate's "
                        f"{ordinal(estimate_rank)}")
    return want


if __name__ == "__main__":
    sys.exit(readme_check.run(__doc__.splitlines()[0], figures, "scripts/search_figures.py"))
