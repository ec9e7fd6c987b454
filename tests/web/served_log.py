"""served_log.py — a run log made by a Lua script and served by `tide serve` on a free loopback port, for
the web benchmarks (tests/web/web_load.py, tests/bench/web_slowloris.py).

    with served_log(tide, "tests/web/make_log.lua", "tide-web-load-") as port:
        ...  # requests to 127.0.0.1:port

The log is made with two devices and `loss` watched, in a temporary directory removed afterwards; the
server is stopped with SIGTERM when the block ends. A server that does not start ends the program
("FAIL: tide serve did not start")."""
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile


@contextlib.contextmanager
def served_log(tide, make_log, prefix):
    env = dict(os.environ, TIDE_LOG="")
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        db = os.path.join(tmp, "runs.db")
        subprocess.run([tide, "--devices", "2", "--log", db, "-e", ":watch loss", make_log], check=True,
                       capture_output=True, env=env, timeout=120)
        p = subprocess.Popen([tide, "serve", db, "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
        m = re.search(r":(\d+)/$", p.stdout.readline().strip())
        if not m:
            p.kill()
            sys.exit("FAIL: tide serve did not start")
        try:
            yield int(m.group(1))
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
