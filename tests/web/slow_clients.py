"""slow_clients.py — abusive HTTP clients for the web server's tests (web_abuse.py) and its slowloris
benchmark (tests/bench/web_slowloris.py): connections that trickle a request header one line every few
seconds (slowloris) or stay idle, from chosen loopback source addresses (127.0.0.2 is another client
than 127.0.0.1 to the server), reopened when the server closes them as an attacker would. A pool runs
on a thread of its own; it counts what the server did to its connections."""
import errno
import re
import resource
import selectors
import socket
import threading
import time


def raise_file_limit(n):
    """Lets this process hold n sockets (soft RLIMIT_NOFILE up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 256
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))


def connect(port, source="127.0.0.1", timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


class SlowPool:
    """count connections spread over sources; mode "trickle" sends a request line and then one header
    line every interval seconds, never the blank line that ends the header; "idle" sends nothing."""

    def __init__(self, port, count, sources=("127.0.0.1",), mode="trickle", interval=2.0, reopen=True):
        self.port, self.count, self.sources, self.mode = port, count, list(sources), mode
        self.interval, self.reopen = interval, reopen
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.opened = self.closed_by_server = self.connect_failures = 0
        self.statuses = {}  # HTTP status the server answered before closing -> count
        self.stop_flag = False
        self.thread = None

    def _open(self, k):
        try:
            s = connect(self.port, self.sources[k % len(self.sources)])
        except OSError:
            with self.lock:
                self.connect_failures += 1
            return
        s.setblocking(False)
        try:
            if self.mode == "trickle":
                s.send(b"GET /api/status HTTP/1.1\r\nHost: tide\r\n")
        except OSError:
            pass
        self.sel.register(s, selectors.EVENT_READ, {"k": k, "next": time.monotonic() + self.interval, "data": b""})
        with self.lock:
            self.opened += 1

    def open_all(self):
        for k in range(self.count):
            self._open(k)
        return self

    def open_now(self):
        return len(self.sel.get_map())

    def _closed(self, key):
        d = key.data
        m = re.match(rb"HTTP/1\.1 (\d{3})", d["data"])
        with self.lock:
            self.closed_by_server += 1
            if m:
                self.statuses[int(m.group(1))] = self.statuses.get(int(m.group(1)), 0) + 1
        self.sel.unregister(key.fileobj)
        key.fileobj.close()
        if self.reopen and not self.stop_flag:
            self._open(d["k"])

    def tick(self, wait=0.05):
        for key, _ in self.sel.select(timeout=wait):
            try:
                chunk = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                key.data["data"] += chunk
            else:
                self._closed(key)
        now = time.monotonic()
        if self.mode != "trickle":
            return
        for key in list(self.sel.get_map().values()):
            if now >= key.data["next"]:
                key.data["next"] = now + self.interval
                try:
                    key.fileobj.send(b"X-Slow: 1\r\n")
                except OSError as e:
                    if e.errno not in (errno.EAGAIN,):
                        self._closed(key)

    def _run(self):
        while not self.stop_flag:
            self.tick()

    def start(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stop_flag = True
        if self.thread:
            self.thread.join()
        for key in list(self.sel.get_map().values()):
            self.sel.unregister(key.fileobj)
            key.fileobj.close()
        self.sel.close()
