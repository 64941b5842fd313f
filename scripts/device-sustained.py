#!/usr/bin/env python3
"""How much slower a GEMM runs once the board has been busy a while: the burst that a
calibration times against the sustained load of a training step. Run on the device machine:

    python3 scripts/device-sustained.py OUT.json [--seconds S] [--duty SHARE ...]
    python3 scripts/device-sustained.py --merge OUT.json PROFILE.json   (here, no GPU needed)

For each shape (bf16, torch.mm, operands of uniform random values), after two idle seconds,
times blocks of back-to-back products between CUDA events for S seconds and reads the SM clock,
the board power and the clock-event reasons through NVML after each block. The JSON holds the
timeline; the text prints the first block's rate (the burst), the last second's (sustained)
and their ratio. With --duty, GEMM blocks alternate with device copies so that GEMMs take each
given share of the time, and the GEMMs' own rate is read the same way. --merge writes what a
run with --duty measured into a device profile's "sustained_gemm" section: one point per share
(the GEMM rate over the first shape's burst) and the share 1 (its sustained rate over its
burst), which the step prices as its power-cap term. PyTorch and nvidia-ml-py are the device
image's; nothing here runs in tests.
"""
import argparse
import json
import os
import statistics
import sys
import time

try:  # only on the device machine; --merge needs neither
    import pynvml
    import torch
except ImportError:
    pynvml = torch = None

SHAPES = [(4096, 12288, 6144), (8192, 8192, 8192)]


def nvml_reading(handle):
    try:
        reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
    except Exception:  # an older binding names it ...ThrottleReasons
        reasons = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
    return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "temp_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            "event_reasons": int(reasons)}


def timeline(m, n, k, seconds, handle):
    x = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16)
    y = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    torch.mm(x, y, out=c)  # handle and algorithm chosen outside the timed blocks
    torch.cuda.synchronize()
    time.sleep(2.0)  # the board back near idle
    blocks, start_wall, launches = [], time.time(), 20
    flop = 2.0 * m * n * k * launches
    while time.time() - start_wall < seconds:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(launches):
            torch.mm(x, y, out=c)
        stop.record()
        stop.synchronize()
        ms = start.elapsed_time(stop)
        row = {"t_s": time.time() - start_wall, "tflops": flop / (ms * 1e-3) / 1e12}
        row.update(nvml_reading(handle))
        blocks.append(row)
    last = [b for b in blocks if b["t_s"] > seconds - 1.0]
    burst = blocks[0]["tflops"]
    sustained = statistics.median(b["tflops"] for b in last)
    return {"m": m, "n": n, "k": k, "burst_tflops": burst, "sustained_tflops": sustained,
            "sustained_over_burst": sustained / burst,
            "sustained_sm_mhz": statistics.median(b["sm_mhz"] for b in last),
            "sustained_power_w": statistics.median(b["power_w"] for b in last),
            "blocks": blocks}


def duty_cycle(m, n, k, fraction, seconds, handle):
    """GEMM blocks interleaved with device copies (memory-bound work, as a step's norms and
    activations are) so that GEMMs take about `fraction` of the time: the GEMMs' own rate and
    the clock over the last half of the run. The share is of the device time between the
    events; the host's short gap between blocks (NVML reads, relaunch) is not counted, so the
    share of wall time is slightly lower."""
    x = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16)
    y = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    gemm_ms, copy_ms, launches = 2.0 * m * n * k / 800e12 * 1e3, 2 * (1 << 30) / 4.2e12 * 1e3, 10
    copies = round(launches * gemm_ms * (1 - fraction) / fraction / copy_ms)
    torch.cuda.synchronize()
    time.sleep(1.0)
    rows, start_wall = [], time.time()
    while time.time() - start_wall < seconds:
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        for _ in range(launches):
            torch.mm(x, y, out=c)
        e1.record()
        for _ in range(copies):
            dst.copy_(src)
        e2.record()
        e2.synchronize()
        g, total = e0.elapsed_time(e1), e0.elapsed_time(e2)
        row = {"t_s": time.time() - start_wall, "gemm_share": g / total,
               "tflops": 2.0 * m * n * k * launches / (g * 1e-3) / 1e12}
        row.update(nvml_reading(handle))
        rows.append(row)
    last = [r for r in rows if r["t_s"] > seconds / 2]
    med = lambda key: statistics.median(r[key] for r in last)
    return {"m": m, "n": n, "k": k, "target_gemm_share": fraction, "copies": copies,
            "gemm_share": med("gemm_share"), "tflops": med("tflops"), "sm_mhz": med("sm_mhz"),
            "power_w": med("power_w"), "blocks": rows}


def merge(result_file, profile_file):
    with open(result_file) as f:
        result = json.load(f)
    if not result.get("duty"):
        sys.exit(f"{result_file}: no --duty rows to merge")
    whole = result["shapes"][0]
    points = sorted(({"gemm_share": round(d["gemm_share"], 3),
                      "rate": round(d["tflops"] / whole["burst_tflops"], 3)}
                     for d in result["duty"]), key=lambda p: p["gemm_share"])
    points.append({"gemm_share": 1.0, "rate": round(whole["sustained_over_burst"], 3)})
    # What the profile loader takes: shares increasing from 0.01, rates at most 1 and not
    # rising with the share. A run that breaks that (noise on a board that never reached its
    # limit, say) is reported, and the profile is left without a curve rather than unloadable.
    for before, p in zip([{"gemm_share": 0.0, "rate": 1.0}] + points, points):
        if p["gemm_share"] < 0.01 or p["gemm_share"] <= before["gemm_share"] or \
                p["rate"] > before["rate"]:
            sys.exit(f"{result_file}: {points} is not a curve the profile can hold (shares "
                     f"increasing from 0.01, rates at most 1 and not rising); not merged")
    with open(profile_file) as f:
        profile = json.load(f)
    profile["sustained_gemm"] = {"points": points, "source": (
        f"measured by scripts/device-sustained.py on one {result['device']} "
        f"(power limit {result['power_limit_w']:.0f} W, torch {result['torch']}): "
        f"{whole['m']}x{whole['n']}x{whole['k']} bf16 GEMMs at {whole['burst_tflops']:.0f} "
        f"TFLOP/s in a burst from idle, {whole['sustained_tflops']:.0f} sustained "
        f"({whole['sustained_sm_mhz']:.0f} MHz, {whole['sustained_power_w']:.0f} W, software "
        f"power cap); the other shares with device copies between the GEMMs, the rate over "
        f"the second half of each run ({os.path.basename(result_file)})")}
    tmp = profile_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(profile, f, indent=1, sort_keys=True)  # as the tool writes it
        f.write("\n")
    os.replace(tmp, profile_file)
    print(f"{profile_file}: sustained_gemm {points}")


def write_result(result, path):
    """The result so far, replacing the file whole (never half written)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--merge":
        return merge(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--duty", type=float, nargs="*", default=[],
                    help="also GEMM shares of time to hold for --seconds each (0 to 1)")
    args = ap.parse_args()
    if any(not 0.0 < f < 1.0 for f in args.duty):
        ap.error(f"--duty {args.duty}: each share must lie strictly between 0 and 1 (1 is the "
                 "plain sustained run, measured anyway)")
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
              "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
              "idle": nvml_reading(handle), "shapes": []}
    # Written after every phase, so a run cut short (its timeout, a crash in a later phase)
    # keeps the phases it finished; until 2026-12-05 the file was written at the end only.
    result["duty"] = []
    for m, n, k in SHAPES:
        result["shapes"].append(timeline(m, n, k, args.seconds, handle))
        write_result(result, args.output)
    for f in args.duty:
        result["duty"].append(duty_cycle(4096, 12288, 6144, f, args.seconds, handle))
        write_result(result, args.output)
    for s in result["shapes"]:
        first = s["blocks"][0]
        print(f"{s['m']}x{s['n']}x{s['k']}: burst {s['burst_tflops']:.0f} TFLOP/s "
              f"({first['sm_mhz']} MHz, {first['power_w']:.0f} W), sustained "
              f"{s['sustained_tflops']:.0f} ({s['sustained_sm_mhz']} MHz, "
              f"{s['sustained_power_w']:.0f} W): {s['sustained_over_burst']:.3f}")
        for b in s["blocks"][:: max(1, len(s["blocks"]) // 12)]:
            print(f"  t={b['t_s']:.2f}s {b['tflops']:.0f} TFLOP/s {b['sm_mhz']} MHz "
                  f"{b['power_w']:.0f} W {b['temp_c']} C reasons {b['event_reasons']:#x}")

    for d in result["duty"]:
        print(f"GEMM share {d['gemm_share']:.2f} (aim {d['target_gemm_share']:.2f}): GEMM "
              f"{d['tflops']:.0f} TFLOP/s, {d['sm_mhz']} MHz, {d['power_w']:.0f} W")


if __name__ == "__main__":
    sys.exit(main())
