#!/usr/bin/env python3
"""The README's headline figures against the golden outputs they were read from.

The goldens (tests/golden/) pin what megasim prints; this pins what the README says it prints,
so a change that moves a figure fails until the README is brought along. Each check names the
README line it looks for and the golden value it formats.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from readme_check import flat  # noqa: E402  (the scripts folder is not a package)


def megatron_fixed_cost(root: Path):
    """The README's Table 3/Table 2 pair: per micro-batch and fixed cost, published and megasim's.

    One plan (TP 8, PP 8, VPP 6, DP 4) at batch 256 (64 micro-batches, Table 3's Megatron-LM
    baseline) and 768 (192, Table 2's Megatron-LM row); a straight line through the two steps.
    """
    runs = {r["id"]: r for r in json.loads(
        (root / "validation/published_runs.json").read_text(encoding="utf-8"))["runs"]}
    row = runs["megascale-175b-256-megatron"]["measured"]
    baseline = runs["megascale-ablation"]["steps"][0]["mfu"]
    short = row["iteration_time_s"] * (256 / 768) * (row["mfu"] / baseline)
    published = (row["iteration_time_s"] - short) / 128
    golden = root / "tests/golden/validation"
    at256 = json.loads((golden / "megascale-ablation-0.json").read_text())
    at768 = json.loads((golden / "megascale-175b-256-megatron-iteration.json").read_text())
    per_mb = (at768["step_time_s"] - at256["step_time_s"]) / 128
    fixed = at256["step_time_s"] - 64 * per_mb
    terms = sum(at256["breakdown_s"][k] for k in ("bubble", "dp_exposed", "optimizer"))
    return [
        f"{published:.3f} s per micro-batch and a fixed {short - 64 * published:.1f} s per step",
        f"steps ({at256['step_time_s']:.2f} s and {at768['step_time_s']:.2f} s) gives "
        f"{per_mb:.3f} s per micro-batch (published {published:.3f} s), and a fixed part of {fixed:.1f} s",
        f"bubble, DP and optimizer terms, {terms:.2f} s)",
        f"misses about {short - 64 * published - fixed:.1f} s a step",
    ]


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
        f"{llama['tokens_per_s']:.0f}    {100 * llama['mfu']:.1f}",
    ]
    expected += megatron_fixed_cost(root)
    missing = [line for line in expected if flat(line) not in flat(readme)]
    for line in missing:
        print(f"README.md does not say: {line!r} (from the golden output)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
