#!/usr/bin/env python3
"""What two keys of the deepspeed preset cost on SC'21's three ZeRO-3 rows, from today's build.

The README (and systems/deepspeed.json's source) quote what each costs against today's preset
with it undone: the prefetch (`prefetch_layers` 0: the DeepSpeed of April-June 2021 that
prefetched nothing) and the host's per-rank work (`host_per_rank` removed, the gather's host
time then the flat 380 µs measured on 8 ranks, as before the per-rank work was charged; and
each side alone: without the gathers' per-rank work the gather's host time is the 308 µs that
do not grow with the group, as the preset splits the 380, the reduce-scatters' as they are). Each variant is a copy of the data folders
with that one key changed, read through MEGASIM_DATA_DIR in a temporary folder; the shipped
preset is never touched. With --check the figures must appear verbatim (whitespace aside) in
the README and the preset's source.

  scripts/zero3_ablation.py --binary build/dev/sim/cli/megasim                  # print them
  scripts/zero3_ablation.py --binary ... --check README.md systems/deepspeed.json
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

from preset_copy import ROOT, simulate, variant
from readme_check import flat

GPUS = [384, 768, 1536]


def run(binary, data_dir):
    """Each row's step time and hardware TFLOP/s, with the data folders at data_dir (or shipped)."""
    out = []
    for g in GPUS:
        j = simulate(binary, f"scenarios/validation/sc21-t2-zero3-175b-{g}.json", data_dir=data_dir)
        out.append((j["step_time_s"], j["tflops_per_gpu_hw"]))
    return out


def no_prefetch(ds):
    ds["sharded_data_parallel"]["prefetch_layers"] = 0


def no_host_per_rank(ds):
    sharding = ds["sharded_data_parallel"]
    del sharding["host_per_rank"], sharding["gather_host_ranks"]


def no_gather_per_rank(ds):
    sharding = ds["sharded_data_parallel"]
    # The 380 µs measured on 8 ranks less those ranks' own work, held flat.
    sharding["gather_host_us"] = 308
    del sharding["gather_host_ranks"]
    sharding["host_per_rank"]["gather"] = {"python_ops": 0, "dispatched_ops": 0, "memcpys": 0}


def no_scatter_per_rank(ds):
    ds["sharded_data_parallel"]["host_per_rank"]["scatter"] = {
        "python_ops": 0, "dispatched_ops": 0, "memcpys": 0}


def figures(binary):
    published = {r["id"]: r["measured"]["tflops_per_gpu_hw"] for r in json.loads(
        (ROOT / "validation/published_runs.json").read_text(encoding="utf-8"))["runs"]
        if "zero3" in r["id"]}
    pub = [published[f"sc21-t2-zero3-175b-{g}"] for g in GPUS]
    today = run(binary, None)
    with tempfile.TemporaryDirectory() as tmp:
        prefetch, host, gather, scatter = (
            run(binary, variant(tmp, name, "deepspeed", change))
            for name, change in (("prefetch", no_prefetch), ("host", no_host_per_rank),
                                 ("gather", no_gather_per_rank), ("scatter", no_scatter_per_rank)))
    longer = [p[0] - t[0] for p, t in zip(prefetch, today)]
    err = lambda rows: [100 * (r[1] / p - 1) for r, p in zip(rows, pub)]
    saved = lambda rows: [t[0] - r[0] for r, t in zip(rows, today)]
    s1, s2, s3 = saved(host), saved(gather), saved(scatter)
    return {
        "README.md": [
            "steps would be {:.1f}, {:.1f} and {:.1f} s longer by megasim's prices".format(*longer),
            "{:+.1f} %, {:+.1f} % and {:+.1f} % instead of {:+.1f} %, {:+.1f} % and {:+.1f} %"
            .format(*err(prefetch), *err(today)),
            "+{:.1f} / +{:.1f} / +{:.1f} s (gathers +{:.1f} / +{:.1f} / +{:.1f} s, reduce-scatters "
            "+{:.1f} / +{:.1f} / +{:.1f} s".format(*s1, *s2, *s3),
        ],
        "deepspeed.json": [
            "with prefetch_layers 0 their steps would be {:.1f} s (384 GPUs), {:.1f} s (768) and "
            "{:.1f} s (1,536) longer".format(*longer),
        ],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--check", nargs=2, metavar=("README", "PRESET"),
                        help="the README and systems/deepspeed.json, which must hold them")
    args = parser.parse_args()
    want = figures(args.binary)
    if args.check is None:
        for file, lines in want.items():
            print(f"{file}:")
            print("\n".join(f"  {line}" for line in lines))
        return 0
    missing = 0
    for path, lines in zip(args.check, want.values()):
        text = flat(Path(path).read_text(encoding="utf-8"))
        for line in lines:
            if flat(line) not in text:
                print(f"{path} does not say: {line!r}; today's build does")
                missing += 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
