"""A good terminal citizen: job control, resizes, forgiving prompts, JSON that is always JSON,
and no data lost by a flag. Job control is tested from a real interactive bash in a pty,
typing `fg` as a person would: a program started straight in a pty by a test runner is in
an orphaned process group, where the kernel drops Ctrl-Z."""
import glob
import json
import os
import stat
import subprocess
import time

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE
from ptyrun import PtySession

SHELL_PROMPT = "SHELL> "


@pytest.fixture
def shell(api):
    sessions = []

    def start():
        env = dict(api.vars)
        env.update({"PS1": SHELL_PROMPT, "TERM": "xterm", "HISTFILE": "/dev/null"})
        session = PtySession(["/bin/bash", "--norc", "--noprofile", "-i"], env, columns=100)
        sessions.append(session)
        session.expect(SHELL_PROMPT)
        session.mark()
        return session

    yield start
    for session in sessions:
        session.close()


def test_a_resize_at_the_prompt_keeps_the_chat_and_the_line(shell, api):
    s = shell()
    s.line("%s chat --model echo" % BIN)
    s.expect(r"you ›")
    s.line("first")
    s.expect(r"turns=1 .*last=first")
    s.mark()
    s.send("hello wor")
    time.sleep(0.3)
    s.resize(30, 70)
    time.sleep(0.3)
    s.resize(40, 120)
    time.sleep(0.3)
    s.send("ld\r")
    s.expect(r"turns=3 .*last=hello world")
    # A resize while a reply streams is fine too.
    s.line("/model slow")
    s.mark()
    s.line("go")
    time.sleep(0.3)
    s.resize(35, 90)
    s.expect(r"you ›", timeout=15)
    s.line("/exit")
    s.expect(SHELL_PROMPT)


def test_ctrl_z_at_the_chat_prompt_then_fg_resumes_where_it_was(shell, api):
    s = shell()
    s.line("%s chat --model echo" % BIN)
    s.expect(r"you ›")
    s.line("before")
    s.expect(r"turns=1 .*last=before")
    s.mark()
    s.send("half a li")
    time.sleep(0.3)
    s.send("\x1a")
    s.expect(r"Stopped")
    s.expect(SHELL_PROMPT)
    # The shell got its terminal back in its own modes: what it echoes shows up.
    s.mark()
    s.line("echo shell-works")
    s.expect(r"shell-works\s+SHELL> ")
    s.mark()
    s.line("fg")
    s.expect(r"half a li")
    s.send("ne\r")
    s.expect(r"turns=3 .*last=half a line")
    s.line("/exit")
    s.expect(SHELL_PROMPT)


def test_ctrl_d_at_the_chat_prompt_leaves_the_shell_prompt_on_its_own_line(shell, api):
    s = shell()
    s.line("%s chat --model echo" % BIN)
    s.expect(r"you ›")
    s.send("\x04")
    s.expect(SHELL_PROMPT + "$")
    screen = s.text()
    # Between the chat's last prompt and the shell's, a line ends.
    after_prompt = screen[screen.rindex("you ›") + len("you ›"):screen.rindex(SHELL_PROMPT)]
    assert "\n" in after_prompt, repr(screen[-200:])


def test_ctrl_z_at_a_passphrase_prompt_turns_echo_off_again_after_fg(shell, api):
    api.init()
    api.run("key", "set", input=GOOD_KEY)
    s = shell()
    s.line("%s key get" % BIN)
    s.expect(r"Passphrase for .*: ")
    s.send(PASSPHRASE[:8])
    time.sleep(0.3)
    s.send("\x1a")
    s.expect(r"Stopped")
    s.expect(SHELL_PROMPT)
    s.mark()
    s.line("echo echo-is-back")
    s.expect(r"echo-is-back\s+SHELL> ")
    # The half-typed passphrase was flushed, not handed to the shell.
    assert PASSPHRASE[:8] not in s.text()
    s.mark()
    s.line("fg")
    s.expect(r"Passphrase for .*: ")
    time.sleep(0.3)
    # The prompt starts over after fg, as with ssh and sudo, and nothing typed is echoed.
    s.send(PASSPHRASE + "\r")
    s.expect(GOOD_KEY)
    assert PASSPHRASE not in s.text() and PASSPHRASE[:8] not in s.text()


def test_three_tries_at_the_passphrase_on_a_terminal(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    s = PtySession([BIN, "key", "get"], env.vars)
    try:
        for attempt in range(2):
            s.expect(r"Passphrase for")
            s.mark()
            s.line("wrong guess number %d" % attempt)
            s.expect(r"wrong passphrase, try again \(%d of 3 left\)" % (2 - attempt))
        s.expect(r"Passphrase for")
        s.line(PASSPHRASE)
        s.expect(GOOD_KEY)
        assert s.wait() == 0
    finally:
        s.close()
    s = PtySession([BIN, "key", "get"], env.vars)
    try:
        for attempt in range(3):
            s.expect(r"Passphrase for")
            s.mark()
            s.line("still wrong %d" % attempt)
        assert s.wait(timeout=30) == 3
        assert "wrong passphrase" in s.text()
    finally:
        s.close()
    # A file gets one try.
    env.write_private(env.passfile + "2", "not it at all\n")
    assert env.run("key", "get", "--passphrase-file", env.passfile + "2", passphrase=False).code == 3


def test_key_set_keeps_the_pasted_key_when_the_passphrase_is_mistyped(env):
    env.init()
    s = PtySession([BIN, "key", "set", "pasted"], env.vars)
    try:
        s.expect(r"API key for 'pasted': ")
        s.line(GOOD_KEY)
        s.expect(r"Passphrase for")
        s.mark()
        s.line("mistyped")
        s.expect(r"try again")
        s.expect(r"Passphrase for")
        s.line(PASSPHRASE)
        # The vault's first key, not called 'default': offered as the default, no passphrase again.
        s.expect(r"Make 'pasted' the key commands use by default\? \[Y/n\]")
        s.line("n")
        assert s.wait(timeout=30) == 0, s.text()
        assert "API key for" not in s.text() and s.text().count("Passphrase for") == 1
    finally:
        s.close()
    assert env.run("key", "get", "pasted").out == GOOD_KEY + "\n"


def test_the_short_passphrase_warning_comes_before_the_confirmation(env):
    s = PtySession([BIN, "init", "--kdf", "interactive"], env.vars)
    try:
        s.expect(r"New passphrase")
        s.line("short")
        s.expect(r"shorter than 12 characters")
        s.expect(r"press Enter to choose another")
        s.mark()
        s.line("")
        s.expect(r"New passphrase")
        s.line("a much longer passphrase")
        s.expect(r"Repeat the passphrase")
        s.line("a much longer passphrase")
        assert s.wait(timeout=30) == 0, s.text()
        assert "shorter than 12" not in s.text()
    finally:
        s.close()
    env.write_private(env.passfile, "a much longer passphrase\n")
    assert env.run("key", "list").code == 0


def test_a_secret_shaped_prompt_is_asked_about_on_a_terminal(env, api):
    token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
    s = PtySession([BIN, "ask", "--model", "echo", "deploy with %s" % token], api.vars)
    try:
        s.expect(r"a GitHub token \(ghp_…2345\)")
        s.expect(r"Send it to Gemini anyway\? \[y/N\] ")
        s.line("n")
        assert s.wait() == 1
    finally:
        s.close()
    assert api.server.requests() == []
    s = PtySession([BIN, "ask", "--model", "echo", "deploy with %s" % token], api.vars)
    try:
        s.expect(r"Send it to Gemini anyway\? \[y/N\] ")
        s.line("y")
        s.expect(r"last=deploy with")
        assert s.wait() == 0
    finally:
        s.close()
    assert len(api.server.requests()) == 1


def test_init_force_keeps_the_old_vault_under_a_dated_name(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    old = env.vault_bytes()
    result = env.run("init", "--force", "--kdf", "interactive")
    assert result.code == 0, result
    [kept] = glob.glob(env.vault + ".replaced-*")
    assert "kept as %s" % kept in result.err
    assert open(kept, "rb").read() == old and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert env.run("--vault", kept, "key", "get").out == GOOD_KEY + "\n"
    # Writes to the new vault never touch it.
    env.run("key", "set", "fresh", input=GOOD_KEY)
    env.run("key", "set", "fresher", input=GOOD_KEY)
    assert open(kept, "rb").read() == old


def test_init_force_on_a_terminal_asks_and_counts_the_keys(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    env.run("key", "set", "work", input=GOOD_KEY)
    old = env.vault_bytes()
    s = PtySession([BIN, "init", "--force", "--kdf", "interactive", "--passphrase-file", env.passfile], env.vars)
    try:
        s.expect(r"a vault already exists at .*generation \d+")
        s.expect(r"Its passphrase, to count the keys")
        s.line(PASSPHRASE)
        s.expect(r"it holds 2 keys: default, work")
        s.expect(r"Replace it\? .*\[y/N\] ")
        s.line("")
        assert s.wait(timeout=30) == 1
        assert "nothing was changed" in s.text()
    finally:
        s.close()
    assert env.vault_bytes() == old and not glob.glob(env.vault + ".replaced-*")
    s = PtySession([BIN, "init", "--force", "--kdf", "interactive", "--passphrase-file", env.passfile], env.vars)
    try:
        s.expect(r"Its passphrase, to count the keys")
        s.line("")
        s.expect(r"Replace it\? .*\[y/N\] ")
        s.line("y")
        assert s.wait(timeout=30) == 0, s.text()
    finally:
        s.close()
    assert len(glob.glob(env.vault + ".replaced-*")) == 1


SCENARIOS = ["ok", "lf", "split", "slow", "garbage", "empty", "not-json", "thinking", "echo", "escape", "error-mid",
             "error-mid-data", "retry-429", "retry-503", "always-503", "quota-day", "disabled", "blocked", "max-tokens",
             "safety", "recitation", "drop", "hang", "hang-first", "steady", "slow-long", "echo-key", "gemini-3.6-flash",
             "no-such-model"]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("mode", ["stream", "unary"])
def test_ask_json_is_json_in_every_outcome(api, scenario, mode):
    args = ["ask", "--json", "--timeout", "2", "--model", scenario + "~" + mode + os.urandom(3).hex(), "hello"]
    if mode == "unary":
        args.insert(1, "--no-stream")
    result = api.run(*args, passphrase=False, env={"GEMVAULT_RETRIES": "1"}, timeout=60)
    data = json.loads(result.out)
    assert set(data) >= {"text", "model", "finishReason", "blockReason", "usage", "interrupted", "error"}, data
    if result.code == 0:
        assert data["error"] is None
    else:
        error = data["error"]
        assert error["exitCode"] == result.code and error["message"] and "reason" in error and "status" in error, data
    if scenario == "no-such-model":
        assert data["error"]["status"] == 404 and data["error"]["reason"] == "NOT_FOUND"
    if scenario == "blocked":
        assert data["blockReason"] == "SAFETY" and data["text"] == "" and data["error"]["exitCode"] == 6


def test_json_for_token_counts_and_for_failures_before_any_request(api):
    counted = api.run("ask", "--json", "--count-tokens", "--model", "ok", "one two three", passphrase=False)
    assert counted.code == 0 and json.loads(counted.out)["totalTokens"] == 3
    no_key = api.run("ask", "--json", "hello", passphrase=False, env={"GEMINI_API_KEY": ""})
    assert no_key.code == 5 and json.loads(no_key.out)["error"]["exitCode"] == 5


def test_mistyped_commands_get_a_suggestion(env):
    for typed, meant in ((["chta"], "chat"), (["key", "show"], "key get"), (["key", "lsit"], "key list"), (["inspcet"], "inspect")):
        result = env.run(*typed, passphrase=False)
        assert result.code == 64 and "did you mean '%s'?" % meant in result.err, result
    option = env.run("key", "list", "--jsno", passphrase=False)
    assert option.code == 64 and "did you mean '--json'?" in option.err


def test_global_options_work_before_the_command(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    other = os.path.join(env.root, "elsewhere", "vault")
    os.makedirs(os.path.dirname(other), mode=0o700)
    os.rename(env.vault, other)
    result = subprocess.run([BIN, "--vault", other, "--passphrase-file", env.passfile, "key", "list"], env=env.vars,
                            capture_output=True, text=True)
    assert result.returncode == 0 and "default" in result.stdout, result


def test_a_passphrase_from_process_substitution_is_accepted(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    script = '"$0" key get --passphrase-file <(cat "$1")'
    result = subprocess.run(["bash", "-c", script, BIN, env.passfile], env=env.vars, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == GOOD_KEY + "\n", result


def test_save_expands_the_home_folder_and_asks_before_overwriting(api):
    result = api.run("chat", "--model", "echo", input="hi\n/save ~/notes.md\n", passphrase=False)
    saved = os.path.join(api.home, "notes.md")
    assert result.code == 0 and os.path.exists(saved), result
    with open(saved, "w") as handle:
        handle.write("keep me")
    s = PtySession([BIN, "chat", "--model", "echo"], api.vars)
    try:
        s.expect(r"you ›")
        s.line("something to save")
        s.expect(r"last=something to save")
        s.line("/save ~/notes.md")
        s.expect(r"notes.md exists. Replace it\? \[y/N\] ")
        s.line("n")
        s.expect(r"not saved")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()
    assert open(saved).read() == "keep me"


@pytest.mark.parametrize("scenario", ["safety", "blocked", "recitation"])
def test_a_blocked_or_filtered_turn_leaves_the_conversation_as_it_was(api, scenario):
    script = "first\n/model %s\nthis one fails\n/model echo\nnext\n" % scenario
    result = api.run("chat", "--model", "echo", input=script, passphrase=False)
    assert "turns=1 roles=user system=- temperature=- last=first" in result.out, result
    assert "turns=3 roles=user,model,user system=- temperature=- last=next" in result.out, result
