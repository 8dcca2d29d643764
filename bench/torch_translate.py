#!/usr/bin/env python3
"""PyTorch on the same checkpoint as vkf: translation speed, and scores to compare with vkf score.

Loads a vkf checkpoint (safetensors, shared/design.md names) into torch.nn.Transformer (post-LN,
no final norms, shared embeddings) on the CPU and

  speed   decodes random sources (greedy or beam) and prints tokens/s as JSON. PyTorch's
          nn.Transformer has no key/value cache, so each step re-runs the decoder over the
          prefix, which is what a plain PyTorch implementation does.
  score   reads "src ids TAB tgt ids" lines (from `vkf vocab --model M --encode`) and prints
          the summed log-probability of each target (EOS included) and its token count, like
          `vkf score`.
"""
import argparse
import json
import math
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
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


@torch.no_grad()
def beam_search(m, src, beam, max_len, alpha=0.6):
    """Batched beam search, no cache; finished hypotheses kept per sentence."""
    c = m.c
    B = src.shape[0]
    memory, pad = m.encode(src)
    memory = memory.repeat_interleave(beam, 0)
    pad = pad.repeat_interleave(beam, 0)
    seqs = torch.full((B * beam, 1), c["bos_id"], dtype=torch.long)
    scores = torch.zeros(B, beam)
    scores[:, 1:] = -1e9
    done = torch.zeros(B * beam, dtype=torch.bool)
    generated = 0
    for _ in range(max_len):
        lp = m.logprobs(memory, pad, seqs)[:, -1]  # [B*beam, V]
        lp[done] = -1e9
        lp[done, c["eos_id"]] = 0.0
        V = lp.shape[1]
        cand = (scores.reshape(-1, 1) + lp).reshape(B, beam * V)
        top, idx = cand.topk(beam, dim=1)
        origin = (idx // V) + torch.arange(B).unsqueeze(1) * beam
        token = idx % V
        seqs = torch.cat([seqs[origin.reshape(-1)], token.reshape(-1, 1)], dim=1)
        done = done[origin.reshape(-1)] | (token.reshape(-1) == c["eos_id"])
        generated += int((~done).sum()) + 0
        scores = top
        if bool(done.all()):
            break
    return seqs, generated


def speed(a):
    c, w = load_safetensors(a.model)
    torch.set_num_threads(a.threads)
    m = Model(c, w)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, c["vocab_size"], (a.batch, a.src_len), generator=g)
    src[:, -1] = c["eos_id"]
    beam_search(m, src[:1], a.beam, 3)  # warm-up
    t0 = time.perf_counter()
    n_tokens = 0
    for _ in range(a.repeats):
        seqs, _ = beam_search(m, src, a.beam, a.max_len)
        n_tokens += a.batch * (seqs.shape[1] - 1)
    dt = time.perf_counter() - t0
    print(json.dumps({"beam": a.beam, "batch": a.batch, "sentences_per_second":
                      a.batch * a.repeats / dt, "output_tokens_per_second": n_tokens / dt,
                      "threads": torch.get_num_threads()}))


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
    sp.add_argument("--threads", type=int, default=0)
    sc = sub.add_parser("score")
    sc.add_argument("--model", required=True)
    a = ap.parse_args()
    if a.cmd == "speed":
        import os
        a.threads = a.threads or os.cpu_count() or 1
        speed(a)
    else:
        score(a)


if __name__ == "__main__":
    main()
