#!/usr/bin/env python3
"""pty_repl.py — drives the real `tide` binary through a pseudo-terminal, as a person at a keyboard
would: completion, history across sessions, multi-line input, Ctrl-C at the prompt and during a long
run, Ctrl-D.

    python3 tests/e2e/pty_repl.py path/to/tide

Prints one line per check ("ok N - ..." or "FAIL N - ...") and exits 1 if any fails. Every session
runs with HOME set to a fresh temporary directory (so ~/.tide_history is the test's own), TERM=xterm
and a fixed 30x100 window. Each interaction sends keys and then waits for an expected pattern in the
output (ANSI escape sequences and carriage returns stripped), with a timeout: nothing waits a fixed
time where an expectation can be awaited. Keys meant for the prompt are sent once the line editor has
the terminal (it left canonical mode): typed earlier, the kernel would echo them first, and a Ctrl-C
would not be one at the prompt. TIDE_PTY_TIMEOUT scales the timeouts (slow ASan builds).
"""
import codecs
import errno
import fcntl
import os
import pty
import random
import re
import select
import shutil
import signal
import struct
import sys
import tempfile
import termios
import time

SCALE = float(os.environ.get("TIDE_PTY_TIMEOUT", "1"))
PROMPT = r"tide> $"
CONT = r"\.\.\.> $"
# CSI sequences, OSC strings, charset selection, keypad modes, the bell, carriage returns.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]"
                  r"|\x1b[=>78]|\x07|\r")


class Timeout(Exception):
    pass


class Session:
    """One `tide` process on a pty. `out` is everything it printed, cleaned; `pos` is how far the
    expectations have consumed it."""

    def __init__(self, argv, home):
        env = dict(os.environ, HOME=home, TERM="xterm", COLUMNS="100", LINES="30")
        env.pop("EDITRC", None)
        env.setdefault("TIDE_LOG", "")  # no ./tide-runs.db from a test (meson's env says the same)
        master, slave = pty.openpty()
        self.slave_name = os.ttyname(slave)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        pid = os.fork()
        if pid == 0:
            try:
                os.close(master)
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(slave, fd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        os.close(slave)
        self.pid, self.fd = pid, master
        self.raw = ""          # everything read, escapes included (to see the modes it set)
        self.out = ""          # cleaned
        self.pos = 0
        self.tail = ""         # an escape sequence cut in two by a read
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.status = None

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def editing(self):
        """Whether the line editor has the terminal (non-canonical mode): keys typed before that are
        echoed by the kernel instead, and a Ctrl-C there is not one at the prompt."""
        fd = os.open(self.slave_name, os.O_RDWR | os.O_NOCTTY)
        try:
            return not termios.tcgetattr(fd)[3] & termios.ICANON
        finally:
            os.close(fd)

    def type(self, keys, timeout=5.0):
        """Sends keys at the prompt, once the line editor is reading."""
        deadline = time.monotonic() + timeout * SCALE
        while not self.editing():
            if time.monotonic() > deadline:
                raise Timeout(f"the line editor never took the terminal; output: {self.recent()!r}")
            try:
                self._read(0.01)
            except EOFError:
                raise Timeout(f"exited; output: {self.recent()!r}")
        self.send(keys)

    def _read(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], max(timeout, 0))
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError as e:  # EIO: the child closed the pty
            if e.errno != errno.EIO:
                raise
            data = b""
        if not data:
            raise EOFError
        text = self.tail + self.decoder.decode(data)
        self.raw += text[len(self.tail):]
        cut = text.rfind("\x1b")
        if cut >= 0 and len(text) - cut < 32 and not ANSI.match(text, cut):
            text, self.tail = text[:cut], text[cut:]
        else:
            self.tail = ""
        self.out += ANSI.sub("", text)
        return True

    def expect(self, pattern, timeout=5.0):
        """Waits for pattern (multi-line regex) after pos; returns the match and consumes up to its
        end. Raises Timeout with the output seen."""
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout * SCALE
        while True:
            m = rx.search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            try:
                self._read(deadline - time.monotonic())
            except EOFError:
                raise Timeout(f"exited while waiting for {pattern!r}; output: {self.recent()!r}")
            if time.monotonic() > deadline:
                raise Timeout(f"no {pattern!r} within {timeout * SCALE:.0f} s; "
                              f"output: {self.recent()!r}")

    def since(self, start):
        return self.out[start:self.pos]

    def recent(self):
        return self.out[max(0, self.pos - 200):][-600:]

    def up_arrow(self):
        """The Up key as a terminal sends it: application cursor mode when the program set it."""
        app = self.raw.rfind("\x1b[?1h") > self.raw.rfind("\x1b[?1l")
        self.type("\x1bOA" if app else "\x1b[A")

    def wait_exit(self, timeout=5.0):
        deadline = time.monotonic() + timeout * SCALE
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                raise Timeout(f"still running after {timeout * SCALE:.0f} s; output: {self.recent()!r}")
            try:
                self._read(0.05)
            except EOFError:
                time.sleep(0.01)
        return self.status

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)


class PtyChecks:
    """Numbered checks of tide at a terminal (this file's, pty_debugger.py's): each check is a method that
    drives Sessions under one temporary HOME and raises AssertionError or Timeout when it fails; all()
    runs the (description, method) pairs of checks(), prints "ok N - ..." or "FAIL N - ..." for each and
    returns the exit status."""

    def __init__(self, tide):
        self.tide = os.path.abspath(tide)
        self.home = tempfile.mkdtemp(prefix="tide-pty-")
        self.failed = 0
        self.number = 0

    def start(self, argv=None):
        """A session of argv (default: tide alone, once its prompt shows)."""
        s = Session(argv or [self.tide], self.home)
        if not argv:
            s.expect(PROMPT, 10)
        return s

    def enter(self, s, line, expect=PROMPT, timeout=10):
        """Types line and Enter; the match of what is expected next."""
        s.type(line + "\r")
        return s.expect(expect, timeout)

    def run(self, description, fn):
        self.number += 1
        try:
            fn()
            print(f"ok {self.number} - {description}")
        except (Timeout, AssertionError) as e:
            self.failed += 1
            print(f"FAIL {self.number} - {description}: {e}")
        sys.stdout.flush()

    def all(self):
        for description, fn in self.checks():
            self.run(description, fn)
        shutil.rmtree(self.home, ignore_errors=True)
        return 1 if self.failed else 0


def main_of(checks_class, script):
    """The main() of a file of PtyChecks: its one argument is the tide binary."""
    if len(sys.argv) != 2:
        print(f"usage: {script} path/to/tide", file=sys.stderr)
        return 2
    if not os.access(sys.argv[1], os.X_OK):
        print(f"{script}: {sys.argv[1]} is not an executable", file=sys.stderr)
        return 2
    return checks_class(sys.argv[1]).all()


class Checks(PtyChecks):

    # ---------------------------------------------------------------- the checks

    def prompt_and_expression(self):
        s = self.start()
        try:
            s.type("1+2\r")
            s.expect(r"^3$")
            s.expect(PROMPT)
            # Non-ASCII text reaches Lua whole (the line editor works in a UTF-8 locale).
            s.type("print(#'\u00e9t\u00e9')\r")
            s.expect(r"^5$")
            s.expect(PROMPT)
        finally:
            s.close()

    def completion(self):
        s = self.start()
        try:
            # An op function: the completed word is what runs.
            s.type("print(type(matm\t))\r")
            s.expect(r"^function$")
            s.expect(PROMPT)
            # A command.
            start = s.pos
            s.type(":he\t")
            s.expect(r":help")
            s.type("\r")
            s.expect(PROMPT)
            assert not re.search(r"unknown|error", s.since(start), re.I), \
                f":help failed: {s.since(start)!r}"
            # A node name.
            s.type("xyz_long = placeholder(float32, {2})\r")
            s.expect(PROMPT)
            s.type("print(xyz_l\t == nil)\r")
            s.expect(r"^false$")
            s.expect(PROMPT)
            # A field of a table, and a node name as the argument of :info.
            s.type("print(string.up\t('ok'))\r")
            s.expect(r"^OK$")
            s.expect(PROMPT)
            s.type(":info xyz_l\t")
            s.expect(r"xyz_long$")
            s.type("\x15\r")  # Ctrl-U empties the line
            s.expect(PROMPT)
            # Several candidates: listed below the line, then the line is redrawn.
            s.type("re\t\t")
            listing = s.expect(r"relu(?:.|\n)*\n.*tide> re$").group(0)
            assert "reshape" in listing, f"reshape not listed: {listing!r}"
            s.type("\x15\r")  # Ctrl-U empties the line
            s.expect(PROMPT)
        finally:
            s.close()

    def completion_lists(self):
        """One name per function (matmul, not mat_mul too), only names that evaluate (a node never
        assigned to a global is not offered), and a listing longer than the screen asks first."""
        s = self.start()
        try:
            s.type("mat\t")  # several candidates and nothing to add: listed at once
            listing = s.expect(r"matmul(?:.|\n)*\n.*tide> mat$").group(0)
            assert "mat_mul" not in listing, f"an alias is listed next to matmul: {listing!r}"
            assert "matrix_inverse" in listing, f"matrix_inverse not listed: {listing!r}"
            s.type("_\t")  # typed past the alias's fork: the alias itself still completes
            s.expect(r"mul$")
            s.type("\x15\r")
            s.expect(PROMPT)
            s.type("placeholder(float32, {2}, {name = 'zzz_unbound'})\r")
            s.expect(PROMPT)
            start = s.pos
            s.type("zzz_\t")
            time.sleep(0.3)
            s.type("\x15\r")
            s.expect(PROMPT)
            assert "zzz_unbound" not in s.since(start), f"a node that is no global was offered: {s.since(start)!r}"
            s.type(":info zzz_\t")  # node names stay offered where a command takes them
            s.expect(r":info zzz_unbound$")
            s.type("\x15\r")
            s.expect(PROMPT)
            # Everything (an empty word): hundreds of names, more than the 30-line screen.
            s.type("x = \t")
            s.expect(r"Display all \d+ possibilities\? \(y or n\)$")
            s.type("n")
            s.expect(r"tide> x = $")
            start = s.pos
            s.type("\t")
            s.expect(r"Display all \d+ possibilities\? \(y or n\)$")
            s.type("y")
            s.expect(r"tide> x = $")
            assert "while" in s.since(start) and "matmul" in s.since(start), \
                f"y did not list the candidates: {s.since(start)[-300:]!r}"
            s.type("\x15\r")
            s.expect(PROMPT)
        finally:
            s.close()

    def multi_line(self):
        s = self.start()
        try:
            s.type("for i = 1, 3 do\r")
            s.expect(CONT)
            s.type("print(i * 10)\r")
            s.expect(CONT)
            s.type("end\r")
            s.expect(r"^10\n20\n30$")
            s.expect(PROMPT)
        finally:
            s.close()

    def history(self):
        s = self.start()
        try:
            s.type("for i = 1, 2 do\r")
            s.expect(CONT)
            s.type("print(i)\r")
            s.expect(CONT)
            s.type("end\r")
            s.expect(PROMPT)
            s.type("a_marker = 42\r")
            s.expect(PROMPT)
            s.type("\x04")
            assert s.wait_exit() == 0, f"exit status {s.status}"
        finally:
            s.close()
        s = self.start()
        try:
            s.up_arrow()
            s.expect(r"a_marker = 42$")
            s.type("\r")
            s.expect(PROMPT)
            s.type("print(a_marker + 1)\r")
            s.expect(r"^43$")
            s.expect(PROMPT)
        finally:
            s.close()
        path = os.path.join(self.home, ".tide_history")
        assert os.path.exists(path), f"no {path}"
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        # libedit's format: a cookie line, then one line per entry with whitespace as \ooo.
        entries = [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), x) for x in lines[1:]]
        assert "a_marker = 42" in entries, f"history file holds {entries!r}"
        assert "for i = 1, 2 do\nprint(i)\nend" in entries, \
            f"the multi-line entry is not one history entry: {entries!r}"

    def ctrl_c_at_prompt(self):
        s = self.start()
        try:
            s.type("garbage text")
            s.expect(r"garbage text$")
            s.type("\x03")
            s.expect(r"\^C\n" + PROMPT)
            start = s.pos
            s.type("\r")
            s.expect(PROMPT)
            s.type("print('after', 1 + 1)\r")
            s.expect(r"^after\s+2$")
            s.expect(PROMPT)
            assert not re.search(r"garbage|error", s.since(start)), \
                f"the discarded line ran: {s.since(start)!r}"
            # From a continuation line: the whole pending entry goes.
            s.type("for i = 1, 2 do\r")
            s.expect(CONT)
            s.type("\x03")
            s.expect(r"\^C\n" + PROMPT)
            s.type("end\r")
            s.expect(r"'end'|<eof>|unexpected|error", 5)  # a stray `end`: the loop was dropped
            s.expect(PROMPT)
        finally:
            s.close()

    def ctrl_c_during_run(self):
        s = self.start()
        try:
            s.type("a = random_uniform({1500, 1500})\r")
            s.expect(PROMPT)
            s.type("b = a; for i = 1, 400 do b = matmul(b, a) end\r")
            s.expect(PROMPT, 30)
            start = s.pos
            s.type("run(b)\r")
            s.expect(r"run\(b\)\n")  # the echo: the run has started
            try:  # the run must still be going after a second
                s.expect(r"tide> $", 1)
                raise AssertionError(f"run(b) ended within a second: {s.since(start)!r}")
            except Timeout:
                pass
            s.send("\x03")
            t0 = time.monotonic()
            s.expect(r"(?i)cancel", 10)
            s.expect(PROMPT, 10)
            took = time.monotonic() - t0
            assert took < 10 * SCALE, f"the prompt came back after {took:.1f} s"
            s.type("1+1\r")
            s.expect(r"^2$")
            s.expect(PROMPT)
            s.type("print(a ~= nil and b ~= nil)\r")
            s.expect(r"^true$")
            s.expect(PROMPT)
        finally:
            s.close()

    def ctrl_c_lands_anywhere(self):
        """Ctrl-C at random moments of a loop of short runs (inside a run, between two, inside a
        pcall that would swallow the error): every press stops the entry and brings the prompt back.
        TIDE_PTY_PRESSES sets the number of presses (16)."""
        presses = int(os.environ.get("TIDE_PTY_PRESSES", "16"))
        rng = random.Random()
        s = self.start()
        honoured, lost = 0, []
        try:
            s.type("inc = constant(1.0) + 1\r")
            s.expect(PROMPT)
            loops = ["for i = 1, 1e8 do run(inc) end", "for i = 1, 1e8 do pcall(run, inc) end"]
            for k in range(presses):
                loop = loops[k % 2]
                s.type(loop + "\r")
                s.expect(re.escape(loop) + r"\n")
                time.sleep(rng.uniform(0.0, 0.3))
                s.send("\x03")
                try:
                    s.expect(r"interrupted \(Ctrl-C\)", 5)
                    s.expect(PROMPT, 5)
                    honoured += 1
                except Timeout as e:
                    lost.append(str(e)[-200:])
                    if not self.recover(s):
                        lost.append(f"no prompt after further presses: {presses - k - 1} presses not tried")
                        break
        finally:
            s.close()
        print(f"# {honoured} of {presses} Ctrl-C presses honoured")
        assert not lost, f"{honoured} of {presses} presses honoured; lost: {lost[:2]}"

    @staticmethod
    def recover(s):
        """After a lost Ctrl-C: presses again (a few times, a second apart) until the prompt is back."""
        for _ in range(3):
            time.sleep(1.0)  # not a second press within the first's grace time
            s.send("\x03")
            try:
                s.expect(PROMPT, 5)
                return True
            except Timeout:
                pass
        return False

    def second_ctrl_c_ends_stuck_entry(self):
        """An entry stuck in a C function that never returns to Lua (a backtracking string.find):
        the first Ctrl-C cannot stop it; a second one ends tide with status 130, saying why."""
        s = self.start()
        try:
            s.type("('a'):rep(5000):find('.-.-.-.-b')\r")
            s.expect(r"find\('\.-\.-\.-\.-b'\)\n")
            time.sleep(0.2)
            s.send("\x03")
            try:
                s.expect(PROMPT, 1.0)
                raise AssertionError("the stuck entry ended after one Ctrl-C: the check is moot")
            except Timeout:
                pass
            s.send("\x03")
            assert s.wait_exit(5) == 130, f"exit status {s.status}"
            s.expect(r"Ctrl-C again")
        finally:
            s.close()

    def ctrl_d_exits(self):
        s = self.start()
        try:
            s.type("\x04")
            assert s.wait_exit() == 0, f"exit status {s.status}"
        finally:
            s.close()

    def checks(self):
        return [
            ("banner and prompt; 1+2 prints 3; UTF-8 input", self.prompt_and_expression),
            ("Tab completes op functions, commands, node names; lists several candidates", self.completion),
            ("completion lists one name per function, only names that evaluate, asks past a screenful",
             self.completion_lists),
            ("an incomplete statement continues on a '...>' line", self.multi_line),
            ("history is kept across sessions in ~/.tide_history", self.history),
            ("Ctrl-C at the prompt discards the line (and a pending entry)", self.ctrl_c_at_prompt),
            ("Ctrl-C during a long run cancels it; the REPL and its state survive", self.ctrl_c_during_run),
            ("Ctrl-C at random moments of a loop of runs (also inside pcall) always stops it",
             self.ctrl_c_lands_anywhere),
            ("a second Ctrl-C ends an entry stuck in C code", self.second_ctrl_c_ends_stuck_entry),
            ("Ctrl-D exits with status 0", self.ctrl_d_exits),
        ]


def main():
    return main_of(Checks, "pty_repl.py")


if __name__ == "__main__":
    sys.exit(main())
