#!/usr/bin/env python3
"""PyTorch's matmul throughput at the shapes bench_matmul runs, one process for all of them.

On CUDA when torch.cuda.is_available() (cuBLAS: fp32 with TF32 off, so true SGEMM; fp16 with
fp32 accumulation, reduced-precision reductions off), else on the CPU (every core, like lavapipe).
Each case is a shape MxNxKxFORM with FORM 0 = A B, 1 = A B^T (B stored [n, k]: a Linear's
forward), 2 = A^T B (A stored [k, m]: its weight gradient), as in bench_matmul; the transposed
operand is a transposed view, so the BLAS call gets the transpose flag and copies nothing.

  torch_matmul.py --shapes 1024x1024x1024x0,4096x512x512x1 --dtypes f32,f16
  torch_matmul.py --shapes 1024x1024x1024x0:f16,4096x512x512x1:f32   (a dtype per case)

Timing: warm-up calls (at least 3 and --warmup seconds, one where a call takes longer than
--min-time), then --rounds rounds of as many calls as fill --min-time seconds in all (at least
one call each), synchronised (CUDA events on the GPU); gflops is the median round, gflops_best
the fastest. Prints one JSON line: the device and backend, then one result per case (an "error"
in place of the rates where that dtype or shape fails: fp16 matmul on a CPU build without it,
memory).
"""
import argparse
import json
import os
import re
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print(json.dumps({"error": "torch is not installed"}))
    sys.exit(0)

DTYPES = {"f32": torch.float32, "f16": torch.float16}


def parse_cases(shapes, dtypes):
    cases = []
    for tok in filter(None, shapes.split(",")):
        shape, _, dt = tok.partition(":")
        dims = [int(x) for x in shape.lower().split("x")]
        if len(dims) == 3:
            dims.append(0)
        if len(dims) != 4 or dims[3] not in (0, 1, 2) or min(dims[:3]) <= 0:
            raise ValueError(f"bad shape '{tok}': want MxNxK[xFORM][:f32|f16], FORM 0, 1 or 2")
        for d in [dt] if dt else dtypes:
            if d not in DTYPES:
                raise ValueError(f"bad dtype '{d}' in '{tok}': want f32 or f16")
            cases.append((*dims, d))
    return cases


def backend(dev):
    if dev.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(dev)} cublas"
    info = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    blas = info.group(1) if info else "?"
    try:  # a "generic" build calls whatever libblas.so.3 is (Debian: an alternative)
        with open("/proc/self/maps") as f:
            maps = f.read()
        blas += "".join(f"({lib})" for lib in ("openblas", "mkl", "blis") if lib in maps)
    except OSError:
        pass
    return f"cpu blas={blas} threads={torch.get_num_threads()}"


def operands(m, n, k, form, dtype, dev, gen):
    def rand(*shape):  # uniform in [-1, 1), like bench_matmul
        return (torch.rand(*shape, generator=gen, device=dev) * 2 - 1).to(dtype)

    a = rand(k, m).t() if form == 2 else rand(m, k)
    b = rand(n, k).t() if form == 1 else rand(k, n)
    return a, b, torch.empty(m, n, dtype=dtype, device=dev)


def time_case(m, n, k, form, dtype, dev, args):
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    a, b, c = operands(m, n, k, form, DTYPES[dtype], dev, gen)
    cuda = dev.type == "cuda"

    def call():
        torch.matmul(a, b, out=c)

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    def timed(calls):  # seconds for `calls` back-to-back calls
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                call()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1e-3
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        return time.perf_counter() - t0

    # Warm-up: library handles, kernel selection, first touch, GPU clocks.
    t0, warm = time.perf_counter(), 0
    while warm < 3 or time.perf_counter() - t0 < args.warmup:
        call()
        sync()
        warm += 1
        if time.perf_counter() - t0 > max(args.warmup, args.min_time):
            break  # a call takes seconds (a large shape on a CPU): one warm-up call is enough
    one = max(timed(1), 1e-7)
    rounds, calls, per_call = 1, 1, [one]  # a call of --min-time or more is the measurement
    if one < args.min_time:
        rounds = max(1, min(args.rounds, int(args.min_time / one)))
        calls = max(1, int(args.min_time / rounds / one))
        per_call = [timed(calls) / calls for _ in range(rounds)]
    flops = 2.0 * m * n * k
    return {
        "gflops": flops / statistics.median(per_call) * 1e-9,
        "gflops_best": flops / min(per_call) * 1e-9,
        "ms": statistics.median(per_call) * 1e3,
        "calls": rounds * calls,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="1024x1024x1024x0", help="MxNxK[xFORM][:DTYPE],...")
    ap.add_argument("--dtypes", default="f32", help="f32,f16: for cases without their own")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--min-time", type=float, default=1.0, help="timed seconds per case")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=float, default=0.2, help="warm-up seconds per case")
    a = ap.parse_args()
    try:
        cases = parse_cases(a.shapes, [d for d in a.dtypes.split(",") if d])
    except ValueError as e:
        print(json.dumps({"error": str(e)}))
        return
    if a.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "CUDA is not available to this torch"}))
        return
    dev = torch.device("cuda" if a.device != "cpu" and torch.cuda.is_available() else "cpu")
    # True fp32 SGEMM (no TF32), and fp16 products summed in fp32 throughout, as vkf does.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"):
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    if dev.type == "cpu":
        torch.set_num_threads(os.cpu_count() or 1)  # lavapipe uses every core too
    results = []
    for m, n, k, form, dtype in cases:
        r = {"m": m, "n": n, "k": k, "form": form, "dtype": dtype}
        try:
            r.update(time_case(m, n, k, form, dtype, dev, a))
        except (RuntimeError, MemoryError) as e:  # unsupported dtype on this device, out of memory
            r["error"] = str(e).split("\n")[0]
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        results.append(r)
    print(json.dumps({"device": str(dev), "backend": backend(dev), "torch": torch.__version__,
                      "tf32": torch.backends.cuda.matmul.allow_tf32, "results": results}))


if __name__ == "__main__":
    main()
