"""Helpers of serve_test.py: a `vkf serve` process on a free loopback port, HTTP calls to it,
`vkf translate`'s reference answers, concurrent clients, and the check log."""
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "data", "sample", "train.en")
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


def sample_lines(n, start=1000):
    """n distinct short English lines of the bundled sample (not the tiny model's training)."""
    out = []
    with open(SAMPLE, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.strip()
            if i >= start and 8 <= len(line) <= 60 and line not in out:
                out.append(line)
            if len(out) == n:
                break
    return out


def reference(vkf, model, lines, flags, work, name):
    """What `vkf translate` answers for each line, with the server's decoding flags."""
    path = os.path.join(work, name + ".in")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([vkf, "translate", "--model", model, "--input", path, *flags],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if r.returncode != 0:
        print(r.stderr.decode(errors="replace"))
        raise SystemExit("vkf translate failed")
    out = r.stdout.decode("utf-8").split("\n")[:len(lines)]
    assert len(out) == len(lines)
    return out


class Server:
    """A `vkf serve` on 127.0.0.1 and a free port (--port 0: it prints the port)."""

    def __init__(self, vkf, model, work, name, flags, env=None):
        self.log_path = os.path.join(work, name + ".log")
        self.log = open(self.log_path, "w")
        cmd = [vkf, "serve", "--model", model, "--source", "en", "--target", "de", "--port", "0",
               *flags]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        start = time.time()
        self.port = None
        while time.time() - start < 240:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.text())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if self.port is None:
            print(self.text())
            raise SystemExit("vkf serve did not start")
        print("server %s on port %d, up in %.1f s" % (name, self.port, time.time() - start))

    def text(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def request(self, method, path, body=None, headers=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def translate(self, q, source="en", target="de", extra=None, headers=None):
        body = {"q": q, "source": source, "target": target, "format": "text"}
        body.update(extra or {})
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        status, _, data = self.request("POST", "/translate", json.dumps(body), h)
        try:
            return status, json.loads(data)
        except ValueError:
            return status, {"raw": data.decode(errors="replace")}

    def metric(self, name):
        """The value of one unlabelled (or fully labelled) sample of /metrics, or None."""
        _, _, data = self.request("GET", "/metrics")
        for line in data.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def peak_rss_mib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def rss_mib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -1


def no_validation_messages(server):
    text = server.text()
    check("alidation" not in text, "no validation-layer message in the server's log")


def run_clients(server, jobs, clients, want, stop_at=None):
    """Sends jobs (line indices, one request each) from `clients` threads; returns per request
    (index, status or exception text, latency seconds, start time) and the wall time."""
    results = []
    lock = threading.Lock()
    queue = list(jobs)

    def worker():
        while True:
            with lock:
                if not queue or (stop_at and time.time() > stop_at):
                    return
                i = queue.pop()
            t0 = time.time()
            try:
                status, body = server.translate(want[i][0])
                ok = status == 200 and body.get("translatedText") == want[i][1]
                outcome = status if status != 200 else ("match" if ok else "mismatch")
            except Exception as e:  # a connection refused or reset
                outcome = type(e).__name__
            with lock:
                results.append((i, outcome, time.time() - t0, t0))

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.time() - start


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def raw_request(port, body, path="/translate", ctype="application/json"):
    return ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            "\r\n" % (path, ctype, len(body))).encode() + body


def run_clients_authed(server, pairs, clients, seconds, headers):
    results, lock, stop_at = [], threading.Lock(), time.time() + seconds

    def worker(k):
        i = k
        while time.time() < stop_at:
            i = (i + 7) % len(pairs)
            t0 = time.time()
            try:
                status, body = server.translate(pairs[i][0], headers=headers)
                outcome = ("match" if body.get("translatedText") == pairs[i][1] else "mismatch") \
                    if status == 200 else status
            except Exception as e:
                outcome = type(e).__name__
            with lock:
                results.append((i, outcome, time.time() - t0, t0))
            if not isinstance(outcome, str) or outcome not in ("match", "mismatch"):
                return  # the server stopped taking requests

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
