#!/usr/bin/python3
"""Leave-one-source-out validation of the shared constants (scripts/shared_constants.py).

For each source (the publication a validation row comes from: the first word of its run id,
korthikanti, sc21, megascale), the shipped fit (scripts/fit_shared_constants.py) is repeated
without it: the constants are searched again on the fit rows of the other sources, and the
held-out source's rows, fit and check alike, are predicted with them. (Until 2026-12-04 the
refit took every row of the other sources, check rows too: not the procedure that made the
shipped constants.) What that error is, per source and over all rows, says how the model does on a
publication its constants never saw; beside it, the error of today's constants.
Each fold also predicts every other row under its constants (`folds`: the residuals a
publication megasim had not seen would have its error bands drawn from; `megasim validate`'s
held-out coverage, sim/plan/held_out.h), and the file names the fit rows it refitted from
(`fit_rows`), so validate can tell when the fit set has changed since.
Writes validation/leave_one_source_out.json and prints a Markdown table.
Usage: scripts/leave_one_source_out.py [path/to/megasim]
"""
import json
import pathlib
import shutil
import sys
import tempfile

import shared_constants as sc

args = [a for a in sys.argv[1:] if not a.startswith("--")]
megasim = args[0] if args else str(sc.root / "build/release/sim/cli/megasim")

# Rows of role "context" (a published figure of unstated convention) are shown by validate but
# scored nowhere, here neither.
scenarios = sorted(f for f in (sc.root / "scenarios/validation").glob("*.json")
                   if sc.load(f)["validation"].get("role") != "context")
by_source = {}
for f in scenarios:
    run = sc.load(f)["validation"]["run"]
    by_source.setdefault(run.split("-")[0], []).append(f)

today = {r["scenario"]: r for r in sc.validate_rows(megasim, sc.root / "scenarios/validation")}
result = {"sources": {}, "rows": [], "folds": {},
          "fit_rows": sorted(r["scenario"] for r in today.values() if r["role"] == "fit")}
# The shared constants belong to the Megatron-LM family's rows (scripts/shared_constants.py);
# rows of the DeepSpeed and FSDP presets are predicted with their source, never trained on, and
# so is a row a framework other than Megatron ran on one of its presets as a stand-in (Llama
# 3's, on megatron-core: its published framework, where stated, is not Megatron-LM or -Core).
unfitted_presets = {"deepspeed", "fsdp"}
framework = {r["id"]: r.get("framework", "")
             for r in json.loads((sc.root / "validation/published_runs.json").read_text())["runs"]}


def trained_on(f):
    scenario = sc.load(f)
    published = framework.get(scenario["validation"]["run"], "")
    return (scenario["validation"].get("role") == "fit"
            and scenario.get("optimizations", {}).get("preset") not in unfitted_presets
            and (not published or published.startswith(("Megatron-LM", "Megatron-Core"))))


for source, files in sorted(by_source.items()):
    train, every = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
    for f in scenarios:
        shutil.copy(f, every / f.name)
        if f not in files and trained_on(f):
            shutil.copy(f, train / f.name)
    (score, k_half, p2p, _), fold = sc.search(megasim, train, every)
    result["folds"][source] = {r["scenario"]: r["error"] for r in fold}
    predicted = [r for r in fold if r["source"] == source]
    errors = [abs(r["error"]) for r in predicted]
    result["sources"][source] = {
        "rows": len(predicted), "k_half": k_half, "blocking_p2p_us": p2p,
        "fit_rows": len(list(train.glob("*.json"))), "fit_mean_error": score,
        "held_out_mape": sum(errors) / len(errors),
        "today_mape": sum(abs(today[r["scenario"]]["error"]) for r in predicted) / len(predicted)}
    for r in predicted:
        result["rows"].append({"scenario": r["scenario"], "source": source, "error": r["error"],
                               "today_error": today[r["scenario"]]["error"]})
    shutil.rmtree(train)
    shutil.rmtree(every)

all_errors = [abs(r["error"]) for r in result["rows"]]
result["overall_mape"] = sum(all_errors) / len(all_errors)
result["overall_today_mape"] = sum(abs(r["today_error"]) for r in result["rows"]) / len(all_errors)
(sc.root / "validation/leave_one_source_out.json").write_text(json.dumps(result, indent=2) + "\n")

print("| held-out source | rows | constants refitted on the others (k_half, p2p µs) | MAPE held out | MAPE with today's constants |")
print("|---|---|---|---|---|")
for source, s in result["sources"].items():
    print(f"| {source} | {s['rows']} | {s['k_half']}, {s['blocking_p2p_us']} (on {s['fit_rows']} rows) | "
          f"{100 * s['held_out_mape']:.1f} % | {100 * s['today_mape']:.1f} % |")
print(f"| all | {len(all_errors)} | | {100 * result['overall_mape']:.1f} % | "
      f"{100 * result['overall_today_mape']:.1f} % |")
