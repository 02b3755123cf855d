"""Runs a command and writes its peak resident memory (KiB) to a file: peak_rss.py OUT CMD...

A child forked from the test runner starts with the runner's resident pages, and Linux keeps
that high-water mark in ru_maxrss across exec. Forked from this small process instead, the
command's figure is its own (plus this launcher's few MiB at most). The exit code is the
command's, or 128 plus the signal that ended it.
"""
import os
import sys

out, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as handle:
    handle.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
