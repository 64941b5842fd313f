#!/usr/bin/env python3
"""Mutation fuzzing of the megasim binary, input kind by input kind, as an outside check does it.

Each run takes one of the repository's input files (a scenario, model, topology, device profile,
reliability or power preset, failure-rate file, nccl-tests log) or a --set / --vary value,
mutates it (byte flips, truncation, numeric extremes, deep nesting, long strings, wrong types,
dropped keys), runs the command that reads it with a wall-clock timeout and a memory limit, and
flags:

  - an exit other than 0 (success) and 2 (bad input), a signal, or a timeout;
  - a peak RSS over the limit (2 GiB);
  - exit 2 whose stderr does not start with "megasim: error:";
  - exit 2 that left an output file, or a temporary one, behind.

System presets are not reachable this way (optimizations.preset takes only the built-in names);
tests/fuzz/fuzz_system covers them. Every finding is saved under OUT/finding-N/ with the
command line, the mutated file and the output. Same --seed, same mutations.

  scripts/mutation_fuzz.py --megasim build/release/sim/cli/megasim --runs 2000 --seed 1 [--out DIR]
  scripts/mutation_fuzz.py --megasim ... --sweep --runs 100000   # every number, each extreme

Exit status: 0 when nothing was flagged, 1 otherwise.
"""
import argparse
import json
import os
import pathlib
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BASE_SCENARIO = ROOT / "scenarios/megascale-175b-12288.json"
RSS_LIMIT_KB = 2 * 1024 * 1024
# The address space a run may reserve: past the RSS limit, so that an allocation the limit
# catches shows as a flagged RSS or a bad_alloc (exit 1), never as the machine swapping.
AS_LIMIT_BYTES = 6 << 30

NUMBERS = [0, -1, 1e-12, 1e308, -1e308, 1.7976931348623157e308, 5e-324, 2**63 - 1, -(2**63),
           2**64, 10**30, 123456789012, 0.5, -0.0, 4294967296, 2147483648]
STRINGS = ["", "x" * 200_000, "\u00e9\u4e2d", "../../etc/passwd", "/dev/zero", "none", "-",
           "1f1b", "true", "nan", "inf"]


def kinds():
    """Input kind -> the repository files of that kind."""
    def files(pattern):
        return sorted(p for p in ROOT.glob(pattern) if p.name != "schema.json")
    return {
        "scenario": files("scenarios/*.json") + files("scenarios/validation/*.json")
                    + [ROOT / "tests/data/full_scenario.json"],
        "model": files("models/*.json"),
        "cluster": files("topologies/*.json"),
        "device": files("calibrate/profiles/*.json"),
        "reliability": [p for p in files("reliability/*.json") if "failure-rates" not in p.name],
        "failure_rates": files("reliability/failure-rates-*.json"),
        "power": files("power/*.json"),
        "nccl_tests": files("tests/data/nccl-tests/*.log"),
        "set": [BASE_SCENARIO],
        "vary": [BASE_SCENARIO],
    }


# This script's own address space: a mutation that would build a document of gigabytes fails
# with MemoryError here instead of swapping the machine. A mutant past MAX_MUTANT_BYTES falls
# back to a byte mutation (megasim's own limit on an input file is 256 MiB).
SCRIPT_AS_LIMIT_BYTES = 3 << 30
MAX_MUTANT_BYTES = 32 << 20

# The longest single argument Linux passes to a program (MAX_ARG_STRLEN is 128 KiB).
MAX_ARG_BYTES = 120_000


# --- mutations ---------------------------------------------------------------------------

def json_paths(doc, prefix=()):
    """Every (path, value) in the document, containers included."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from json_paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from json_paths(v, prefix + (i,))


def set_at(doc, path, value):
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def extreme_value(rng, old):
    choice = rng.randrange(6)
    if choice == 0 or isinstance(old, (int, float)) and not isinstance(old, bool) and choice < 4:
        return rng.choice(NUMBERS)
    if choice == 1:
        return rng.choice(STRINGS)
    if choice == 2:
        depth = rng.choice([63, 65, 200, 5000])
        return json.loads("[" * depth + "1" + "]" * depth)
    if choice == 3:
        return rng.choice([None, True, {}, [], [1, 2, 3], {"a": 1}])
    if choice == 4 and not isinstance(old, (dict, list)):
        # Only a scalar is repeated: repeating a table, then a table holding it, made one
        # document of gigabytes in this script before megasim saw it.
        return [old] * rng.choice([2, 1000, 100_000])
    return str(old)[:1000] if not isinstance(old, str) else 12345


def mutate_json_doc(rng, doc):
    """One structural mutation of a parsed document; returns the document."""
    paths = list(json_paths(doc))
    path, old = rng.choice(paths)
    op = rng.randrange(4)
    if op == 0 and path:  # drop the key or element
        node = doc
        for k in path[:-1]:
            node = node[k]
        del node[path[-1]]
        return doc
    if op == 1 and isinstance(old, dict):  # an unknown key
        old[rng.choice(["tpp", "x" * 300, "", "$schema", "name"])] = 1
        return doc
    return set_at(doc, path, extreme_value(rng, old))


def mutate_bytes(rng, data):
    op = rng.randrange(5)
    if op == 0 and data:  # byte flips
        b = bytearray(data)
        for _ in range(rng.choice([1, 2, 8, 64])):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == 1:  # truncation
        return data[: rng.randrange(len(data) + 1)]
    if op == 2:  # a number replaced by an extreme one
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?", data))
        if numbers:
            m = rng.choice(numbers)
            return data[: m.start()] + repr(rng.choice(NUMBERS)).encode() + data[m.end():]
    if op == 3 and data:  # a slice repeated
        i = rng.randrange(len(data))
        j = min(len(data), i + rng.randrange(1, 400))
        return data[:j] + data[i:j] * rng.choice([2, 100, 10_000]) + data[j:]
    return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 16, 4096])))


def mutate_file(rng, data, is_json):
    if is_json and rng.random() < 0.6:
        try:
            doc = json.loads(data)
            for _ in range(rng.choice([1, 1, 2, 3])):
                doc = mutate_json_doc(rng, doc)
            text = json.dumps(doc, indent=1).encode()
            if len(text) <= MAX_MUTANT_BYTES:
                return text
        except (ValueError, RecursionError, IndexError, KeyError, TypeError, MemoryError):
            pass
    return mutate_bytes(rng, data)


def set_value(rng, base):
    """A --set PATH=VALUE on a key of the base scenario (or a made-up one), extreme value."""
    paths = [".".join(str(k) for k in p) for p, _ in json_paths(base) if p and
             all(isinstance(k, str) for k in p)]
    path = rng.choice(paths + ["plan.tpp", "a..b", "", "plan", "run.tokens.x", "x" * 5000])
    value = rng.choice([json.dumps(rng.choice(NUMBERS)), rng.choice(STRINGS), "[" * 3000,
                        "{" * 10 + "}" * 10, '"' + "y" * 100_000 + '"', "null", "true",
                        "[1,2]", "-", "1e999", "0x10", "1f1b", "=", "8,8"])
    return f"{path}={value}"[:MAX_ARG_BYTES]


def vary_value(rng, base):
    path = set_value(rng, base).split("=", 1)[0]
    count = rng.choice([1, 2, 3, 50, 5000])
    values = [str(rng.choice(NUMBERS + ["", "a", "1f1b", "[1]"])) for _ in range(count)]
    return f"{path}={','.join(values)}"[:MAX_ARG_BYTES]


SWEEP_VALUES = [0, -1, 1e-12, 1e308, 2**63]


def sweep_cases(all_kinds, chosen):
    """(kind, source, mutated bytes) for every numeric value of every JSON file of the chosen
    kinds set to each of SWEEP_VALUES, one at a time: the numeric extremes, exhaustively."""
    for kind in chosen:
        for source in all_kinds[kind]:
            if kind in ("set", "vary", "nccl_tests"):
                continue
            doc = json.loads(source.read_text())
            for path, value in list(json_paths(doc)):
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                for extreme in SWEEP_VALUES:
                    if extreme == value:
                        continue
                    mutant = set_at(json.loads(source.read_text()), path, extreme)
                    yield kind, source, json.dumps(mutant, indent=1).encode()


# --- one run -----------------------------------------------------------------------------

def make_case(rng, kind, source, work, data=None):
    """(argv after the binary, the mutated file or None, the expected output file or None).
    `data`: the mutated file's bytes, made here from `source` when not given."""
    out = work / "out.json"
    base = ["simulate", str(BASE_SCENARIO), "-o", str(out)]
    if kind in ("set", "vary"):
        doc = json.loads(BASE_SCENARIO.read_text())
        if kind == "set":
            sets = [set_value(rng, doc) for _ in range(rng.choice([1, 1, 2, 4]))]
            return base + [a for s in sets for a in ("--set", s)], None, out
        return ["compare", str(BASE_SCENARIO), "--vary", vary_value(rng, doc)], None, None
    if data is None:
        data = mutate_file(rng, source.read_bytes(), source.suffix == ".json")
    target = work / (source.stem + source.suffix)
    target.write_bytes(data)
    if kind == "scenario":
        # Every shipped scenario names its files by name (found in the built-in folders), so
        # the copy works from the scratch folder and nothing is written into the source tree.
        return ["simulate", str(target), "-o", str(out)], target, out
    if kind == "nccl_tests":
        return (["calibrate", "import-nccl-tests", str(target), "--device", "a100-sxm4-80gb",
                 "-o", str(out)], target, out)
    if kind == "failure_rates":
        preset = json.loads((ROOT / "reliability/default.json").read_text())
        preset["failure_rates"] = str(target)
        (work / "preset.json").write_text(json.dumps(preset))
        return base + ["--set", f"reliability.preset={work / 'preset.json'}"], target, out
    key = {"model": "model", "cluster": "cluster", "device": "device",
           "reliability": "reliability.preset", "power": "power.preset"}[kind]
    return base + ["--set", f"{key}={target}"], target, out


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT_BYTES, AS_LIMIT_BYTES))
    os.nice(10)


def run_case(megasim, argv, timeout):
    """(exit code or -signal or None for timeout, stdout, stderr, peak RSS in KiB, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen([megasim] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=limit_memory, cwd=ROOT)
    chunks = {proc.stdout: [], proc.stderr: []}

    def drain(pipe):
        for block in iter(lambda: pipe.read(65536), b""):
            chunks[pipe].append(block)
    readers = [threading.Thread(target=drain, args=(p,)) for p in chunks]
    for r in readers:
        r.start()
    status = rusage = None
    while status is None:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, rusage = st, ru
        elif time.monotonic() - start > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            break
        else:
            time.sleep(0.01)
    proc.returncode = 0  # reaped here: Popen must not wait for it again
    for r in readers:
        r.join()
    out, err = b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr])
    secs = time.monotonic() - start
    if status is None:
        return None, out, err, 0, secs
    return os.waitstatus_to_exitcode(status), out, err, rusage.ru_maxrss, secs


def judge(code, err, rss, out_file, work):
    """The finding's description, or None."""
    if code is None:
        return "timeout"
    if code < 0:
        return f"killed by signal {signal.Signals(-code).name}"
    if code not in (0, 2):
        return f"exit {code}"
    if rss > RSS_LIMIT_KB:
        return f"peak RSS {rss // 1024} MiB over {RSS_LIMIT_KB // 1024} MiB"
    if code == 2:
        if not err.startswith(b"megasim: error:"):
            return "exit 2 without the 'megasim: error:' prefix"
        if out_file is not None and out_file.exists():
            return "exit 2 left the output file behind"
        if any(".tmp." in p.name for p in work.iterdir()):
            return "exit 2 left a temporary file behind"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--megasim", default=str(ROOT / "build/release/sim/cli/megasim"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--out", default=None, help="where findings are kept (default: a temp dir)")
    ap.add_argument("--kinds", default="", help="comma-separated subset of the input kinds")
    ap.add_argument("--sweep", action="store_true",
                    help="instead of random mutations, set every number of every file to each "
                         "of 0, -1, 1e-12, 1e308, 2^63 (--runs then caps the count)")
    args = ap.parse_args()

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (SCRIPT_AS_LIMIT_BYTES, hard))
    rng = random.Random(args.seed)
    all_kinds = kinds()
    chosen = args.kinds.split(",") if args.kinds else sorted(all_kinds)
    out_dir = pathlib.Path(args.out or tempfile.mkdtemp(prefix="megasim-mutation-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("finding-*"):  # an earlier run's, which the numbering would meet
        shutil.rmtree(old)
    findings, codes, peak = [], {}, 0
    sweep = sweep_cases(all_kinds, chosen) if args.sweep else None
    runs = 0
    for n in range(args.runs):
        data = None
        if sweep is not None:
            kind, source, data = next(sweep, (None, None, None))
            if kind is None:
                break
        else:
            kind = chosen[n % len(chosen)]
            source = rng.choice(all_kinds[kind])
        runs += 1
        work = pathlib.Path(tempfile.mkdtemp(prefix="megasim-mut-"))
        try:
            argv, mutated, out_file = make_case(rng, kind, source, work, data)
            code, out, err, rss, secs = run_case(args.megasim, argv, args.timeout)
            verdict = judge(code, err, rss, out_file, work)
            peak = max(peak, rss)
            codes[code] = codes.get(code, 0) + 1
            if verdict:
                keep = out_dir / f"finding-{len(findings) + 1}"
                keep.mkdir()
                if mutated is not None:
                    shutil.copy(mutated, keep / mutated.name)
                (keep / "command").write_text(" ".join(map(repr, argv)) + "\n")
                (keep / "stderr").write_bytes(err[-20000:])
                findings.append((n, kind, source.name, verdict))
                print(f"run {n} [{kind} {source.name}]: {verdict} ({secs:.1f} s) -> {keep}",
                      flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if (n + 1) % 100 == 0:
            print(f"{n + 1} runs, {len(findings)} findings, exits {codes}", flush=True)
    print(f"done: {runs} runs ({'sweep' if args.sweep else f'seed {args.seed}'}), {len(findings)} findings, exits {codes}, "
          f"largest peak RSS {peak // 1024} MiB" + (f"; findings in {out_dir}" if findings else ""))
    if not findings and not args.out:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
