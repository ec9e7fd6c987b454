#!/usr/bin/env python3
"""web_slowloris.py — latency of normal requests to `tide serve` while slow clients attack it (issue 18
item 6; docs/web.md, "Limits").

Three phases against one server on loopback, each sending normal requests (a fresh connection each, a
mix of /api/status, /api/runs, /api/tensor, /api/timeline, graph SVGs and pages) from two threads at a
steady rate from 127.0.0.1:
  - quiet: no attack (the baseline);
  - slowloris: 300 connections from ten other addresses (127.0.0.2-11) each send a request line and then
    one header line every 2 s, never ending the header; reopened whenever the server closes them (its
    header deadline does, every 10 s), so that 300 are held throughout;
  - same address: 1000 such connections from 127.0.0.1 itself, the normal requests' own address
    (over the per-address limit: the server keeps closing the ones that waited longest).
Prints JSON lines: web.p99_ms_quiet, web.p99_ms_under_slowloris (the issue's figure; goal < 100 ms),
web.p99_ms_under_slowloris_same_address, each with p50, max, requests, errors and what the attackers
saw. Exits 1 when a normal request failed in the first two phases.

Usage: web_slowloris.py TIDE MAKE_LOG.lua (tests/bench/meson.build registers it as benchmark
'web_slowloris')."""
import http.client
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "web"))
from slow_clients import SlowPool, raise_file_limit  # noqa: E402
from served_log import served_log  # noqa: E402

MIX = ["/api/status", "/api/runs", "/api/tensor?node=loss", "/api/timeline?run=3", "/api/graph.svg", "/",
       "/api/runs?traced=1&limit=50", "/static/graph.js", "/api/scalars", "/api/graph.svg?expand_all=1&run=3"]
THREADS = 2
SECONDS = 10.0
RATE = 40  # normal requests per second, all threads together


def normal_requests(port, seconds, latencies, errors):
    def worker(k):
        n = int(seconds * RATE / THREADS)
        start = time.monotonic()
        for i in range(n):
            wait = start + i * THREADS / RATE - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            path = MIX[(i * THREADS + k) % len(MIX)]
            t0 = time.perf_counter()
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
                c.close()
                if r.status != 200 or not body:
                    errors.append("%s: %d" % (path, r.status))
            except (OSError, http.client.HTTPException) as e:
                errors.append("%s: %s" % (path, e))
            latencies.append((time.perf_counter() - t0) * 1000.0)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def server_counts(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/api/status")
    st = json.loads(c.getresponse().read())
    c.close()
    return st.get("server", {})


def phase(name, port, pool=None):
    if pool:
        pool.open_all().start()
        time.sleep(2.0)
    latencies, errors = [], []
    normal_requests(port, SECONDS, latencies, errors)
    held = pool.open_now() if pool else 0
    if pool:
        pool.stop()
    latencies.sort()
    line = {"name": name, "value": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2),
            "unit": "ms", "p50_ms": round(statistics.median(latencies), 2), "max_ms": round(latencies[-1], 2),
            "requests": len(latencies), "errors": len(errors)}
    if pool:
        line.update({"slow_connections": pool.count, "held_at_end": held, "closed_by_server": pool.closed_by_server,
                     "answers": pool.statuses, "connect_failures": pool.connect_failures})
    line["server"] = server_counts(port)
    print(json.dumps(line), flush=True)
    if errors:
        print("errors: %s" % errors[:5], file=sys.stderr)
    return errors


def main():
    tide, make_log = sys.argv[1], sys.argv[2]
    raise_file_limit(1400)
    with served_log(tide, make_log, "tide-web-slowloris-") as port:
        failed = phase("web.p99_ms_quiet", port)
        sources = ["127.0.0.%d" % k for k in range(2, 12)]
        failed += phase("web.p99_ms_under_slowloris", port, SlowPool(port, 300, sources=sources, interval=2.0))
        phase("web.p99_ms_under_slowloris_same_address", port, SlowPool(port, 1000, interval=2.0))
    if failed:
        print("FAIL: %d normal requests failed" % len(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
