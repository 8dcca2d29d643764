#!/usr/bin/env python3
"""PyTorch's training throughput on the same Transformer and batch as bench_train (on the CPU, or
CUDA with --device cuda, fp16 autocast with --amp).

Post-LN encoder-decoder (torch.nn.Transformer, norm_first=False), shared embeddings scaled by
sqrt(d_model) and tied to the output projection, sinusoidal positions, label-smoothed
cross-entropy, Adam(0.9, 0.98, 1e-9). Prints one JSON object: tokens_per_second counts source +
target tokens, like vkf. On the CPU it runs at its best thread count: with --threads 0 (the
default) it times one thread and every core and reports the faster (on 2 cores one thread ran
the tiny preset 2.3x faster than two), with both timings in seconds_per_step_by_threads.
"""
import argparse
import json
import math
import sys
import time

try:
    import torch
    import torch.nn as nn
    from torch_threads import at_best
except ImportError:
    print(json.dumps({"error": "torch is not installed"}))
    sys.exit(0)

PRESETS = {
    "tiny": dict(d_model=64, d_ff=256, heads=4, layers=2, dropout=0.1),
    "small": dict(d_model=256, d_ff=1024, heads=4, layers=3, dropout=0.1),
    "base": dict(d_model=512, d_ff=2048, heads=8, layers=6, dropout=0.1),
    "big": dict(d_model=1024, d_ff=4096, heads=16, layers=6, dropout=0.3),
}


class Model(nn.Module):
    def __init__(self, p, vocab, max_len=1024):
        super().__init__()
        d = p["d_model"]
        self.d = d
        self.embed = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed.weight, 0, d ** -0.5)
        pe = torch.zeros(max_len, d)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.drop = nn.Dropout(p["dropout"])
        self.t = nn.Transformer(d, p["heads"], p["layers"], p["layers"], p["d_ff"], p["dropout"],
                                batch_first=True, norm_first=False)

    def embed_tokens(self, x):
        return self.drop(self.embed(x) * math.sqrt(self.d) + self.pe[: x.shape[1]])

    def forward(self, src, tgt_in):
        mask = self.t.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.t(self.embed_tokens(src), self.embed_tokens(tgt_in), tgt_mask=mask)
        return h @ self.embed.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="tiny", choices=PRESETS)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--len", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--amp", action="store_true", help="bf16/fp16 autocast (GPU only)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0,
                    help="CPU threads; 0 = the faster of one and every core")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device for --device " + a.device}))
        return
    threads, (dt,), runs = at_best(a.threads, dev, lambda: (seconds_per_step(a, dev),))
    print(json.dumps({"preset": a.preset, "seconds_per_step": dt,
                      "tokens_per_second": 2 * a.batch * a.len / dt, "threads": threads,
                      "seconds_per_step_by_threads": {str(k): v[0] for k, v in runs.items()},
                      "torch": torch.__version__}))


def seconds_per_step(a, dev):
    """The mean time of a.steps training steps after one warm-up step, from a fresh model."""
    torch.manual_seed(1)
    m = Model(PRESETS[a.preset], a.vocab).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    src = torch.randint(4, a.vocab, (a.batch, a.len), device=dev)
    tgt = torch.randint(4, a.vocab, (a.batch, a.len), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, enabled=a.amp):
            logits = m(src, tgt)
            loss = loss_fn(logits.reshape(-1, a.vocab).float(), tgt.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    step()  # warm-up
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / a.steps


if __name__ == "__main__":
    main()
