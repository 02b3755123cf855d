"""Runs a program in a real pseudo-terminal, the way a person at a terminal would."""
import os
import re
import select
import signal
import termios
import time

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class PtySession:
    def __init__(self, argv, env, columns=120, rows=40):
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
        """Forgets what was read so far, so the next expect only sees new output."""
        self.read_available(0.05)
        self.buffer = b""

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
        """Changes the window size; the kernel sends SIGWINCH to the foreground process group."""
        import fcntl, struct
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def echo_enabled(self):
        return bool(termios.tcgetattr(self.slave)[3] & termios.ECHO)

    def close(self):
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.master)
        os.close(self.slave)
