"""What a newcomer sees of the chat in a real terminal (issue 25): keys typed while a reply
streams, resizes at the prompt, tables that must fit the window, attachments and bubbles. Each
is checked on the vt.py emulator, at the sizes people use (100, 60 and 40 columns)."""
import os
import re
import signal
import time

import pytest

from conftest import BIN
from ptyrun import PtySession
from vt import text_width


@pytest.fixture
def terminal(api):
    sessions = []

    def start(*argv, columns=100, rows=30, env=None):
        full = dict(api.vars, TERM="xterm")
        full.update(env or {})
        program = list(argv) if argv[0].startswith("/") else [BIN] + list(argv)
        session = PtySession(program, full, columns=columns, rows=rows)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


def send(s, message, timeout=30):
    """Sends one chat message and waits for the next prompt."""
    s.expect(r"you ›")
    s.mark()
    s.line(message)
    s.expect(r"you ›", timeout=timeout)
    s.read_available(0.1)


@pytest.mark.parametrize("bubbles", [False, True])
def test_keys_typed_while_a_reply_streams_stay_out_of_it_and_are_sent_visibly(terminal, api, bubbles):
    s = terminal("chat", "--no-save", "--model", "steady", *(["--bubbles"] if bubbles else []), columns=60)
    s.expect(r"you ›")
    s.mark()
    s.line("count slowly")
    s.expect(r"step 2 ")
    # While the reply streams the terminal does not echo: what is typed cannot land in it.
    assert not s.echo_enabled()
    s.send("/model echo\r")
    s.send("typed ahead\r")
    s.send("and half")
    s.expect(r"last=typed ahead", timeout=30)
    # A line typed without its Enter waits at the next prompt, to be finished or changed.
    s.expect(r"you › and half")
    s.read_available(0.2)
    lines = s.screen.all_lines()
    reply = [line for line in lines if "step" in line]
    assert reply and not any("typed" in line or "/model" in line for line in reply), lines
    # Every step is there once: the Enter typed during the reply did not break its redraw.
    steps = re.findall(r"step (\d+)", re.sub(r"[│ ]+", " ", " ".join(reply)))
    assert steps == [str(n) for n in range(12)], steps
    # The lines typed ahead are shown as the user's, after the reply, then run in order.
    end = max(index for index, line in enumerate(lines) if "step 11" in line)
    after = lines[end + 1:]
    shown = [index for index, line in enumerate(after) if re.search(r"(you ›|│) */model echo", line)]
    typed = [index for index, line in enumerate(after) if re.search(r"(you ›|│) *typed ahead", line)]
    assert shown and typed and shown[0] < typed[0], after
    assert any("model set to echo" in line for line in after[shown[0]:typed[0]]), after
    echo = [r for r in api.server.requests() if "/echo:" in r["path"]]
    assert len(echo) == 1
    s.mark()
    s.line(" done")
    s.expect(r"last=and half done")
    s.expect(r"you ›")
    s.line("/exit")
    assert s.wait() == 0


@pytest.mark.parametrize("way_out", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_every_way_out_of_a_streaming_reply_restores_echo(terminal, way_out):
    s = terminal("chat", "--no-save", "--model", "steady")
    s.expect(r"you ›")
    s.line("count slowly")
    s.expect(r"step 1 ")
    assert not s.echo_enabled()
    os.kill(s.pid, way_out)
    code = s.wait()
    assert code in (-way_out, 128 + way_out), code
    assert s.echo_enabled()


def test_ctrl_z_during_a_reply_gives_the_terminal_back_and_fg_silences_it_again(terminal):
    # From an interactive bash, as a person would: a program started straight in a pty is in an
    # orphaned process group, where the kernel drops Ctrl-Z.
    s = terminal("/bin/bash", "--norc", "--noprofile", "-i", env={"PS1": "SHELL> ", "HISTFILE": "/dev/null"})
    s.expect(r"SHELL> ")
    s.line("%s chat --no-save --model steady" % BIN)
    s.expect(r"you ›")
    s.line("count slowly")
    s.expect(r"step 1 ")
    s.send("\x1a")
    s.expect(r"Stopped")
    s.mark()
    s.line("echo shell-works")
    s.expect(r"shell-works\s+SHELL> ")
    s.mark()
    s.line("fg")
    s.expect(r"step \d+ ")
    # Back in the reply: echo is off again until it ends.
    assert not s.echo_enabled()
    s.expect(r"step 11", timeout=30)
    s.expect(r"you ›")
    s.line("/exit")
    s.expect(r"SHELL> ")
