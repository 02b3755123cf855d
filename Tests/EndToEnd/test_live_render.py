"""Replies drawn live on a terminal, in real pseudo-terminals, checked on a small terminal
emulator (vt.py) for what a user sees: while a reply streams, after the window is resized, and
at the end. The fake server's slow-paragraph, slow-markdown and tall scenarios stream their
replies in small pieces and note when each went out."""
import json
import re
import time
import uuid

import pytest

from conftest import BIN, wait_until
from ptyrun import PtySession
from vt import text_width


@pytest.fixture
def terminal(api):
    sessions = []

    def start(*argv, columns=100, rows=30, env=None, reflow=True):
        # TERM as tmux and xterm users have it; the chat's line editor draws with it too.
        full = dict(api.vars, TERM="xterm")
        full.update(env or {})
        session = PtySession([BIN] + list(argv), full, columns=columns, rows=rows, reflow=reflow)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


def tagged(scenario):
    return "%s~%s" % (scenario, uuid.uuid4().hex[:8])


def send(s, message, timeout=30):
    """Sends one chat message and waits for the next prompt."""
    s.expect(r"you ›")
    s.mark()
    s.line(message)
    s.expect(r"you ›", timeout=timeout)
    s.read_available(0.1)


def no_repeats(lines, pattern):
    """The lines matching `pattern`, checked to appear once each."""
    found = [line for line in lines if re.search(pattern, line)]
    assert len(found) == len(set(found)), [line for line in found if found.count(line) > 1]
    return found


@pytest.mark.parametrize("mode", ["chat", "bubbles", "ask"])
def test_a_slow_paragraph_shows_its_first_words_while_the_rest_is_still_arriving(terminal, api, mode):
    model = tagged("slow-paragraph")
    if mode == "ask":
        s = terminal("ask", "--no-save", "--model", model, "hello", columns=60)
    else:
        s = terminal("chat", "--no-save", "--model", model, *(["--bubbles"] if mode == "bubbles" else []), columns=60)
        s.expect(r"you ›")
        s.line("hello")
    shown = s.arrival_of(b"Streaming")
    # The fake notes a piece just after sending it; and the words must show while the paragraph
    # is still arriving: before the fake sent its last piece, not after the whole of it.
    def whole_paragraph_sent():
        pieces = [piece for piece in api.server.sent() if piece["model"] == model]
        return pieces if "".join(piece["text"] for piece in pieces).endswith("ends here.\n") else None

    pieces = wait_until(whole_paragraph_sent, "the fake to send the whole paragraph")
    assert pieces[0]["text"].startswith("Streaming"), pieces[0]
    assert shown < pieces[-1]["time"], (shown - pieces[0]["time"], pieces[-1]["time"] - pieces[0]["time"])
    if mode == "ask":
        assert s.wait(timeout=30) == 0
    else:
        s.expect(r"finally ends here", timeout=30)
        s.expect(r"you ›")
        s.read_available(0.1)
    sent = [piece for piece in api.server.sent() if piece["model"] == model]
    # The paragraph took seconds to arrive; its words showed long before its end.
    assert sent[-1]["time"] - shown > 1, (sent[-1]["time"] - shown)
    # The spinner stopped at the first text and never came back while the text arrived.
    assert b"waiting for Gemini" not in s.buffer[s.buffer.find(b"Streaming"):]
    # In the end the paragraph is there once, wrapped to the width, none of it cut or repeated.
    lines = s.screen.all_lines()
    assert all(text_width(line) <= 60 for line in lines if "Streaming" in line or "ends here" in line)
    words = " ".join(re.sub(r"[│╭╮╰╯─🤖]", " ", line) for line in lines).split()
    start = words.index("Streaming")
    assert words[start:start + 3] == ["Streaming", "replies", "should"] and words.count("Streaming") == 1
    assert words.count("finally") == 1 and "ends" in words[words.index("finally"):]


def test_bubbles_follow_the_window_from_100_to_60_to_40_columns(terminal):
    s = terminal("chat", "--no-save", "--bubbles", "--model", "slow-markdown", columns=100, rows=50)
    s.expect(r"you ›")
    s.read_available(0.1)
    for columns in (100, 60, 40):
        if columns != 100:
            s.resize(50, columns)
            time.sleep(0.3)
            s.read_available(0.1)
        before = s.screen.overflows
        send(s, "show me at %d" % columns)
        # Drawn at this width: not one character went past the right edge.
        assert s.screen.overflows == before, "\n".join(s.screen.window())
        bottom = [line for line in s.screen.all_lines() if line.startswith("   ╰")][-1]
        assert text_width(bottom) <= columns and text_width(bottom) > columns * 0.6, bottom
    # Narrowed again while a reply streams: the rest of the bubble is drawn at the new width.
    s.resize(50, 60)
    time.sleep(0.3)
    s.expect(r"you ›")
    s.mark()
    s.line("and while it streams")
    # Resized the moment it arrives (expect waits for a pause in the output, which may come
    # only at the reply's end).
    s.arrival_of(b"nested point")
    s.resize(50, 40)
    s.expect(r"you ›", timeout=30)
    s.read_available(0.2)
    lines = s.screen.all_lines()
    end = max(index for index, line in enumerate(lines) if line.startswith("   ╰"))
    for line in lines[end - 4:end + 1]:
        assert text_width(line) <= 40, line
    assert lines[end - 1].startswith("   │ for more.") and lines[end - 1].endswith("│")


def test_code_indentation_survives_in_bubbles_and_history_show(terminal, api):
    api.init()
    s = terminal("chat", "--bubbles", "--model", "slow-markdown", columns=80)
    send(s, "some code please")
    s.line("/exit")
    assert s.wait() == 0
    code = ['│ │ def greet(name):', '│ │     if name:', '│ │         for letter in name:', '│ │             print("  " + letter)',
            '│ │     return f"hello {name}"']
    in_chat = [line.strip() for line in s.screen.all_lines()]
    for line in code:
        assert any(shown.startswith(line) for shown in in_chat), (line, in_chat)
    # Nested lists keep their nesting, and the table its columns.
    assert any(shown.startswith("│    ◦ nested point one") for shown in in_chat)
    [saved] = json.loads(api.run("history", "list", "--json").out)["conversations"]
    # A window tall enough for the whole conversation: it is printed, not paged.
    shown = terminal("history", "show", saved["id"][:8], "--passphrase-file", api.passfile, columns=70, rows=80)
    assert shown.wait() == 0
    in_history = [line.strip() for line in shown.screen.all_lines()]
    for line in code:
        assert any(row.startswith(line) for row in in_history), (line, in_history)
    table = [row for row in in_history if "你好世界" in row or "│ ab " in row or "名字" in row]
    assert len(table) == 3 and len({text_width(row.split("│")[1]) for row in table}) == 1, table
    assert all(text_width(line) <= 70 for line in shown.screen.all_lines())


def test_a_replys_line_breaks_and_the_users_own_lines_survive(terminal):
    s = terminal("chat", "--no-save", "--model", "slow-markdown", columns=60)
    send(s, "a poem")
    lines = s.screen.all_lines()
    poem = ["Roses are red,", "violets are blue,", "this poem keeps", "its line breaks too."]
    start = lines.index(poem[0])
    assert lines[start:start + 4] == poem
    # A URL is never cut: it is printed whole, and the terminal wraps it.
    url = "https://example.com/a/rather/long/path/that/must/never/be/cut/in/the/middle/of/a/word"
    joined = "".join(line for line in lines if line.startswith("https://") or "cut" in line or line.startswith("t/in"))
    assert url in joined
    # Paragraphs are word-wrapped, never cut inside a word.
    first = [line for line in lines if line.startswith("gemini › ")][0]
    assert first == "gemini › Here is a function, a list, a table and a poem."
    # The user's own multi-line block keeps its lines and indentation in a bubble.
    b = terminal("chat", "--no-save", "--bubbles", "--model", "echo", columns=80)
    b.expect(r"you ›")
    b.mark()
    for line in ['"""', "first line", "    indented second", "third", '"""']:
        b.line(line)
    b.expect(r"last=first line", timeout=20)
    b.expect(r"you ›")
    b.read_available(0.1)
    bubble = [line.strip() for line in b.screen.all_lines() if line.rstrip().endswith("│") and not line.startswith("   │")]
    assert ["│ first line          │", "│     indented second │", "│ third               │"] == bubble[-3:], bubble


@pytest.mark.parametrize("bubbles", [False, True])
def test_nothing_printed_is_repeated_when_a_reply_is_taller_than_the_window(terminal, bubbles):
    s = terminal("chat", "--no-save", "--model", "tall", *(["--bubbles"] if bubbles else []), columns=50, rows=16)
    send(s, "a tall one")
    lines = s.screen.all_lines()
    numbered = no_repeats(lines, r"Line \d\d of")
    assert [int(re.search(r"Line (\d\d)", line).group(1)) for line in numbered] == list(range(1, 41))
    words = [word for line in lines for word in re.findall(r"word\d{3}", line)]
    assert words == ["word%03d" % number for number in range(300)], words[:5]
    # Resized narrower while it streams: still nothing repeated and nothing lost. The fake
    # pauses after Line 20 and the resize waits for the screen to settle: a frame in flight
    # when a window changes size is drawn at the old width by any terminal, which no program
    # can tell apart afterwards.
    s.mark()
    s.line("again")
    s.expect(r"Line 20 of a reply taller than the(?:\s|│)*window\.")
    s.read_available(0.3)
    s.resize(16, 40)
    s.expect(r"you ›", timeout=30)
    s.read_available(0.2)
    lines = s.screen.all_lines()
    second = lines[max(index for index, line in enumerate(lines) if "Line 01 of" in line):]
    numbered = no_repeats(second, r"Line \d\d of")
    assert len(numbered) == 40
    words = [word for line in second for word in re.findall(r"word\d{3}", line)]
    assert words == ["word%03d" % number for number in range(300)], [w for w in words if words.count(w) > 1][:5]


def test_a_replys_escape_sequences_are_shown_not_run_in_bubbles(terminal):
    s = terminal("chat", "--no-save", "--bubbles", "--model", "escape", columns=80)
    send(s, "hi")
    raw = s.buffer
    assert b"\x1b]52" not in raw and b"\x1b]0;" not in raw and b"\x1b[31m" not in raw and b"\xc2\x9b" not in raw
    # Only the renderer's own sequences: colours, cursor up and right, erase below, autowrap, synchronized output.
    own = re.compile(rb"\x1b\[(?:[0-9;]*m|\d+A|\d+C|J|\?7[hl]|\?2026[hl]|\?2004[hl]|K|2K)")
    reply = raw[raw.find(b"\xf0\x9f\xa4\x96"):raw.rfind(b"you \xe2\x80\xba")]
    assert own.sub(b"", reply).count(b"\x1b") == 0, reply
    assert any("^[]52;c;" in line for line in s.screen.all_lines())


def test_a_dumb_terminal_and_raw_get_the_text_as_it_arrives(terminal, api):
    for extra, env in (([], {"TERM": "dumb"}), (["--raw"], {})):
        model = tagged("slow-paragraph")
        s = terminal("ask", "--no-save", "--model", model, *extra, "hello", env=env)
        shown = s.arrival_of(b"Streaming")
        assert s.wait(timeout=30) == 0
        sent = [piece for piece in api.server.sent() if piece["model"] == model]
        assert sent[-1]["time"] - shown > 1, (sent[-1]["time"] - shown)
        # No cursor moves, no redraw, no markdown: the text exactly as it came.
        assert not re.search(rb"\x1b\[(\d*A|\d*C|J|\?7l|\?2026h)", s.buffer), s.buffer[:300]
        assert b"**bold words**" in s.buffer


FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"
PERSIAN = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
HINDI = "\u0915\u094d\u200d\u0937"


def joiners_intact(text):
    # The one stray joiner (between ASCII letters) is shown; no other ever is.
    return FAMILY in text and PERSIAN in text and HINDI in text and 0 < text.count("\\u{200") == text.count("x\\u{200d}y")


@pytest.mark.parametrize("argv", [["ask"], ["ask", "--raw"], ["chat"], ["chat", "--raw"]])
def test_joiners_split_between_stream_pieces_stay_joiners_through_a_pipe(api, argv):
    # Each code point comes in its own event: a joiner is always at a piece's edge.
    args = argv + ["--no-save", "--model", "joiners"] + (["hi"] if argv[0] == "ask" else [])
    result = api.run(*args, input=None if argv[0] == "ask" else "hi\n", passphrase=False)
    assert result.code == 0, result
    assert joiners_intact(result.out), repr(result.out)
    assert "Second line ends." in result.out and "^M" not in result.out


@pytest.mark.parametrize("argv", [["ask"], ["ask", "--raw"], ["chat"], ["chat", "--raw"], ["chat", "--bubbles"]])
def test_joiners_split_between_stream_pieces_stay_joiners_on_a_terminal(terminal, argv):
    if argv[0] == "ask":
        s = terminal(*argv, "--no-save", "--model", "joiners", "hi")
        assert s.wait(timeout=30) == 0
    else:
        s = terminal(*argv, "--no-save", "--model", "joiners")
        send(s, "hi")
    # Not once, not even in a redraw while the reply streamed, was a joiner shown as an escape.
    text = s.buffer.decode("utf-8", "replace")
    assert joiners_intact(text), repr(text)
    assert "Second line ends." in text and "^M" not in text
