"""checks.py — what the end-to-end REPL scripts (repl_commands.py, repl_runlog.py) share: one line per
check ("ok   NAME" or "FAIL NAME" with the detail indented), regular-expression checks, the counts for
the closing summary, and the test for a crash or a sanitizer report in a run of tide."""
import re

counts = {"passed": 0, "failed": 0}
SANITIZER = re.compile(r"Sanitizer|runtime error:|Assertion")


def check(name, ok, detail=""):
    if ok:
        counts["passed"] += 1
        print("ok   %s" % name)
    else:
        counts["failed"] += 1
        print("FAIL %s" % name)
        for line in str(detail).splitlines()[:40]:
            print("     | " + line)


def has(name, pattern, text, flags=re.M):
    check(name, re.search(pattern, text, flags) is not None, "no match for /%s/ in:\n%s" % (pattern, text))


def lacks(name, pattern, text, flags=re.M):
    check(name, re.search(pattern, text, flags) is None, "unexpected match for /%s/ in:\n%s" % (pattern, text))


def crashed(status, stderr):
    """Whether a run of tide ended by a signal, with an unexpected status, or with a sanitizer report."""
    return status < 0 or status > 3 or SANITIZER.search(stderr) is not None


def summary():
    """Prints the closing line; returns the exit status (1 if any check failed)."""
    print("%d passed, %d failed" % (counts["passed"], counts["failed"]))
    return 1 if counts["failed"] else 0
