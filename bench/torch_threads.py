"""PyTorch on a CPU at its best thread count, shared by the anchor scripts of bench/.

On the 2-core machines one thread trained the tiny model 2.3x faster than two, so an anchor that
takes every core is not at its best. at_best() runs a measurement at one thread and at every
core (or at the count asked for, or once on a GPU) and returns the fastest.
"""
import os

import torch


def at_best(threads, device, measure):
    """Runs measure() (its result's first element: seconds, lower is better) at `threads` CPU
    threads, or with threads == 0 at one and at every core; on CUDA once. Returns the winning
    thread count, its result, and every count's result."""
    cores = os.cpu_count() or 1
    counts = [threads] if threads or device.type == "cuda" else sorted({1, cores})
    runs = {}
    for n in counts:
        if n:
            torch.set_num_threads(n)
        runs[torch.get_num_threads()] = measure()
    best = min(runs, key=lambda n: runs[n][0])
    return best, runs[best], runs
