#!/usr/bin/env python3
"""The README's headline figures against the golden outputs they were read from.

The goldens (tests/golden/) pin what megasim prints; this pins what the README says it prints,
so a change that moves a figure fails until the README is brought along. Each check names the
README line it looks for and the golden value it formats.
"""
import json
import sys
from pathlib import Path


def main(root: Path) -> int:
    readme = (root / "README.md").read_text(encoding="utf-8")
    default = json.loads((root / "tests/golden/megascale-175b-12288.json").read_text())
    production = json.loads((root / "tests/golden/megascale-production-530b.json").read_text())
    bf16 = json.loads((root / "tests/golden/validation/mcore-h100-177b-2304.json").read_text())
    fp8 = json.loads((root / "tests/golden/mcore-h100-177b-fp8.json").read_text())
    llama = json.loads((root / "tests/golden/validation/llama3-405b-8k-8192.json").read_text())
    peak = lambda g: max(s["total_gib"] for s in g["memory_per_stage"])
    expected = [
        f"| step time | {default['step_time_s']:.2f} s |",
        f"| MFU | {100 * default['mfu']:.1f} % | 55.2 %",
        f"| memory per GPU | {default['memory_per_stage'][0]['total_gib']:.1f} GiB (stage 0) |",
        f"| IT power, peak | {default['power']['it_peak_mw']:.2f} MW",
        f"| MFU | {100 * production['mfu']:.1f} % | same step |",
        "| wall-clock days (p10 / p50 / p90) | {:.1f} / {:.1f} / {:.1f}".format(
            production["run"]["days"]["p10"], production["run"]["days"]["p50"],
            production["run"]["days"]["p90"]),
        f"| effective training time (goodput) | {100 * production['run']['goodput']['mean']:.1f} %",
        "| MFU of the running job (evaluation, checkpoint stalls, stragglers) | "
        f"{100 * production['run']['running_mfu']:.1f} % |",
        "| `mcore-h100-177b-2304` | {:.3f} s, {:.1f} % | {:.3f} s, {:.1f} % | {:.2f}× | "
        "{:.1f} → {:.1f} GiB |".format(
            bf16["step_time_s"], 100 * bf16["mfu"], fp8["step_time_s"], 100 * fp8["mfu"],
            bf16["step_time_s"] / fp8["step_time_s"], peak(bf16), peak(fp8)),
        f"With both, {100 * llama['mfu']:.1f} % (was 54.8 %)",
        f"rank_order=tp-cp-pp-dp                          {llama['step_time_s']:.3f}    "
        f"{100 * llama['mfu']:.1f}",
    ]
    missing = [line for line in expected if line not in readme]
    for line in missing:
        print(f"README.md does not say: {line!r} (from the golden output)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
