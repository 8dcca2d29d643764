#!/usr/bin/env python3
"""Serving benchmark: `vkf serve`'s throughput and latency against the number of concurrent
clients (1 to 64), in one run of one server, so that batching's gain over one request at a time
is measured under the same conditions.

Each client sends one sentence a request (LibreTranslate's POST /translate, JSON) and waits for
the answer before sending the next. For each concurrency the benchmark sends
max(--min-requests, concurrency x --requests-per-client) requests and reports requests/s,
output tokens/s (from the server's /metrics) and latency percentiles. Sentences come from the
bundled sample's test split. Without --model, a "tiny"-preset model is trained for one step on
the sample (random-like weights: every sentence runs to its maximum length, --max-len-b, as
bench/bench_translate.cpp measures decoding).

  bench/serve_bench.py --vkf build/apps/vkf [--model DIR] [--beam 4] [--out result.json]

The JSON result: the settings, the device line the server printed, and per concurrency
{clients, requests, seconds, requests_per_s, tokens_per_s, p50_ms, p90_ms, p99_ms, max_ms,
mean_step_lines (lines decoding in a decoder step, on average: the batch the device ran),
joined_lines (lines that joined a batch already decoding)}; "gain_vs_one" is each concurrency's
requests/s over that of one client.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "data", "sample")


def make_model(vkf, work):
    vocab = os.path.join(work, "spm.model")
    subprocess.run([vkf, "vocab", "--train-sets", os.path.join(SAMPLE, "train.en"),
                    os.path.join(SAMPLE, "train.de"), "--vocab-size", "2000", "--out", vocab],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = os.path.join(work, "model")
    subprocess.run([vkf, "train", "--preset", "tiny", "--train-sets",
                    os.path.join(SAMPLE, "train.en"), os.path.join(SAMPLE, "train.de"),
                    "--vocab", vocab, "--out", out, "--max-steps", "1"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    def counter(name):
        return float(re.search(r"^%s (\S+)" % name, text, re.M).group(1))
    return {name: counter("vkf_serve_" + name + "_total")
            for name in ("output_tokens", "decoder_steps", "step_lines", "joined_lines")}


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def run_level(port, sentences, clients, count):
    latencies, lock, next_index, errors = [], threading.Lock(), [0], []

    def worker():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                if next_index[0] >= count:
                    break
                i = next_index[0]
                next_index[0] += 1
            body = json.dumps({"q": sentences[i % len(sentences)], "source": "en",
                               "target": "de"})
            t0 = time.time()
            try:
                c.request("POST", "/translate", body, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    errors.append(r.status)
            except (OSError, http.client.HTTPException) as e:
                errors.append(str(e))
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                continue
            with lock:
                latencies.append(time.time() - t0)
        c.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.time() - start, latencies, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vkf", required=True)
    ap.add_argument("--model", help="checkpoint or directory (default: a tiny model, 1 step)")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--max-len-b", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--concurrency", default="1,2,4,8,16,32,64")
    ap.add_argument("--requests-per-client", type=int, default=4)
    ap.add_argument("--min-requests", type=int, default=32)
    ap.add_argument("--device", default="")
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="vkf-serve-bench-") as work:
        model = args.model or make_model(args.vkf, work)
        with open(os.path.join(SAMPLE, "test.en"), encoding="utf-8") as f:
            sentences = [l.strip() for l in f if l.strip()][:500]
        log_path = os.path.join(work, "serve.log")
        cmd = [args.vkf, "serve", "--model", model, "--source", "en", "--target", "de",
               "--port", "0", "--beam", str(args.beam), "--max-len-a", "0", "--max-len-b",
               str(args.max_len_b), "--batch-size", str(args.batch_size), "--queue-limit",
               "100000"]
        if args.device:
            cmd += ["--device", args.device]
        with open(log_path, "w") as log:
            server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        try:
            port, start = None, time.time()
            while port is None and time.time() - start < 600 and server.poll() is None:
                with open(log_path) as f:
                    text = f.read()
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
                port = int(m.group(1)) if m else None
                time.sleep(0.1)
            if port is None:
                sys.exit("vkf serve did not start:\n" + open(log_path).read())
            device = re.search(r"on (device .*?), en to de", text)
            # Warm-up: a pass over every level first, so the batch shapes the levels meet (row
            # counts, length buckets) are recorded before anything is timed.
            concurrency = [int(x) for x in args.concurrency.split(",")]
            for clients in concurrency:
                run_level(port, sentences, clients, clients * 2)
            levels = []
            for clients in concurrency:
                count = max(args.min_requests, clients * args.requests_per_client)
                before = metrics(port)
                seconds, lat, errors = run_level(port, sentences, clients, count)
                after = metrics(port)
                delta = {k: after[k] - before[k] for k in after}
                level = {
                    "clients": clients, "requests": count, "errors": len(errors),
                    "seconds": round(seconds, 3), "requests_per_s": round(count / seconds, 2),
                    "tokens_per_s": round(delta["output_tokens"] / seconds, 1),
                    "p50_ms": round(1e3 * percentile(lat, 50), 1),
                    "p90_ms": round(1e3 * percentile(lat, 90), 1),
                    "p99_ms": round(1e3 * percentile(lat, 99), 1),
                    "max_ms": round(1e3 * max(lat), 1),
                    "mean_step_lines": round(delta["step_lines"] / delta["decoder_steps"], 2)
                    if delta["decoder_steps"] else 0,
                    "joined_lines": int(delta["joined_lines"]),
                }
                levels.append(level)
                print(json.dumps(level), file=sys.stderr, flush=True)
        finally:
            server.terminate()
            server.wait(60)
        base = levels[0]["requests_per_s"]
        for level in levels:
            level["gain_vs_one"] = round(level["requests_per_s"] / base, 2)
        result = {"benchmark": "vkf serve", "device": device.group(1) if device else "",
                  "model": "given" if args.model else "tiny preset, 1 training step",
                  "beam": args.beam, "max_len_b": args.max_len_b,
                  "batch_size": args.batch_size, "levels": levels}
        text = json.dumps(result, indent=2)
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    main()
