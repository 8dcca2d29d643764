#!/usr/bin/env python3
"""PyTorch on the same checkpoint as vkf: translation speed, and scores to compare with vkf score.

Loads a vkf checkpoint (safetensors, the names of docs/design.md) into torch.nn.Transformer
(post-LN, no final norms, shared embeddings) and

  speed   decodes random sources (greedy or beam) and prints sentences/s as JSON. The decoder
          runs incrementally with a key/value cache (self-attention keys and values appended
          per step, cross-attention keys and values projected once), as fairseq and CTranslate2
          decode; `--no-cache` re-runs nn.Transformer's decoder over the whole prefix instead.
          `--device cuda` on a GPU machine.
  translate  decodes real sentences: "src ids" lines (from `vkf vocab --model M --encode`) on
          stdin, longest first in batches of --batch as `vkf translate` batches them, output
          lengths up to --max-len-a * (source + EOS) + --max-len-b for each sentence (as vkf
          translate: the batch does not change a sentence's limit), the best hypothesis by
          GNMT's length penalty ((5 + len) / 6)^alpha; writes its ids (no BOS, no EOS) a line,
          in input order, and a JSON line of timings on stderr.
  check   asserts that the cached decoder's log-probabilities equal nn.Transformer's.
  score   reads "src ids TAB tgt ids" lines (from `vkf vocab --model M --encode`) and prints
          the summed log-probability of each target (EOS included) and its token count, like
          `vkf score`.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch_threads import at_best
except ImportError:
    print(json.dumps({"error": "torch is not installed"}))
    sys.exit(0)


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(t["shape"])
    return json.loads(meta["config"]), tensors


class Model(nn.Module):
    def __init__(self, c, w):
        super().__init__()
        d, L = c["d_model"], c["encoder_layers"]
        self.c = c
        self.t = nn.Transformer(d, c["heads"], L, c["decoder_layers"], c["d_ff"], 0.0,
                                batch_first=True, norm_first=False,
                                layer_norm_eps=c["layer_norm_eps"])
        self.t.encoder.norm = nn.Identity()
        self.t.decoder.norm = nn.Identity()
        self.embed = nn.Parameter(w["embed.weight"].clone())
        pe = torch.zeros(c["max_len"], d)
        pos = torch.arange(c["max_len"]).unsqueeze(1).double()
        i = torch.arange(0, d, 2).double()
        pe[:, 0::2] = torch.sin(pos / torch.pow(10000.0, i / d)).float()
        pe[:, 1::2] = torch.cos(pos / torch.pow(10000.0, i / d)).float()
        self.register_buffer("pe", pe)

        def attn(m, p):
            m.in_proj_weight.data = torch.cat([w[p + ".q_proj.weight"], w[p + ".k_proj.weight"],
                                               w[p + ".v_proj.weight"]])
            m.in_proj_bias.data = torch.cat([w[p + ".q_proj.bias"], w[p + ".k_proj.bias"],
                                             w[p + ".v_proj.bias"]])
            m.out_proj.weight.data = w[p + ".o_proj.weight"].clone()
            m.out_proj.bias.data = w[p + ".o_proj.bias"].clone()

        def norm(m, p):
            m.weight.data = w[p + ".weight"].clone()
            m.bias.data = w[p + ".bias"].clone()

        def ffn(l, p):
            l.linear1.weight.data = w[p + ".fc1.weight"].clone()
            l.linear1.bias.data = w[p + ".fc1.bias"].clone()
            l.linear2.weight.data = w[p + ".fc2.weight"].clone()
            l.linear2.bias.data = w[p + ".fc2.bias"].clone()

        for i, l in enumerate(self.t.encoder.layers):
            p = f"encoder.layers.{i}"
            attn(l.self_attn, p + ".self_attn")
            norm(l.norm1, p + ".self_attn_norm")
            ffn(l, p + ".ffn")
            norm(l.norm2, p + ".ffn_norm")
        for i, l in enumerate(self.t.decoder.layers):
            p = f"decoder.layers.{i}"
            attn(l.self_attn, p + ".self_attn")
            norm(l.norm1, p + ".self_attn_norm")
            attn(l.multihead_attn, p + ".cross_attn")
            norm(l.norm2, p + ".cross_attn_norm")
            ffn(l, p + ".ffn")
            norm(l.norm3, p + ".ffn_norm")
        self.eval()

    def emb(self, x):
        return self.embed[x] * math.sqrt(self.c["d_model"]) + self.pe[: x.shape[1]]

    def encode(self, src):
        pad = src == self.c["pad_id"]
        return self.t.encoder(self.emb(src), src_key_padding_mask=pad), pad

    def logprobs(self, memory, pad, tgt_in):
        mask = self.t.generate_square_subsequent_mask(tgt_in.shape[1])
        h = self.t.decoder(self.emb(tgt_in), memory, tgt_mask=mask, memory_key_padding_mask=pad)
        return torch.log_softmax(h @ self.embed.t(), dim=-1)


def attend(q, k, v, keep=None):
    """Scaled dot-product attention; `keep` is True where a key may be attended."""
    if hasattr(F, "scaled_dot_product_attention"):  # torch 2: fused kernels
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


class CachedDecoder:
    """nn.Transformer's decoder layers run one position at a time over a key/value cache."""

    def __init__(self, m, memory, pad, max_len):
        c = m.c
        self.m, self.h = m, c["heads"]
        n, s, d = memory.shape
        self.dk = d // self.h
        self.layers = list(m.t.decoder.layers)
        # Cross-attention keys and values: projected once per sentence.
        self.cross = []
        for l in self.layers:
            _, wk, wv = l.multihead_attn.in_proj_weight.chunk(3)
            _, bk, bv = l.multihead_attn.in_proj_bias.chunk(3)
            self.cross.append((self.heads(F.linear(memory, wk, bk)),
                               self.heads(F.linear(memory, wv, bv))))
        self.keep = (~pad)[:, None, None, :]  # [n, 1, 1, s]: True where a key may be attended
        shape = (len(self.layers), n, self.h, max_len, self.dk)
        self.k = torch.zeros(shape, device=memory.device)
        self.v = torch.zeros(shape, device=memory.device)

    def heads(self, x):  # [n, t, d] -> [n, h, t, dk]
        return x.view(x.shape[0], x.shape[1], self.h, self.dk).transpose(1, 2)

    def merge(self, x):  # [n, h, t, dk] -> [n, t, d]
        return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], self.h * self.dk)

    def reorder(self, rows):
        self.k, self.v = self.k[:, rows], self.v[:, rows]
        self.cross = [(k[rows], v[rows]) for k, v in self.cross]
        self.keep = self.keep[rows]

    def step(self, tokens, pos):
        """Log-probabilities of the next token after `tokens` [n] at position `pos`."""
        m = self.m
        x = m.embed[tokens][:, None] * math.sqrt(m.c["d_model"]) + m.pe[pos]
        for i, l in enumerate(self.layers):
            q, k, v = F.linear(x, l.self_attn.in_proj_weight, l.self_attn.in_proj_bias).chunk(3, -1)
            self.k[i, :, :, pos] = self.heads(k)[:, :, 0]
            self.v[i, :, :, pos] = self.heads(v)[:, :, 0]
            a = attend(self.heads(q), self.k[i, :, :, : pos + 1], self.v[i, :, :, : pos + 1])
            x = l.norm1(x + l.self_attn.out_proj(self.merge(a)))
            wq, _, _ = l.multihead_attn.in_proj_weight.chunk(3)
            bq, _, _ = l.multihead_attn.in_proj_bias.chunk(3)
            ck, cv = self.cross[i]
            a = attend(self.heads(F.linear(x, wq, bq)), ck, cv, self.keep)
            x = l.norm2(x + l.multihead_attn.out_proj(self.merge(a)))
            x = l.norm3(x + l.linear2(F.relu(l.linear1(x))))
        return torch.log_softmax(x[:, 0] @ m.embed.t(), dim=-1)


@torch.no_grad()
def beam_search(m, src, beam, max_len, cache=True, with_scores=False, limits=None):
    """Batched beam search (beam 1: greedy); finished hypotheses kept per sentence.

    `limits` [B] (optional): each sentence's own maximum output length, EOS included, as vkf
    stops each sentence at its own (a sentence's output must not depend on the batch it is in);
    its hypotheses are frozen from that position on. Without it every sentence runs to max_len.
    """
    c = m.c
    B, dev = src.shape[0], src.device
    row_limits = limits.to(dev).repeat_interleave(beam) if limits is not None else None
    memory, pad = m.encode(src)
    memory = memory.repeat_interleave(beam, 0)
    pad = pad.repeat_interleave(beam, 0)
    dec = CachedDecoder(m, memory, pad, max_len + 1) if cache else None
    seqs = torch.full((B * beam, 1), c["bos_id"], dtype=torch.long, device=dev)
    scores = torch.zeros(B, beam, device=dev)
    scores[:, 1:] = -1e9
    done = torch.zeros(B * beam, dtype=torch.bool, device=dev)
    offsets = torch.arange(B, device=dev).unsqueeze(1) * beam
    for pos in range(max_len):
        if dec:
            lp = dec.step(seqs[:, -1], pos)
        else:
            lp = m.logprobs(memory, pad, seqs)[:, -1]  # [B*beam, V]
        if row_limits is not None:
            done = done | (row_limits <= pos)
        lp[done] = -1e9
        lp[done, c["eos_id"]] = 0.0
        V = lp.shape[1]
        cand = (scores.reshape(-1, 1) + lp).reshape(B, beam * V)
        top, idx = cand.topk(beam, dim=1)
        origin = ((idx // V) + offsets).reshape(-1)
        token = idx % V
        seqs = torch.cat([seqs[origin], token.reshape(-1, 1)], dim=1)
        done = done[origin] | (token.reshape(-1) == c["eos_id"])
        if dec:
            dec.reorder(origin)
        scores = top
        if bool(done.all()):
            break
    return (seqs, scores) if with_scores else seqs


def random_sources(c, batch, src_len, device):
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, c["vocab_size"], (batch, src_len), generator=g)
    src[:, -1] = c["eos_id"]
    return src.to(device)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def speed(a):
    """Decoding speed; on the CPU with --threads 0, the faster of one thread and every core."""
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device for --device " + a.device}))
        return
    threads, (dt, n_tokens), runs = at_best(a.threads, dev, lambda: timed_search(a, dev))
    print(json.dumps({"beam": a.beam, "batch": a.batch, "sentences_per_second":
                      a.batch * a.repeats / dt, "output_tokens_per_second": n_tokens / dt,
                      "kv_cache": not a.no_cache, "device": str(dev), "threads": threads,
                      "sentences_per_second_by_threads":
                      {str(k): a.batch * a.repeats / v[0] for k, v in runs.items()},
                      "torch": torch.__version__}))


def timed_search(a, dev):
    """Seconds and output tokens of a.repeats searches of a batch, after one warm-up search."""
    c, w = load_safetensors(a.model)
    m = Model(c, w).to(dev)
    src = random_sources(c, a.batch, a.src_len, dev)
    beam_search(m, src, a.beam, a.max_len, not a.no_cache)  # warm-up at the timed shape
    sync(dev)
    t0 = time.perf_counter()
    n_tokens = 0
    for _ in range(a.repeats):
        seqs = beam_search(m, src, a.beam, a.max_len, not a.no_cache)
        n_tokens += a.batch * (seqs.shape[1] - 1)
    sync(dev)
    return time.perf_counter() - t0, n_tokens


@torch.no_grad()
def translate(a):
    c, w = load_safetensors(a.model)
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    m = Model(c, w).to(dev)
    sources = []
    for line in sys.stdin:
        ids = [int(x) for x in line.split()][: c["max_len"] - 1]
        sources.append(ids + [c["eos_id"]])
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))  # stable, longest first
    out = [[] for _ in sources]
    sync(dev)
    t0 = time.perf_counter()
    n_tokens = 0
    for start in range(0, len(order), a.batch):
        idx = order[start:start + a.batch]
        L = max(len(sources[i]) for i in idx)
        src = torch.full((len(idx), L), c["pad_id"], dtype=torch.long)
        for r, i in enumerate(idx):
            src[r, :len(sources[i])] = torch.tensor(sources[i])
        # Each sentence's own limit, as vkf translate (Translator::max_output) computes it.
        limits = [min(c["max_len"], max(1, int(a.max_len_a * len(sources[i])) + a.max_len_b))
                  for i in idx]
        seqs, scores = beam_search(m, src.to(dev), a.beam, max(limits), True, with_scores=True,
                                   limits=torch.tensor(limits))
        seqs = seqs.cpu().tolist()
        for r, i in enumerate(idx):
            best, best_n, best_key, lim = [], 0, -math.inf, limits[r]
            for k in range(a.beam):
                hyp = seqs[r * a.beam + k][1:]
                if c["eos_id"] in hyp[:lim]:  # ended by the model: EOS counts in the length
                    body = hyp[:hyp.index(c["eos_id"])]
                    n = len(body) + 1
                else:  # stopped at its limit, where vkf stops it: no EOS to count
                    body = hyp[:lim]
                    n = len(body)
                key = float(scores[r, k]) / (((5.0 + n) / 6.0) ** a.alpha if a.beam > 1 else 1.0)
                if key > best_key:
                    best, best_n, best_key = body, n, key
            out[i] = best
            n_tokens += best_n
    sync(dev)
    dt = time.perf_counter() - t0
    for o in out:
        print(" ".join(map(str, o)))
    print(json.dumps({"beam": a.beam, "batch": a.batch, "sentences": len(sources), "seconds": dt,
                      "sentences_per_second": len(sources) / dt,
                      "output_tokens_per_second": n_tokens / dt, "kv_cache": True,
                      "device": str(dev), "threads": torch.get_num_threads(),
                      "torch": torch.__version__}), file=sys.stderr)


@torch.no_grad()
def check(a):
    """The cached decoder against nn.Transformer over the whole prefix, and the searches."""
    c, w = load_safetensors(a.model)
    m = Model(c, w)
    src = random_sources(c, 3, 9, torch.device("cpu"))
    src[1, 5:] = c["pad_id"]  # a padded source
    memory, pad = m.encode(src)
    prefix = torch.randint(4, c["vocab_size"], (3, 7), generator=torch.Generator().manual_seed(2))
    prefix[:, 0] = c["bos_id"]
    full = m.logprobs(memory, pad, prefix)
    dec = CachedDecoder(m, memory, pad, prefix.shape[1])
    err = max(float((dec.step(prefix[:, t], t) - full[:, t]).abs().max())
              for t in range(prefix.shape[1]))
    same = all(torch.equal(beam_search(m, src, b, 12, True), beam_search(m, src, b, 12, False))
               for b in (1, 4))
    print(json.dumps({"max_abs_logprob_difference": err, "same_search_output": same}))
    sys.exit(0 if err < 1e-4 and same else 1)


@torch.no_grad()
def score(a):
    c, w = load_safetensors(a.model)
    m = Model(c, w)
    for line in sys.stdin:
        s, t = line.rstrip("\n").split("\t")
        src = torch.tensor([[int(x) for x in s.split()] + [c["eos_id"]]])
        tgt = [int(x) for x in t.split()]
        tgt_in = torch.tensor([[c["bos_id"]] + tgt])
        tgt_out = torch.tensor(tgt + [c["eos_id"]])
        memory, pad = m.encode(src)
        lp = m.logprobs(memory, pad, tgt_in)[0]
        total = lp[torch.arange(len(tgt_out)), tgt_out].double().sum().item()
        print(f"{total:.6f}\t{len(tgt_out)}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--model", required=True)
    sp.add_argument("--beam", type=int, default=4)
    sp.add_argument("--batch", type=int, default=32)
    sp.add_argument("--src-len", type=int, default=20)
    sp.add_argument("--max-len", type=int, default=20)
    sp.add_argument("--repeats", type=int, default=1)
    sp.add_argument("--threads", type=int, default=0,
                    help="CPU threads; 0 = the faster of one and every core")
    sp.add_argument("--device", default="cpu")
    sp.add_argument("--no-cache", action="store_true", help="re-run the decoder over the prefix")
    tr = sub.add_parser("translate")
    tr.add_argument("--model", required=True)
    tr.add_argument("--beam", type=int, default=4)
    tr.add_argument("--batch", type=int, default=32)
    tr.add_argument("--alpha", type=float, default=0.6)
    tr.add_argument("--max-len-a", type=float, default=1.0)
    tr.add_argument("--max-len-b", type=int, default=50)
    tr.add_argument("--threads", type=int, default=0)
    tr.add_argument("--device", default="cpu")
    ck = sub.add_parser("check")
    ck.add_argument("--model", required=True)
    sc = sub.add_parser("score")
    sc.add_argument("--model", required=True)
    a = ap.parse_args()
    if a.cmd == "speed":
        speed(a)
    elif a.cmd == "translate":
        a.threads = a.threads or os.cpu_count() or 1
        translate(a)
    elif a.cmd == "check":
        check(a)
    else:
        score(a)


if __name__ == "__main__":
    main()
