#!/usr/bin/env python3
"""web_load.py — the web server under load: 2,000 requests over about 10 s from 4 client threads (keep-alive
connections) against `tide serve` on loopback, a mix of /api/runs, /api/graph.svg, /api/timeline, /api/tensor,
/api/status and pages. Every answer must be 200 (any error fails the benchmark). Prints JSON lines
{"name":"web.p50_ms",...} and {"name":"web.p99_ms",...} (latency of one request, in milliseconds).

Usage: web_load.py TIDE MAKE_LOG.lua (tests/web/meson.build registers it as benchmark 'web')."""
import http.client
import json
import statistics
import sys
import threading
import time

from served_log import served_log

THREADS = 4
REQUESTS = 2000
SECONDS = 10.0
MIX = ["/api/runs", "/api/graph.svg", "/api/timeline?run=3", "/api/tensor?node=loss", "/api/status", "/",
       "/static/graph.js", "/api/graph.svg?expand_all=1&run=3", "/api/runs?traced=1&limit=50", "/graph"]


def worker(port, n, offset, start, latencies, errors):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    interval = SECONDS / n
    for i in range(n):
        wait = start + i * interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        path = MIX[(i + offset) % len(MIX)]
        t0 = time.perf_counter()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            if r.status != 200 or not body:
                errors.append("%s: %d" % (path, r.status))
        except (OSError, http.client.HTTPException) as e:
            errors.append("%s: %s" % (path, e))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        latencies.append((time.perf_counter() - t0) * 1000.0)
    conn.close()


def main():
    tide, make_log = sys.argv[1], sys.argv[2]
    with served_log(tide, make_log, "tide-web-load-") as port:
        latencies, errors = [], []
        start = time.monotonic() + 0.2
        threads = [threading.Thread(target=worker, args=(port, REQUESTS // THREADS, k * 3, start, latencies, errors))
                   for k in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    common = {"requests": len(latencies), "errors": len(errors), "threads": THREADS, "seconds": round(elapsed, 2)}
    print(json.dumps(dict({"name": "web.p50_ms", "value": round(p50, 2), "unit": "ms"}, **common)), flush=True)
    print(json.dumps(dict({"name": "web.p99_ms", "value": round(p99, 2), "unit": "ms",
                           "max_ms": round(latencies[-1], 2)}, **common)), flush=True)
    if errors or len(latencies) != REQUESTS:
        print("FAIL: %d errors: %s" % (len(errors), errors[:5]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
