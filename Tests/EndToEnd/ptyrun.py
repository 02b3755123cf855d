"""Runs a program in a real pseudo-terminal, the way a person at a terminal would. What the
program writes is also played on a small terminal emulator (vt.Screen), to check what a user
sees, and the time each piece arrived is kept."""
import codecs
import os
import re
import select
import signal
import termios
import time

from vt import Screen

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class PtySession:
    def __init__(self, argv, env, columns=120, rows=40, reflow=True, emulate=True):
        self.master, self.slave = os.openpty()
        import fcntl, struct
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.pid = os.fork()
        if self.pid == 0:
            os.setsid()
            fcntl.ioctl(self.slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(self.slave, fd)
            os.close(self.master)
            os.execve(argv[0], argv, env)
        self.buffer = b""
        self.status = None
        # What a user sees: every byte ever written, played on an emulator of the same size.
        self.screen = Screen(columns, rows, reflow=reflow) if emulate else None
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        # (time.time() at arrival, length of the buffer after it), for each piece read.
        self.arrivals = []

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        os.write(self.master, data)

    def line(self, text):
        self.send(text + "\r")

    def read_available(self, wait=0.05):
        while True:
            ready, _, _ = select.select([self.master], [], [], wait)
            if not ready:
                return
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.buffer += chunk
            self.arrivals.append((time.time(), len(self.buffer)))
            if self.screen:
                self.screen.feed(self.decoder.decode(chunk))

    def expect(self, pattern, timeout=10):
        """Waits until `pattern` (a regex on the decoded screen text) appears after the mark."""
        deadline = time.time() + timeout
        regex = re.compile(pattern)
        while time.time() < deadline:
            self.read_available(0.05)
            match = regex.search(self.text())
            if match:
                return match
            if self.exited():
                self.read_available(0.05)
                match = regex.search(self.text())
                if match:
                    return match
                break
        raise AssertionError("did not see %r; screen so far:\n%s" % (pattern, self.text()))

    def text(self):
        """What was printed, without colour and cursor escape sequences."""
        return ANSI.sub("", self.raw())

    def raw(self):
        return self.buffer.decode("utf-8", "replace")

    def mark(self):
        """Forgets what was read so far, so the next expect only sees new output (the screen keeps it)."""
        self.read_available(0.05)
        self.buffer = b""
        self.arrivals = []

    def arrival_of(self, data, timeout=10):
        """Waits for `data` (bytes, as written) to arrive; returns the time.time() it did."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            index = self.buffer.find(data)
            if index >= 0:
                end = index + len(data)
                return next(at for at, length in self.arrivals if length >= end)
            ready, _, _ = select.select([self.master], [], [], 0.005)
            if ready:
                self.read_available(0)
            elif self.exited():
                break
        raise AssertionError("did not see %r; screen so far:\n%s" % (data, self.text()))

    def exited(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def wait(self, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.read_available(0.05)
            if self.exited():
                return os.waitstatus_to_exitcode(self.status)
        raise AssertionError("process did not exit; screen:\n%s" % self.text())

    def resize(self, rows, columns):
        """Changes the window size; the kernel sends SIGWINCH to the foreground process group.
        The emulator takes the new size first, as a terminal does before the program hears of it."""
        import fcntl, struct
        self.read_available(0.01)
        if self.screen:
            self.screen.resize(columns, rows)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def echo_enabled(self):
        return bool(termios.tcgetattr(self.slave)[3] & termios.ECHO)

    def close(self):
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.master)
        os.close(self.slave)
