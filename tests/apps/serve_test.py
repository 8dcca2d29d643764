#!/usr/bin/env python3
"""`vkf serve` end to end, on loopback, against `vkf translate`'s answers.

Usage: serve_test.py CASE VKF MODEL_DIR WORK_DIR

CASE is one of:
  api     the LibreTranslate endpoints (JSON and forms, q a string or a list), /languages,
          /health, /metrics, the log, the limits and the bad requests (400, 413), greedy answers
          equal to `vkf translate --beam 1`, and the page at / in headless Chromium;
  client  an existing LibreTranslate client from the npm registry (libretranslate@1.0.1,
          installed into WORK_DIR/npm), run by Node against the server;
  load    64 concurrent clients, a few thousand requests (beam 4), every answer checked against
          `vkf translate`, none lost; then throughput against one request at a time, p50/p99
          latency and the server's peak memory;
  faults  an API key, slow headers, clients that disconnect mid-request, the queue limit (429),
          reloads under load (one good, one of a bad checkpoint: refused, the old model serves),
          SIGHUP, and SIGTERM under load (every request sent before it is answered, exit 0).

Exit status 0 when every check passed, 1 otherwise, 77 (ctest: skipped) when a tool the case
needs (chromium, node, npm, the npm registry) is missing.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_support import (FAILURES, Server, check, no_validation_messages,  # noqa: E402
                           percentile, raw_request, reference, run_clients, run_clients_authed,
                           sample_lines)

def case_api(vkf, model, work):
    flags = ["--beam", "1", "--max-len-a", "0", "--max-len-b", "10"]
    lines = sample_lines(24)
    want = reference(vkf, model, lines, flags, work, "api")
    s = Server(vkf, model, work, "api", flags + ["--max-lines", "32", "--max-body-bytes", "20000"])
    posts = 0
    try:
        status, _, body = s.request("GET", "/health")
        check(status == 200 and json.loads(body)["status"] == "ready", "GET /health: ready")
        # The service's translator applied --tune (VKF_TUNE=off in the tests) and said so.
        check("vkf serve: kernels default (--tune off)" in s.text(),
              "the log says which kernels run, as vkf translate's does")
        status, _, body = s.request("GET", "/languages")
        langs = json.loads(body)
        check(status == 200 and langs[0]["code"] == "en" and langs[0]["targets"] == ["de"],
              "GET /languages: en -> de")
        status, _, body = s.request("GET", "/")
        check(status == 200 and b"en &rarr; de" in body and b"<textarea" in body,
              "GET /: the page, with the pair")

        status, body = s.translate(lines)
        posts += 1
        check(status == 200 and body["translatedText"] == want,
              "q a list of %d lines: equal to vkf translate --beam 1" % len(lines))
        # vkf's own field: a request's output limit, below the server's (here 10).
        short = reference(vkf, model, lines[:6], ["--beam", "1", "--max-len-a", "0",
                                                  "--max-len-b", "3"], work, "api-short")
        status, _, data = s.request("POST", "/translate", json.dumps(
            {"q": lines[:6], "source": "en", "target": "de", "max_length": 3}),
            {"Content-Type": "application/json"})
        posts += 1
        check(status == 200 and json.loads(data)["translatedText"] == short,
              "max_length 3: equal to vkf translate --max-len-b 3")
        got = [None] * len(lines)

        def one(i):
            got[i] = s.translate(lines[i])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(lines))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        posts += len(lines)
        same = sum(1 for i in range(len(lines)) if got[i] == (200, {"translatedText": want[i]}))
        check(same == len(lines), "%d concurrent one-line requests: %d of %d equal to vkf "
              "translate" % (len(lines), same, len(lines)))
        status, body = s.translate(lines[0] + "\n" + lines[1])
        posts += 1
        check(status == 200 and body["translatedText"] == want[0] + "\n" + want[1],
              "a text of two lines: translated line by line")
        form = urllib.parse.urlencode([("q", lines[2]), ("source", "en"), ("target", "de")])
        status, _, body = s.request("POST", "/translate", form,
                                    {"Content-Type": "application/x-www-form-urlencoded"})
        posts += 1
        check(status == 200 and json.loads(body)["translatedText"] == want[2],
              "a form-encoded request")
        form = urllib.parse.urlencode([("q", lines[3]), ("q", lines[4]), ("source", "en"),
                                       ("target", "de")])
        status, _, body = s.request("POST", "/translate", form,
                                    {"Content-Type": "application/x-www-form-urlencoded"})
        posts += 1
        check(status == 200 and json.loads(body)["translatedText"] == want[3:5],
              "a form with q twice: a list")

        bad = [
            ("another source language", {"q": "x", "source": "fr", "target": "de"}, 400,
             "en to de"),
            ("another target language", {"q": "x", "source": "en", "target": "es"}, 400,
             "en to de"),
            ("no q", {"source": "en", "target": "de"}, 400, "missing q"),
            ("q a number", {"q": 3, "source": "en", "target": "de"}, 400, "string"),
            ("q a list with a number", {"q": ["a", 3], "source": "en", "target": "de"}, 400,
             "strings"),
            ("format html", {"q": "x", "source": "en", "target": "de", "format": "html"}, 400,
             "only text"),
            ("33 lines (--max-lines 32)", {"q": ["a"] * 33, "source": "en", "target": "de"},
             400, "--max-lines"),
            ("max_length 0", {"q": "x", "source": "en", "target": "de", "max_length": 0}, 400,
             "'max_length' must be a whole number in [1, 65536]"),
            ("max_length 2.5", {"q": "x", "source": "en", "target": "de", "max_length": 2.5},
             400, "'max_length' must be a whole number"),
        ]
        for what, body, code, text in bad:
            status, _, data = s.request("POST", "/translate", json.dumps(body),
                                        {"Content-Type": "application/json"})
            posts += 1
            check(status == code and text in json.loads(data)["error"],
                  "%s: %d, '%s'" % (what, status, json.loads(data).get("error")))
        raw = [
            ("invalid JSON", b'{"q": "x", "source": ', "application/json", 400, "invalid JSON"),
            ("non-UTF-8 in JSON", b'{"q": "\xff\xfe", "source": "en", "target": "de"}',
             "application/json", 400, "UTF-8"),
            ("non-UTF-8 in a form", b"q=%FF%FE&source=en&target=de",
             "application/x-www-form-urlencoded", 400, "UTF-8"),
            ("max_length in a form, not a number", b"q=x&source=en&target=de&max_length=3x",
             "application/x-www-form-urlencoded", 400, "'max_length' must be a whole number"),
            ("a body over --max-body-bytes", b"q=" + b"a" * 30000 + b"&source=en&target=de",
             "application/x-www-form-urlencoded", 413, "--max-body-bytes"),
        ]
        for what, body, ctype, code, text in raw:
            status, _, data = s.request("POST", "/translate", body, {"Content-Type": ctype})
            posts += 1
            msg = json.loads(data).get("error", "") if data else ""
            check(status == code and text in msg, "%s: %d, '%s'" % (what, status, msg))
        status, _, data = s.request("POST", "/reload")
        check(status == 403 and b"api-key-file" in data, "POST /reload without a key: 403")
        r = subprocess.run([vkf, "serve", "--model", model, "--source", "en", "--target", "de",
                            "--port", str(s.port)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        check(r.returncode == 1 and b"cannot listen on 127.0.0.1:%d" % s.port in r.stderr,
              "a port in use: exit 1, '%s'" % r.stderr.decode(errors="replace").strip()[-120:])
        r = subprocess.run([vkf, "serve", "--model", model, "--target", "de"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        check(r.returncode != 0 and b"--source" in r.stderr, "no --source: an error naming it")

        _, _, metrics = s.request("GET", "/metrics")
        m = metrics.decode()
        check('vkf_serve_requests_total{path="/translate",status="200"} %d' % (posts - 14) in m,
              "/metrics: the 200s of /translate counted")
        if not check('vkf_serve_requests_total{path="/translate",status="400"} 13' in m and
                     'status="413"} 1' in m, "/metrics: the 400s and the 413 counted"):
            print(m)
        check("vkf_serve_request_seconds_count %d" % posts in m and
              'vkf_serve_request_seconds_bucket{le="+Inf"} %d' % posts in m,
              "/metrics: the latency histogram holds every request")
        check("vkf_serve_queue_lines 0" in m and "vkf_serve_batches_total{lines=" in m and
              "vkf_serve_tokens_per_second" in m, "/metrics: queue depth, batch sizes, tokens/s")
        posts += page_in_chromium(s, lines[5], want[5], work)
    finally:
        rc = s.stop()
    check(rc == 0, "SIGTERM: exit status %d" % rc)
    logged = len(re.findall(r'"POST /translate" \d{3} ', s.text()))
    check(logged == posts, "one log line a request: %d of %d" % (logged, posts))
    no_validation_messages(s)


def page_in_chromium(server, line, want, work):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("skip the page test: chromium is not installed (scripts/install-deps installs it)")
        return 0
    url = "http://127.0.0.1:%d/?q=%s" % (server.port, urllib.parse.quote(line))
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", "--user-data-dir=" + os.path.join(work, "chromium-profile"),
           "--virtual-time-budget=30000", "--dump-dom", url]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=240)
    dom = out.stdout.decode("utf-8", errors="replace")
    m = re.search(r'<div id="out">(.*?)</div>', dom, re.S)
    shown = m.group(1) if m else None
    escaped = want.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    check(shown == escaped, "the page in headless Chromium shows the translation (%r)" % shown)
    return 1  # the page's POST /translate


def case_client(vkf, model, work):
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        print("node or npm is not installed (scripts/install-deps installs them): skipped")
        return 77
    prefix = os.path.join(work, "npm")
    client = os.path.join(prefix, "node_modules", "libretranslate")
    if not os.path.isdir(client):
        r = subprocess.run([npm, "install", "--prefix", prefix, "--no-audit", "--no-fund",
                            "libretranslate@1.0.1"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=300)
        if r.returncode != 0:
            print(r.stdout.decode(errors="replace"))
            print("the npm registry is unreachable: skipped")
            return 77
    flags = ["--beam", "1", "--max-len-a", "0", "--max-len-b", "10"]
    lines = sample_lines(4)
    want = reference(vkf, model, lines, flags, work, "client")
    s = Server(vkf, model, work, "client", flags)
    script = """
const { translate } = require(%s);
(async () => {
  const apiurl = 'http://127.0.0.1:%d';
  const out = [];
  for (const q of %s) out.push(await translate({ query: q, source: 'en', target: 'de', apiurl }));
  out.push(await translate({ query: %s, source: 'en', target: 'de', apiurl }));
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
""" % (json.dumps(client), s.port, json.dumps(lines), json.dumps(lines))
    try:
        r = subprocess.run([node, "-e", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        print(r.stderr.decode(errors="replace"))
        got = json.loads(r.stdout) if r.returncode == 0 else None
        check(got == want + [want], "the npm client libretranslate@1.0.1: %d strings and a "
              "list, equal to vkf translate" % len(lines))
    finally:
        rc = s.stop()
    check(rc == 0, "SIGTERM: exit status %d" % rc)
    return 0


def case_load(vkf, model, work):
    env = dict(os.environ, VKF_VALIDATION="0")  # a load, not a validation run
    # Output limits that follow the source (a quarter of it, plus 4), so a batch's lines finish
    # at different steps and waiting lines join it mid-decoding.
    flags = ["--beam", "4", "--max-len-a", "0.25", "--max-len-b", "4"]
    lines = sample_lines(200)
    want = reference(vkf, model, lines, flags, work, "load")
    pairs = list(zip(lines, want))
    s = Server(vkf, model, work, "load", flags + ["--queue-limit", "4096"], env=env)
    try:
        s.translate(lines[0])  # records the first shapes
        sequential = 40
        res1, t1 = run_clients(s, [i % len(pairs) for i in range(sequential)], 1, pairs)
        total, clients = int(os.environ.get("VKF_SERVE_LOAD_REQUESTS", "2000")), 64
        rng = random.Random(1)
        jobs = [rng.randrange(len(pairs)) for _ in range(total)]
        half = total // 2
        res2a, t2a = run_clients(s, jobs[:half], clients, pairs)
        rss_half = s.rss_mib()
        res2b, t2b = run_clients(s, jobs[half:], clients, pairs)
        rss_end = s.rss_mib()
        res2, t2 = res2a + res2b, t2a + t2b
        lost = [r for r in res2 if r[1] not in ("match", "mismatch")]
        matched = sum(1 for r in res2 if r[1] == "match")
        lat = [r[2] for r in res2]
        figures = {
            "requests": total, "clients": clients,
            "one_at_a_time_requests_per_s": sequential / t1,
            "concurrent_requests_per_s": total / t2,
            "gain": (total / t2) / (sequential / t1),
            "p50_ms": 1e3 * percentile(lat, 50), "p99_ms": 1e3 * percentile(lat, 99),
            "one_at_a_time_p50_ms": 1e3 * percentile([r[2] for r in res1], 50),
            "peak_rss_mib": s.peak_rss_mib(), "rss_half_mib": rss_half, "rss_end_mib": rss_end,
            "matching": matched, "lost": len(lost),
        }
        print("figures " + json.dumps(figures, sort_keys=True))
        check(all(r[1] == "match" for r in res1), "one at a time: every answer equals vkf "
              "translate")
        check(len(res2) == total and not lost, "%d requests from %d clients: none lost (%s)" %
              (total, clients, lost[:3]))
        check(matched >= 0.99 * total, "%d of %d equal to vkf translate (at least 99%%)" %
              (matched, total))
        # A floor, not the figure: a loaded 2-core machine moves the ratio (docs/serve.md has
        # figures measured on a quiet one).
        check(figures["gain"] > 1.2, "batching serves %.1fx the requests/s of one at a time" %
              figures["gain"])
        # Memory flat: the second half of the load adds no more than a few MiB.
        check(rss_end < rss_half * 1.1 + 8, "memory flat under load: %.0f MiB after half, %.0f "
              "MiB at the end" % (rss_half, rss_end))
        # In-flight batching: lines joined running batches, and a decoder step ran many lines.
        joined = s.metric("vkf_serve_joined_lines_total") or 0
        steps = s.metric("vkf_serve_decoder_steps_total") or 0
        step_lines = s.metric("vkf_serve_step_lines_total") or 0
        check(joined > 0, "lines joined running batches (%d)" % joined)
        check(steps > 0 and step_lines / steps > 4, "lines a decoder step, on average: %.1f" %
              (step_lines / steps if steps else 0))
    finally:
        rc = s.stop()
    check(rc == 0, "SIGTERM: exit status %d" % rc)


def case_faults(vkf, model, work):
    env = dict(os.environ, VKF_VALIDATION="0")
    # A copy of the model directory, to drop a bad checkpoint into.
    mdir = os.path.join(work, "faults-model")
    shutil.rmtree(mdir, ignore_errors=True)
    shutil.copytree(model, mdir, ignore=shutil.ignore_patterns("*.lock"))
    key = os.path.join(work, "key")
    with open(key, "w") as f:
        f.write("s3cret-key\n")
    flags = ["--beam", "1", "--max-len-a", "0", "--max-len-b", "8"]
    lines = sample_lines(40)
    want = reference(vkf, mdir, lines, flags, work, "faults")
    pairs = list(zip(lines, want))
    s = Server(vkf, mdir, work, "faults", flags + [
        "--api-key-file", key, "--read-timeout", "1", "--request-read-timeout", "3",
        "--queue-limit", "128", "--max-lines", "48",
        "--grace", "30"], env=env)
    authed = {"Authorization": "Bearer s3cret-key"}
    try:
        status, body = s.translate(lines[0])
        check(status == 403, "no API key: 403 (%s)" % body)
        status, body = s.translate(lines[0], extra={"api_key": "s3cret-kez"})
        check(status == 403, "a wrong API key: 403")
        status, body = s.translate(lines[0], extra={"api_key": "s3cret-key"})
        check(status == 200 and body["translatedText"] == want[0], "the API key in the body")
        status, body = s.translate(lines[0], headers=authed)
        check(status == 200 and body["translatedText"] == want[0], "the API key as a bearer")

        # Slow headers: half a request, then nothing; after --read-timeout the server answers 400
        # or hangs up.
        t0 = time.time()
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        c.settimeout(20)
        try:
            data = c.recv(1024)
            closed = data == b"" or data.startswith(b"HTTP/1.1 400")
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        c.close()
        check(closed and time.time() - t0 < 10, "slow headers: closed after %.1f s (--read-timeout"
              " 1)" % (time.time() - t0))
        # A client that dribbles its headers, a byte every 0.25 s: each read is within
        # --read-timeout, the whole request is not within --request-read-timeout (3 s).
        t0 = time.time()
        c = socket.create_connection(("127.0.0.1", s.port))
        c.settimeout(0.25)
        closed = False
        request = b"POST /translate HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 200
        try:
            for byte in request:
                c.sendall(bytes([byte]))
                try:
                    if c.recv(1024) == b"":
                        closed = True
                        break
                except socket.timeout:
                    pass
                if time.time() - t0 > 15:
                    break
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        elapsed = time.time() - t0
        c.close()
        check(closed and 2.5 < elapsed < 8, "a dribbling client: closed after %.1f s "
              "(--request-read-timeout 3, --read-timeout 1)" % elapsed)
        check(s.metric('vkf_serve_requests_total{path="other",status="408"}') == 1,
              "/metrics counts the dribbling client as a 408")
        # A body that stops half way.
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(raw_request(s.port, b'{"q": "a long body"}')[:-8])
        c.settimeout(20)
        try:
            data = c.recv(1024)
        except (ConnectionResetError, socket.timeout):
            data = b"timeout"
        c.close()
        check(data == b"" or data.startswith(b"HTTP/1.1 400"), "a body that stalls: dropped")

        # Clients that disconnect mid-request: their lines leave the queue and the batch. 40
        # lines take two batches one after the other: far longer than the server's first look
        # at the connection, 20 ms after it queued them.
        body = json.dumps({"q": lines[:40], "source": "en", "target": "de",
                           "api_key": "s3cret-key"}).encode()
        for _ in range(3):
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(raw_request(s.port, body))
            c.close()
        deadline, gone = time.time() + 30, 0
        while time.time() < deadline:
            _, _, m = s.request("GET", "/metrics")
            m = m.decode()
            hit = re.search(r'path="/translate",status="499"\} (\d+)', m)
            gone = int(hit.group(1)) if hit else 0
            if gone == 3 and "vkf_serve_queue_lines 0" in m and "vkf_serve_running_lines 0" in m:
                break
            time.sleep(0.1)
        check(gone == 3, "3 clients that hung up: 3 requests cancelled (499 in /metrics)")
        check("vkf_serve_queue_lines 0" in m and "vkf_serve_running_lines 0" in m,
              "their lines left the queue and the batch")
        status, body = s.translate(lines[1], headers=authed)
        check(status == 200 and body["translatedText"] == want[1], "and the next request is "
              "answered")

        # The queue limit (128 lines): 6 requests of 40 lines at once; some get 429.
        outcomes = []

        def big():
            st, h, d = s.request("POST", "/translate", json.dumps(
                {"q": lines[:40], "source": "en", "target": "de"}),
                {"Content-Type": "application/json", **authed})
            outcomes.append((st, h.get("Retry-After"), json.loads(d)))

        threads = [threading.Thread(target=big) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        refused = [o for o in outcomes if o[0] == 429]
        fine = [o for o in outcomes if o[0] == 200 and o[2]["translatedText"] == want[:40]]
        check(refused and all(o[1] == "1" for o in refused) and len(refused) + len(fine) == 6,
              "queue limit: %d answered, %d refused with 429 and Retry-After" %
              (len(fine), len(refused)))

        # Reloads under load: a good one (POST /reload), then a bad checkpoint (refused).
        pairs_authed = pairs

        def load_for(seconds, clients=16):
            return run_clients_authed(s, pairs_authed, clients, seconds, authed)

        box = {}
        loader = threading.Thread(target=lambda: box.update(r=load_for(6)))
        loader.start()
        time.sleep(1)
        status, _, data = s.request("POST", "/reload", headers=authed)
        check(status == 200, "POST /reload under load: %d %s" % (status, data[:200]))
        with open(os.path.join(mdir, "checkpoint-999.safetensors"), "wb") as f:
            f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}  ")
        status, _, data = s.request("POST", "/reload", headers=authed)
        check(status == 409 and b"old model keeps serving" in data,
              "a bad checkpoint: refused (%d %s)" % (status, data[:160]))
        s.proc.send_signal(signal.SIGHUP)
        loader.join()
        res = box["r"]
        bad = [r for r in res if r[1] != "match"]
        check(len(res) > 20 and not bad, "%d requests during the reloads: all answered, equal to "
              "vkf translate (%s)" % (len(res), bad[:3]))
        deadline = time.time() + 20
        while "SIGHUP: reload refused" not in s.text() and time.time() < deadline:
            time.sleep(0.1)
        check("SIGHUP: reload refused" in s.text(), "SIGHUP with the bad checkpoint: refused")
        status, _, data = s.request("GET", "/health")
        check(status == 200 and b"checkpoint-2.safetensors" in data, "the old model serves")
        check(s.metric('vkf_serve_reloads_total{result="refused"}') == 2 and
              s.metric('vkf_serve_reloads_total{result="ok"}') == 1, "/metrics counts reloads")

        # SIGTERM under load: everything sent before it is answered, then exit 0.
        box = {}
        loader = threading.Thread(target=lambda: box.update(r=load_for(8, 32)))
        loader.start()
        time.sleep(1.5)
        t_term = time.time()
        s.proc.send_signal(signal.SIGTERM)
        rc = s.proc.wait(40)
        loader.join()
        res = box["r"]
        before = [r for r in res if r[3] < t_term - 0.05]
        unanswered = [r for r in before if r[1] != "match"]
        check(before and not unanswered, "SIGTERM under load: %d requests sent before it, all "
              "answered (%s)" % (len(before), unanswered[:3]))
        check(rc == 0, "SIGTERM under load: exit status %d" % rc)
    finally:
        s.stop()


def main():
    case, vkf, model, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    rc = {"api": case_api, "client": case_client, "load": case_load,
          "faults": case_faults}[case](vkf, model, work)
    if rc == 77:
        return 77
    print("PASS" if not FAILURES else "FAILED: %d checks" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
