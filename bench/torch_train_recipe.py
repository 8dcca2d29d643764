#!/usr/bin/env python3
"""PyTorch training a whole run of vkf train's recipe, for the training anchor (bench/train-anchor).

The same corpus (token ids from `vkf vocab --model M --encode`, one sentence a line), the same
token batches (model/data/batcher.cpp written again: length buckets, rows per batch, and the
SplitMix64 shuffle of each epoch from the seed, so the steps see the same shapes in the same
order), the same model (post-LN nn.Transformer without final norms, shared embeddings scaled by
sqrt(d_model) and tied to the output projection, sinusoidal positions, padding masked), loss
(label smoothing, padding ignored) and optimiser (Adam(0.9, 0.98, 1e-9) with the paper's
inverse-square-root warm-up). Dropout as the preset, on the residuals and embeddings only.

  torch_train_recipe.py --source SRC.ids --target TGT.ids [--preset tiny] [--max-tokens 2048]
                        [--steps 300] [--warmup-steps 400] [--lr 0.5] [--seed 1] [--threads 0]

--plan EPOCHS prints the batches instead (no torch needed). Otherwise prints one JSON object: the
pairs kept and batches an epoch (the anchor script checks both against vkf train's log), and for
each thread count the seconds a step over the whole run (first step included, as a user waits for
it), the steady seconds a step after the first logged interval, and the training loss of the last
interval. --threads 0 runs one thread and every core, each from a
fresh model; the faster counts.
"""
import argparse
import json
import os
import sys
import time

try:
    import torch
    import torch.nn as nn
    from torch_train import PRESETS, Model
except ImportError:
    torch = None  # --plan needs no torch

PAD, BOS, EOS = 0, 2, 3  # model/data/special_ids.h
MASK64 = (1 << 64) - 1


class SplitMix64:
    """model/data/batcher.cpp's generator, bit for bit."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        threshold = ((1 << 64) - n) % n
        while True:
            r = self.next()
            if r >= threshold:
                return r % n


def shuffle(items, rng):
    for i in range(len(items), 1, -1):
        j = rng.below(i)
        items[i - 1], items[j] = items[j], items[i - 1]


def epoch_rng(seed, epoch):
    a = SplitMix64(seed).next()
    return SplitMix64(a ^ SplitMix64(epoch ^ 0x6A09E667F3BCC909).next())


def default_buckets(max_len):
    buckets, n = [], 8
    while n < max_len:
        buckets.append(n)
        n = n + 8 if n < 64 else (n + n // 4 + 7) // 8 * 8
    return buckets + [max_len]


def read_ids(path):
    with open(path) as f:
        return [[int(t) for t in line.split()] for line in f]


def read_pairs(source, target, max_len):
    """vkf's corpus reader: pairs with an empty side or more than max_len - 1 pieces are
    skipped."""
    src, tgt = read_ids(source), read_ids(target)
    if len(src) != len(tgt):
        sys.exit(f"{source} has {len(src)} lines, {target} {len(tgt)}")
    return [(s, t) for s, t in zip(src, tgt) if s and t and len(s) < max_len and len(t) < max_len]


class Batcher:
    def __init__(self, pairs, max_tokens, max_len, seed, multiple=8):
        self.pairs, self.seed = pairs, seed
        buckets = default_buckets(max_len)
        bucket = lambda n: next(b for b in buckets if b >= n)
        groups = {}
        for i, (s, t) in enumerate(pairs):
            groups.setdefault((bucket(len(s) + 1), bucket(len(t) + 1)), []).append(i)
        self.groups = []
        for (sl, tl) in sorted(groups):
            rows = max_tokens // max(sl, tl)
            if rows >= multiple:
                rows -= rows % multiple
            self.groups.append((sl, tl, rows, groups[(sl, tl)]))
        self.per_epoch = sum((len(g[3]) + g[2] - 1) // g[2] for g in self.groups)

    def plan(self, epoch):
        rng = epoch_rng(self.seed, epoch)
        batches = []
        for sl, tl, rows, examples in self.groups:
            order = list(examples)
            shuffle(order, rng)
            batches += [(sl, tl, order[i:i + rows]) for i in range(0, len(order), rows)]
        shuffle(batches, rng)
        return batches

    def tensors(self, batch):
        sl, tl, rows = batch
        src = torch.full((len(rows), sl), PAD, dtype=torch.long)
        tgt_in = torch.full((len(rows), tl), PAD, dtype=torch.long)
        tgt_out = torch.full((len(rows), tl), PAD, dtype=torch.long)
        for r, i in enumerate(rows):
            s, t = self.pairs[i]
            src[r, :len(s) + 1] = torch.tensor(s + [EOS])
            tgt_in[r, :len(t) + 1] = torch.tensor([BOS] + t)
            tgt_out[r, :len(t) + 1] = torch.tensor(t + [EOS])
        return src, tgt_in, tgt_out

    def stream(self):
        epoch = 0
        while True:
            for batch in self.plan(epoch):
                yield self.tensors(batch)
            epoch += 1


def print_plan(batcher, epochs):
    """The batches of the first epochs, one a line: epoch, source and target lengths, examples
    (tests/model/test_batcher.cpp compares them with vkf's Batcher)."""
    for epoch in range(epochs):
        for sl, tl, rows in batcher.plan(epoch):
            print(epoch, sl, tl, *rows)


if torch is None:
    Model = object  # the class below is only built where torch is


class RecipeModel(Model):
    """torch_train.py's model as vkf builds it: no final norms, padding masked, dropout only on
    the residual branches and the embeddings (vkf's attention dropout is 0 by default, and it
    has none inside the feed-forward network)."""

    def __init__(self, preset, vocab, max_len):
        super().__init__(preset, vocab, max_len)
        self.t.encoder.norm = nn.Identity()
        self.t.decoder.norm = nn.Identity()
        for layer in list(self.t.encoder.layers) + list(self.t.decoder.layers):
            layer.dropout = nn.Identity()  # inside the feed-forward network
            layer.self_attn.dropout = 0.0
            if hasattr(layer, "multihead_attn"):
                layer.multihead_attn.dropout = 0.0

    def forward(self, src, tgt_in):
        mask = self.t.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.t(self.embed_tokens(src), self.embed_tokens(tgt_in), tgt_mask=mask,
                   src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt_in == PAD,
                   memory_key_padding_mask=src == PAD)
        return h @ self.embed.weight.t()


def run(a, batcher, vocab, log_every=10):
    torch.manual_seed(a.seed)
    preset = PRESETS[a.preset]
    model = RecipeModel(preset, vocab, a.max_len)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=PAD)
    d = preset["d_model"]
    stream = batcher.stream()
    losses, marks = [], []
    t0 = time.perf_counter()
    for step in range(1, a.steps + 1):
        src, tgt_in, tgt_out = next(stream)
        for g in opt.param_groups:
            g["lr"] = a.lr * d ** -0.5 * min(step ** -0.5, step * a.warmup_steps ** -1.5)
        opt.zero_grad(set_to_none=True)
        logits = model(src, tgt_in)
        loss = loss_fn(logits.reshape(-1, vocab), tgt_out.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % log_every == 0:
            marks.append(time.perf_counter())
    total = time.perf_counter() - t0
    if len(marks) > 1:
        steady = (marks[-1] - marks[0]) / (log_every * (len(marks) - 1))
    else:  # a run of one interval has no steady part
        steady = total / a.steps
    last = losses[-log_every:]
    return {"seconds_per_step": total / a.steps, "steady_seconds_per_step": steady,
            "last_interval_loss": sum(last) / len(last)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--preset", default="tiny", choices=list(PRESETS) if torch else None)
    ap.add_argument("--vocab-size", type=int, default=2000)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup-steps", type=int, default=400)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0,
                    help="CPU threads; 0 = one thread and every core, the faster counting")
    ap.add_argument("--plan", type=int, default=0, metavar="EPOCHS",
                    help="print the batches of the first EPOCHS epochs instead of training")
    a = ap.parse_args()
    pairs = read_pairs(a.source, a.target, a.max_len)
    batcher = Batcher(pairs, a.max_tokens, a.max_len, a.seed)
    if a.plan:
        print_plan(batcher, a.plan)
        return
    if torch is None:
        print(json.dumps({"error": "torch is not installed"}))
        return
    counts = [a.threads] if a.threads else sorted({1, os.cpu_count() or 1})
    runs = {}
    for n in counts:
        torch.set_num_threads(n)
        runs[str(n)] = run(a, batcher, a.vocab_size)
    best = min(runs, key=lambda n: runs[n]["seconds_per_step"])
    print(json.dumps({"preset": a.preset, "pairs": len(pairs), "batches_per_epoch": batcher.per_epoch,
                      "steps": a.steps, "best_threads": int(best), "by_threads": runs,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
