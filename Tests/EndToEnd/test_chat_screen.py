"""What a newcomer sees of the chat in a real terminal (issue 25): keys typed while a reply
streams, resizes at the prompt, tables that must fit the window, attachments and bubbles. Each
is checked on the vt.py emulator, at the sizes people use (100, 60 and 40 columns)."""
import json
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

    def start(*argv, columns=100, rows=30, env=None, reflow=True):
        full = dict(api.vars, TERM="xterm")
        full.update(env or {})
        program = list(argv) if argv[0].startswith("/") else [BIN] + list(argv)
        session = PtySession(program, full, columns=columns, rows=rows, reflow=reflow)
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


def prompt_rows(lines, text):
    return [line for line in lines if text in line]


@pytest.mark.parametrize("reflow", [True, False])
def test_a_resize_at_the_prompt_redraws_the_line_once_in_place(terminal, reflow):
    # Terminals that wrap lines again to the new width (tmux, VTE, kitty…), and xterm, which cuts them.
    s = terminal("chat", "--no-save", "--model", "echo", columns=100, rows=20, reflow=reflow,
                 env={} if reflow else {"XTERM_VERSION": "XTerm(390)"})
    s.expect(r"you ›")
    s.send("hello wor")
    s.expect(r"hello wor")
    for columns in (60, 40, 100, 60):
        s.resize(20, columns)
        time.sleep(0.3)
        s.read_available(0.1)
        lines = s.screen.all_lines()
        # The line is there once, as typed, on a row of its own: nothing drawn twice.
        assert prompt_rows(lines, "hello wor") == ["you › hello wor"], (columns, lines)
    # A line longer than the window: still once, whole, after every resize.
    long = " ".join("word%02d" % number for number in range(14))
    s.send("ld " + long)
    s.expect(r"word13")
    for columns in (40, 100, 60):
        s.resize(20, columns)
        time.sleep(0.3)
        s.read_available(0.1)
        text = "".join(s.screen.all_lines())
        assert text.count("you ›") == 1 and text.count("word13") == 1, (columns, s.screen.all_lines())
    # With the cursor at the start of the line, too.
    s.send("\x01")
    for columns in (40, 60):
        s.resize(20, columns)
        time.sleep(0.3)
        s.read_available(0.1)
        text = "".join(s.screen.all_lines())
        assert text.count("you ›") == 1 and text.count("word13") == 1, (columns, s.screen.all_lines())
    s.send("\x05")
    s.mark()
    s.send("\r")
    s.expect(r"last=hello world word00")
    s.line("/exit")
    assert s.wait() == 0


WIDE_LINE = "result = compute(" + ", ".join("argument_%02d" % number for number in range(12)) + ")  # END-OF-WIDE-LINE"


@pytest.mark.parametrize("bubbles", [False, True])
def test_an_over_wide_code_line_stays_inside_its_frame_while_it_streams_and_after(terminal, bubbles):
    s = terminal("chat", "--no-save", "--model", "slow-wide-code", *(["--bubbles"] if bubbles else []), columns=100, rows=40)
    s.expect(r"you ›")
    s.read_available(0.1)
    for columns in (100, 60, 40):
        if columns != 100:
            s.resize(40, columns)
            time.sleep(0.3)
            s.read_available(0.1)
        before = s.screen.overflows
        send(s, "code at %d" % columns)
        # Not one character went past the right edge, while it streamed or when it was printed for good.
        assert s.screen.overflows == before, "\n".join(s.screen.window())
        lines = s.screen.all_lines()
        start = max(index for index, line in enumerate(lines) if "result = compute(" in line)
        rows = []
        for line in lines[start:]:
            inner = line.strip().strip("│").strip() if bubbles else line
            if "print(result)" in inner:
                break
            assert inner.startswith("│ "), lines[start:]
            rows.append(inner[2:])
        # The whole line is there, in order; the rows after the first are marked as its continuation.
        # (Spaces are left out of the comparison: the screen cannot tell a row's trailing space from padding.)
        assert len(rows) > 1 and all(row.startswith("↪ ") for row in rows[1:]), rows
        joined = rows[0] + "".join(row[2:] for row in rows[1:])
        assert joined.replace(" ", "") == WIDE_LINE.replace(" ", ""), rows
    s.line("/exit")
    assert s.wait() == 0


@pytest.mark.parametrize("bubbles", [False, True])
def test_a_wide_table_fits_a_window_of_60_columns(terminal, bubbles):
    s = terminal("chat", "--no-save", "--model", "slow-wide-table", *(["--bubbles"] if bubbles else []), columns=60, rows=40)
    s.expect(r"you ›")
    s.read_available(0.1)
    before = s.screen.overflows
    send(s, "settings")
    assert s.screen.overflows == before, "\n".join(s.screen.window())
    lines = s.screen.all_lines()
    top = max(index for index, line in enumerate(lines) if ("Option: timeout" if bubbles else "Option") in line)
    table = []
    for line in lines[top:]:
        inner = line.strip()[1:].rstrip("│").strip() if bubbles else line
        if "That is all" in inner:
            break
        if inner.strip():
            table.append(inner)
    assert not any("…" in row for row in table), table
    if bubbles:
        # A bubble leaves 47 columns: too few for the columns' longest words side by side, so
        # each row is a record of "column: value" lines, nothing hidden.
        for line in ("Option: timeout", "Default: 60", "Option: model", "Default: gemini-flash"):
            assert line in table, table
        assert "What it does: The Gemini model used when none" in table, table
        s.line("/exit")
        assert s.wait() == 0
        return
    # Every column shows, none hidden behind a "…", and the separators line up on every row.
    assert all(name in table[0] for name in ("Option", "What it does", "Default", "Where it is set")), table
    assert not any("…" in row for row in table), table
    bars = {tuple(index for index, ch in enumerate(row) if ch in "│┼") for row in table}
    assert len(bars) == 1 and len(next(iter(bars))) == 3, table
    # The long cell wraps inside its column: its words read in order down the column.
    column = " ".join(row.split("│")[1].strip() for row in table if "│" in row)
    assert "The number of seconds a request may take before gemvault gives up on it" in " ".join(column.split()), column
    s.line("/exit")
    assert s.wait() == 0


def user_turn(lines, message, bubbles):
    """The rows of the user's turn that sent `message`: the prompt line (plain) or the bubble."""
    if bubbles:
        start = max(index for index, line in enumerate(lines) if re.search(r"│ *%s" % re.escape(message), line))
        top = max(index for index in range(start + 1) if "╭" in lines[index])
        bottom = next(index for index in range(start, len(lines)) if "╰" in lines[index])
        return lines[top:bottom + 1]
    start = max(index for index, line in enumerate(lines) if line.startswith("you › " + message))
    end = next(index for index in range(start + 1, len(lines)) if "gemini ›" in lines[index])
    return lines[start:end]


@pytest.mark.parametrize("bubbles", [False, True])
def test_attached_files_show_with_the_users_message(terminal, api, tmp_path, bubbles):
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe quokka is a small marsupial.\n")
    other = tmp_path / "plan.txt"
    other.write_text("step one\nstep two\n" * 40)
    s = terminal("chat", "--no-save", "--model", "echo", "-a", str(notes), *(["--bubbles"] if bubbles else []), columns=60)
    # The file given with -a is named before the first message, as /attach names its file.
    s.expect(r"notes\.md \(42 bytes, text/plain\)")
    send(s, "summarise")
    turn = user_turn(s.screen.all_lines(), "summarise", bubbles)
    assert any("📎 notes.md (42 bytes, text/plain)" in line for line in turn), turn
    # The next message has no file: nothing is shown with it.
    send(s, "thanks")
    turn = user_turn(s.screen.all_lines(), "thanks", bubbles)
    assert not any("📎" in line for line in turn), turn
    s.mark()
    s.line("/attach " + str(other))
    s.expect(r"attached plan\.txt \(720 bytes, text/plain\)")
    before = s.screen.overflows
    send(s, "and this")
    # Nothing of the message and its file went past the window's edge.
    assert s.screen.overflows == before, "\n".join(s.screen.window())
    turn = user_turn(s.screen.all_lines(), "and this", bubbles)
    assert any("📎 plan.txt (720 bytes, text/plain)" in line for line in turn), turn
    s.line("/exit")
    assert s.wait() == 0


def file_parts(request):
    parts = json.loads(request["body"])["contents"][-1]["parts"]
    return [part["text"].split("\n")[0] for part in parts if part.get("text", "").startswith("File: ")]


def test_the_same_file_attached_twice_is_sent_once_with_a_warning(terminal, api, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("quokka facts\n")
    # Another name for the same file (a hard link): the same device and inode.
    alias = tmp_path / "alias.md"
    os.link(notes, alias)
    s = terminal("chat", "--no-save", "--model", "echo", "-a", str(notes), "-a", str(notes), "-a", str(alias))
    s.expect(r"warning: \S*notes\.md is attached already; it is sent once".replace(" ", r"\s+"))
    s.expect(r"warning: \S*alias\.md is the same file as \S*notes\.md, attached already; it is sent once".replace(" ", r"\s+"))
    s.expect(r"you ›")
    s.mark()
    s.line("/attach " + str(alias))
    s.expect(r"warning: \S*alias\.md is the same file as \S*notes\.md, attached already; it is sent once".replace(" ", r"\s+"))
    send(s, "what is in it")
    assert file_parts(api.server.requests()[-1]) == ["File: notes.md"]
    # Once sent, the same file may go with a later message again.
    s.mark()
    s.line("/attach " + str(notes))
    s.expect(r"attached notes\.md")
    send(s, "again")
    assert file_parts(api.server.requests()[-1]) == ["File: notes.md"]
    s.line("/exit")
    assert s.wait() == 0


def test_ask_sends_a_file_attached_twice_once(api, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("quokka facts\n")
    result = api.run("ask", "--model", "echo", "-a", str(notes), "-a", str(notes), "what", passphrase=False)
    assert result.code == 0, result
    assert "notes.md is attached already; it is sent once" in result.err, result
    assert file_parts(api.server.requests()[-1]) == ["File: notes.md"]


def test_bubbles_show_the_users_message_once(terminal, api):
    s = terminal("chat", "--no-save", "--model", "echo", "--bubbles", columns=60)
    long = " ".join("word%02d" % number for number in range(20))
    send(s, "hello there")
    # A line wider than the window, which took three rows as it was typed.
    send(s, long)
    # A block of several lines, each typed after its own prompt.
    s.expect(r"you ›")
    s.line('"""')
    s.line("first line")
    s.line("second line")
    s.mark()
    s.line('"""')
    s.expect(r"you ›")
    s.read_available(0.1)
    lines = s.screen.all_lines()
    # Each message is in its bubble only: the lines as typed were replaced by it.
    assert [line for line in lines if "you ›" in line or "…" in line] == ["you ›"], lines
    assert sum("│ hello there" in line for line in lines) == 1, lines
    # (The model's bubble, on the left, echoes it.)
    assert sum(line.count("word19") for line in lines if not line.startswith(("   │", "🤖"))) == 1, lines
    assert any("│ first line" in line for line in lines) and any("│ second line" in line for line in lines), lines
    s.line("/exit")
    assert s.wait() == 0


def model_bubbles(lines):
    """Each model bubble: its top row's box width, and the widths of its text rows."""
    bubbles = []
    for index, line in enumerate(lines):
        if line.startswith("🤖 ╭"):
            box = text_width(line[2:].strip())
            rows = []
            for row in lines[index + 1:]:
                if "╰" in row:
                    break
                inner = row[3:]
                assert inner.startswith("│ ") and inner.rstrip().endswith(" │"), row
                rows.append(text_width(inner.rstrip()[2:-2].rstrip()))
            bubbles.append((box, rows))
    return bubbles


@pytest.mark.parametrize("model,columns", [("ok", 100), ("code", 100), ("steady", 140)])
def test_a_model_bubble_fits_its_reply(terminal, model, columns):
    # "steady" streams one line in twelve pieces: the bubble grows with it.
    s = terminal("chat", "--no-save", "--model", model, "--bubbles", columns=columns, rows=40)
    send(s, "count slowly")
    (box, rows), = model_bubbles(s.screen.all_lines())
    # The box is as wide as its widest line needs, not the window's width.
    assert box == max(rows) + 4, (box, rows, s.screen.all_lines())
    assert box < columns - 3 - columns // 10, (box, rows)
    s.line("/exit")
    assert s.wait() == 0


def test_a_tall_model_bubble_still_takes_the_width_it_needs(terminal):
    # Taller than the window: its first lines are printed for good before its widest is known.
    s = terminal("chat", "--no-save", "--model", "tall", "--bubbles", columns=60, rows=20)
    s.expect(r"you ›")
    before = s.screen.overflows
    send(s, "hi")
    assert s.screen.overflows == before
    (box, rows), = model_bubbles(s.screen.all_lines())
    assert box <= 60 - 3 and max(rows) <= box - 4, (box, rows)
    s.line("/exit")
    assert s.wait() == 0


def bubble_of(lines, message):
    return any(re.search(r"│ %s *│" % re.escape(message), line) for line in lines)


def test_the_chat_style_setting_makes_bubbles_the_default_and_slash_bubbles_switches(terminal, api):
    s = terminal("chat", "--no-save", "--model", "echo", env={"GEMVAULT_CHAT_STYLE": "bubbles"})
    send(s, "first one")
    assert bubble_of(s.screen.all_lines(), "first one"), s.screen.all_lines()
    s.mark()
    s.line("/bubbles off")
    s.expect(r"bubbles off")
    send(s, "second one")
    lines = s.screen.all_lines()
    assert "you › second one" in lines and not bubble_of(lines, "second one"), lines
    s.mark()
    # Alone, it switches.
    s.line("/bubbles")
    s.expect(r"bubbles on")
    send(s, "third one")
    assert bubble_of(s.screen.all_lines(), "third one"), s.screen.all_lines()
    s.mark()
    s.line("/bubbles sideways")
    s.expect(r"/bubbles takes on or off")
    s.line("/exit")
    assert s.wait() == 0


def test_a_bad_chat_style_is_refused(api):
    result = api.run("chat", "--no-save", env={"GEMVAULT_CHAT_STYLE": "round"}, passphrase=False)
    assert result.code == 1 and "chat_style" in result.err and "plain, bubbles" in result.err, result


SGR_COLOUR = re.compile(rb"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("raw", [False, True])
def test_bubbles_draw_without_colour_under_no_color(terminal, raw):
    s = terminal("chat", "--no-save", "--model", "ok", "--bubbles", *(["--raw"] if raw else []), env={"NO_COLOR": "1"})
    s.expect(r"you ›")
    s.mark()
    s.line("hello")
    s.expect(r"you ›")
    s.read_available(0.1)
    lines = s.screen.all_lines()
    assert bubble_of(lines, "hello"), lines
    assert any(line.startswith("🤖 ╭") for line in lines), lines
    # Frames, not colours: no SGR sequence at all.
    assert not SGR_COLOUR.search(s.buffer), s.buffer
    s.line("/exit")
    assert s.wait() == 0


def test_bubbles_on_a_dumb_terminal_say_why_they_are_not_drawn(terminal):
    s = terminal("chat", "--no-save", "--model", "echo", "--bubbles", env={"TERM": "dumb"})
    s.expect(r"bubbles need a terminal that can move the cursor")
    send(s, "hello")
    assert "you › hello" in s.screen.all_lines()
    s.mark()
    s.line("/bubbles on")
    s.expect(r"bubbles need a terminal that can move the cursor")
    s.line("/exit")
    assert s.wait() == 0
