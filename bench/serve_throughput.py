#!/usr/bin/env python3
"""serve_throughput.py -- total generation throughput of `gsm serve` with 1
stream against N simultaneous streams (continuous batching).

Starts `gsm serve` on a free port of 127.0.0.1 (--parallel N), sends streaming
completions with ignore_eos (every request generates exactly --tokens tokens),
first one alone, then N at once, and prints tokens/s of both and the ratio.
Only the Python standard library; a benchmark, not a test (no pass/fail).

    bench/serve_throughput.py [--gsm build/gsm] [--streams 16] [--tokens 64] [-- extra serve options]
"""
import argparse
import http.client
import json
import re
import subprocess
import sys
import threading
import time


def stream_tokens(port, prompt, tokens):
    """One streaming completion; returns the number of text chunks (tokens) received."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({"prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True,
                       "stream": True, "stream_options": {"include_usage": True}})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:200]!r}")
    usage = None
    for line in resp:
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
    conn.close()
    return usage["completion_tokens"] if usage else 0


def run(port, n, tokens):
    counts = [0] * n
    errors = []

    def one(i):
        try:
            counts[i] = stream_tokens(port, f"Story {i}: once upon a time", tokens)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.monotonic() - t0
    if errors:
        raise errors[0]
    return sum(counts), dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gsm", default="build/gsm")
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("serve_args", nargs="*")
    a = ap.parse_args()
    cmd = [a.gsm, "serve", "--port", "0", "--parallel", str(a.streams), "-c", "512", *a.serve_args]
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            sys.exit(f"gsm serve did not start: {line!r}")
        port = int(m.group(1))
        run(port, 1, 4)   # warm-up (pipelines, first allocations)
        n1, t1 = run(port, 1, a.tokens)
        nn, tn = run(port, a.streams, a.tokens)
        r1, rn = n1 / t1, nn / tn
        print(f"1 stream:   {n1} tokens in {t1:.2f} s = {r1:.1f} tokens/s")
        print(f"{a.streams} streams: {nn} tokens in {tn:.2f} s = {rn:.1f} tokens/s total "
              f"({rn / r1:.2f}x; {rn / a.streams:.1f} tokens/s per stream)")
    finally:
        srv.terminate()
        srv.wait(timeout=60)


if __name__ == "__main__":
    main()
