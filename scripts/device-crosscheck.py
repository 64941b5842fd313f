#!/usr/bin/env python3
"""An independent check of a measured profile, run on the device machine after
`scripts/device-calibrate.sh measure`: times the profile's own GEMM shapes through PyTorch
(torch.matmul, which calls cuBLAS, not megasim's cuBLASLt code) and one large device-to-device
copy, and writes the ratios beside megasim-calibrate-gpu's times.

    python3 scripts/device-crosscheck.py PROFILE.json OUT.json [--rows N]

Each shape is timed as the tool times it (the same operands, launched back to back between two
CUDA events, median of five), so the launch gaps and the cache are alike on both sides. A ratio near 1 says megasim's tool timed the kernels as the framework a user trains with would
run them; a ratio far from 1 says one of the two is off, and the profile should not be trusted
until it is understood. PyTorch is the device image's; nothing here runs in megasim's tests.
"""
import argparse
import json
import statistics
import sys

import torch


def median_ms(fn, repeats):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def operands(row, dtype):
    """Row-major tensors x, y with x @ y the column-major C = op(A) op(B) that megasim's tool
    times (C^T = op(B)^T op(A)^T), laid out as cuBLASLt saw them, so cuBLAS meets the same
    transposes."""
    m, n, k, b = row["m"], row["n"], row["k"], row["batch"]
    a = torch.rand(b, m, k, device="cuda", dtype=torch.float32) * 2 - 1
    bb = torch.rand(b, k, n, device="cuda", dtype=torch.float32) * 2 - 1
    # A stored k-major (no transpose: column-major m x k is row-major k x m).
    x_a = a.transpose(1, 2).contiguous() if not row["transpose_a"] else a.contiguous().transpose(1, 2)
    y_b = bb.transpose(1, 2).contiguous() if not row["transpose_b"] else bb.contiguous().transpose(1, 2)
    # op(B)^T is n x k, op(A)^T is k x m.
    return y_b.to(dtype), x_a.to(dtype)


def gemm_rows(profile, limit):
    """The scenario's shapes (the table's first rows) and the grid's cubes, each timed as
    megasim's tool times it: the same operands launched back to back between two events."""
    rows = [r for r in profile.get("gemm_table", []) if r["dtype"] in DTYPES]
    cubes = [r for r in rows if r["m"] == r["n"] == r["k"] and r["batch"] == 1]
    chosen = rows[:limit] + [r for r in cubes if r not in rows[:limit]][:limit // 2]
    out = []
    for row in chosen:
        m, n, k, b = row["m"], row["n"], row["k"], row["batch"]
        x, y = operands(row, DTYPES[row["dtype"]])
        if b == 1:  # a plain product (torch.mm), not a batch of one
            x, y = x[0], y[0]
        c = torch.empty(*([b] if b > 1 else []), n, m, device="cuda", dtype=x.dtype)
        launches = 50

        def run():
            for _ in range(launches):
                torch.matmul(x, y, out=c)

        ms = median_ms(run, 5) / launches
        flop = 2.0 * m * n * k * b
        out.append({"m": m, "n": n, "k": k, "batch": b, "dtype": row["dtype"],
                    "transpose_a": row["transpose_a"], "transpose_b": row["transpose_b"],
                    "megasim_us": row["time_us"], "torch_us": ms * 1e3,
                    "torch_tflops": flop / (ms * 1e-3) / 1e12,
                    "megasim_over_torch": row["time_us"] / (ms * 1e3)})
        del x, y, c
    return out


def copy_bandwidth():
    n = 2 << 30  # 2 GiB each way, many times the 60 MB L2
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), 20)
    return {"bytes_read_plus_written": 2 * n, "ms": ms, "gbps": 2 * n / (ms * 1e-3) / 1e9}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("output")
    ap.add_argument("--rows", type=int, default=16)
    args = ap.parse_args()
    with open(args.profile) as f:
        profile = json.load(f)
    result = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0), "copy": copy_bandwidth(),
              "gemm": gemm_rows(profile, args.rows)}
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    print(f"copy: {result['copy']['gbps']:.0f} GB/s (read + written)")
    for r in result["gemm"]:
        print(f"{r['m']}x{r['n']}x{r['k']} b{r['batch']} {r['dtype']}: megasim "
              f"{r['megasim_us']:.1f} us, torch {r['torch_us']:.1f} us "
              f"({r['torch_tflops']:.0f} TFLOP/s), ratio {r['megasim_over_torch']:.3f}")
    ratios = [r["megasim_over_torch"] for r in result["gemm"]]
    if ratios:
        print(f"median megasim/torch time ratio over {len(ratios)} shapes: "
              f"{statistics.median(ratios):.3f}")


if __name__ == "__main__":
    sys.exit(main())
