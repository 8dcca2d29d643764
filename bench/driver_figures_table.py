#!/usr/bin/env python3
"""The Markdown tables of bench/driver-figures: per driver, default against tuned.

Usage: driver_figures_table.py OUT DRIVER...  (OUT holds <driver>-matmul-{default,tuned}.json
and <driver>-train-{tiny,small}-{default,tuned}.json, Google Benchmark JSON).
"""
import json
import os
import sys

MATMUL_ROWS = [
    ("1024/1024/1024/0", "1024^3 A B"),
    ("1024/1024/1024/1", "1024^3 A B^T"),
    ("4096/2048/512/1", "FFN fc1 4096x2048x512 A B^T"),
    ("4096/512/2048/1", "FFN fc2 4096x512x2048 A B^T"),
]


def load(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    return {r["name"]: r for r in runs if r.get("run_type", "iteration") == "iteration"}


def find(rows, prefix):
    for name, r in rows.items():
        if name.startswith(prefix):
            return r
    return None


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def kept_default(out, driver, shape):
    """Whether the tuning file kept the default for the class of `shape` ("m/n/k/form")."""
    path = f"{out}/{driver}-matmul.tuning.json"
    if not os.path.exists(path):
        return None
    m, n, k, form = (int(x) for x in shape.split("/"))
    with open(path) as f:
        entries = json.load(f).get("matmul", [])
    for e in entries:
        s = e["shape"]
        if (s["m"], s["n"], s["k"], s["trans_b"], s["trans_a"]) == (m, n, k, form == 1, form == 2):
            return e["seconds"] == e["default"]["seconds"]
    return True  # not searched within the budget: the class keeps the default


def matmul_table(out, drivers):
    print("| driver | shape | default GFLOP/s | ratio_openblas | ratio_peak | tuned GFLOP/s |"
          " ratio_openblas | ratio_peak | tuned / default | tuned config |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in drivers:
        runs = {m: load(f"{out}/{d}-matmul-{m}.json") for m in ("default", "tuned")}
        for shape, title in MATMUL_ROWS:
            cells = []
            rates = []
            for m in ("default", "tuned"):
                r = find(runs[m], f"vkf_matmul_f32/{shape}/")
                g = r.get("GFLOP/s") if r else None
                rates.append(g)
                cells += [fmt(g, 1), fmt(r.get("ratio_openblas") if r else None),
                          fmt(r.get("ratio_peak") if r else None)]
            r = find(runs["tuned"], f"vkf_matmul_f32/{shape}/")
            label = r.get("label", "") if r else ""
            config = (label.split(" tuned=")[1].split(" vs ")[0]
                      if " tuned=" in label else "?")
            if kept_default(out, d, shape):
                config += " (the default)"
            speed = rates[1] / rates[0] if all(rates) else None
            print(f"| {d} | {title} | " + " | ".join(cells) + f" | {fmt(speed)} | {config} |")


def train_table(out, drivers):
    print("| driver | preset | default tokens/s | PyTorch | ratio | tuned tokens/s | PyTorch |"
          " ratio | tuned / default |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in drivers:
        for preset in ("tiny", "small"):
            cells = []
            rates = []
            for m in ("default", "tuned"):
                r = find(load(f"{out}/{d}-train-{preset}-{m}.json"), f"train_step/{preset}/")
                t = r.get("tokens_per_second") if r else None
                rates.append(t)
                cells += [fmt(t, 0), fmt(r.get("torch_tokens_per_second") if r else None, 0),
                          fmt(r.get("ratio_vs_torch") if r else None)]
            speed = rates[1] / rates[0] if all(rates) else None
            print(f"| {d} | {preset} | " + " | ".join(cells) + f" | {fmt(speed)} |")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, drivers = sys.argv[1], sys.argv[2:]
    matmul_table(out, drivers)
    print()
    train_table(out, drivers)


if __name__ == "__main__":
    main()
