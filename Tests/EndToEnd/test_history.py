"""Conversations saved encrypted, read back with the vault, resumed, exported and deleted."""
import glob
import json
import os
import signal
import stat
import subprocess
import time

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE
from ptyrun import PtySession


@pytest.fixture
def history(api):
    api.init()
    return api


def conversations(env):
    result = env.run("history", "list", "--json")
    assert result.code == 0, result
    return json.loads(result.out)["conversations"]


def test_nothing_of_a_conversation_is_left_in_plain_text(history, tmp_path):
    env = history
    secret_prompt = "the launch code is quokka-zebra-%d" % os.getpid()
    result = env.run("chat", "--model", "echo", input="%s\nand a second line\n" % secret_prompt, passphrase=False)
    assert result.code == 0, result
    assert env.run("ask", "--model", "echo", "ask also says " + secret_prompt, passphrase=False).code == 0
    assert [c["turns"] for c in conversations(env)] == [2, 1] or sorted(c["turns"] for c in conversations(env)) == [1, 2]
    found = env.run("history", "search", "QUOKKA-zebra")
    assert found.code == 0 and found.out.count(secret_prompt) >= 2, found
    needle = secret_prompt.encode()
    started = time.time() - 600
    for root in (env.home, env.vars["XDG_STATE_HOME"], "/tmp"):
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                    # Regular files written during this test run; never a FIFO or device.
                    if not stat.S_ISREG(info.st_mode) or info.st_mtime < started or info.st_size > 64 << 20:
                        continue
                    with open(path, "rb") as handle:
                        assert needle not in handle.read(), path
                except OSError:
                    continue
    folder = glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*"))[0]
    assert os.stat(folder).st_mode & 0o777 == 0o700
    for name in os.listdir(folder):
        assert os.stat(os.path.join(folder, name)).st_mode & 0o777 == 0o600


def test_a_resumed_conversation_sends_its_earlier_turns(history):
    env = history
    env.run("chat", "--model", "echo", input="first\nsecond\n", passphrase=False)
    env.server.clear()
    result = env.run("chat", "--model", "echo", "--continue", input="third\n")
    assert result.code == 0 and "turns=5 roles=user,model,user,model,user" in result.out, result
    sent = json.loads(env.server.requests()[-1]["body"])
    assert [c["parts"][0]["text"] for c in sent["contents"] if c["role"] == "user"] == ["first", "second", "third"]
    [saved] = conversations(env)
    assert saved["turns"] == 3
    # --resume with a prefix of the id, as with git.
    again = env.run("chat", "--model", "echo", "--resume", saved["id"][:4], input="fourth\n")
    assert again.code == 0 and "turns=7" in again.out, again
    missing = env.run("chat", "--resume", "zzzz")
    assert missing.code == 1 and "no conversation 'zzzz'" in missing.err


def test_a_killed_chat_keeps_every_completed_turn(history):
    env = history
    s = PtySession([BIN, "chat", "--model", "echo"], env.vars)
    try:
        s.expect(r"you ›")
        for word in ("alpha", "beta", "gamma"):
            s.mark()
            s.line(word)
            s.expect(r"last=%s" % word)
            s.expect(r"you ›")
        os.kill(s.pid, signal.SIGKILL)
        s.wait()
    finally:
        s.close()
    [saved] = conversations(env)
    assert saved["turns"] == 3 and saved["title"] == "alpha"
    shown = env.run("history", "show", saved["id"][:6])
    assert shown.code == 0 and "alpha" in shown.out and "last=gamma" in shown.out, shown


def test_undo_is_saved_too(history):
    env = history
    env.run("chat", "--model", "echo", input="keep\ndrop\n/undo\n", passphrase=False)
    [saved] = conversations(env)
    exported = json.loads(env.run("history", "export", saved["id"], "--format", "json").out)
    assert [t["user"] for t in exported["turns"]] == ["keep"] and exported["version"] == 1
    markdown = env.run("history", "export", saved["id"], "--format", "md").out
    assert "## You\n\nkeep" in markdown and "drop" not in markdown


def test_no_save_history_off_and_no_vault_save_nothing(api):
    env = api
    plain = env.run("chat", "--model", "echo", input="hello\n", passphrase=False)
    assert plain.code == 0 and "there is no vault, so this conversation is not saved" in plain.err, plain
    env.init()
    env.run("chat", "--model", "echo", "--no-save", input="hello\n", passphrase=False)
    env.run("ask", "--model", "echo", "--no-save", "hello", passphrase=False)
    env.run("config", "set", "history", "off")
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    env.run("unlock")
    env.run("chat", "--model", "echo", input="hello\n", passphrase=False)
    env.run("lock", passphrase=False)
    assert conversations(env) == []


def test_history_stays_readable_after_passwd_and_rekey(history):
    env = history
    env.run("ask", "--model", "echo", "remember me", passphrase=False)
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "a passphrase after passwd\n")
    assert env.run("passwd", "--new-passphrase-file", new_pass).code == 0
    assert env.run("rekey", "--passphrase-file", new_pass, passphrase=False).code == 0
    listed = env.run("history", "list", "--json", "--passphrase-file", new_pass, passphrase=False)
    assert json.loads(listed.out)["conversations"][0]["title"] == "remember me"


def test_history_stays_readable_after_recover(api):
    env = api
    recovery = env.init()
    env.run("ask", "--model", "echo", "before recovery", passphrase=False)
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "a passphrase after recovery\n")
    result = env.run("recover", "--new-passphrase-file", new_pass, input=recovery + "\n", passphrase=False)
    assert result.code == 0, result
    listed = env.run("history", "list", "--json", "--passphrase-file", new_pass, passphrase=False)
    assert [c["title"] for c in json.loads(listed.out)["conversations"]] == ["before recovery"], listed


def test_ask_says_when_a_vault_exists_but_its_history_cannot_be_written(history):
    env = history
    env.run("ask", "--model", "echo", "first", passphrase=False)
    [folder] = {os.path.dirname(p) for p in glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "**", "*.chat"), recursive=True)}
    os.chmod(folder, 0o777)
    result = env.run("ask", "--model", "echo", "second", passphrase=False)
    assert result.code == 0 and "this conversation is not saved" in result.err, result
    os.chmod(folder, 0o700)
    assert [c["title"] for c in conversations(env)] == ["first"]


def test_rm_and_older_than_really_delete(history):
    env = history
    for word in ("one", "two", "three"):
        env.run("ask", "--model", "echo", word, passphrase=False)
    folder = glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*"))[0]
    files = sorted(glob.glob(os.path.join(folder, "*.chat")))
    assert len(files) == 3
    old = files[0]
    os.utime(old, (time.time() - 40 * 86400, time.time() - 40 * 86400))
    removed = env.run("history", "rm", "--older-than", "30d", "--yes", passphrase=False)
    assert removed.code == 0 and "deleted 1 conversation" in removed.err
    assert not os.path.exists(old)
    victim = conversations(env)[0]["id"]
    assert env.run("history", "rm", victim[:6], passphrase=False).code == 0
    assert not os.path.exists(os.path.join(folder, victim + ".chat"))
    assert env.run("history", "rm", "--all", "--yes", passphrase=False).code == 0
    assert glob.glob(os.path.join(folder, "*.chat")) == []


def test_history_show_draws_bubbles_on_a_terminal_and_plain_text_elsewhere(history):
    env = history
    env.run("chat", "--model", "echo", input="你好，世界 🚀\n", passphrase=False)
    [saved] = conversations(env)
    s = PtySession([BIN, "history", "show", saved["id"][:6], "--passphrase-file", env.passfile], env.vars, columns=80)
    try:
        s.expect(r"🤖 ╭")
        assert s.wait() == 0
        screen = s.text()
        assert "🧑" in screen and "╰" in screen and "\x1b[34m" in s.raw() and "\x1b[90m" in s.raw()
        user_top = [line for line in screen.splitlines() if line.rstrip().endswith("🧑")][0]
        assert user_top.startswith(" ")  # right-aligned
    finally:
        s.close()
    piped = env.run("history", "show", saved["id"][:6])
    assert "you › 你好，世界 🚀" in piped.out and "╭" not in piped.out and "\x1b" not in piped.out
    no_color = PtySession([BIN, "history", "show", saved["id"][:6], "--passphrase-file", env.passfile], dict(env.vars, NO_COLOR="1"))
    try:
        assert no_color.wait() == 0
        assert "╭" not in no_color.text() and "you ›" in no_color.text()
    finally:
        no_color.close()


def test_history_show_raw_never_writes_a_saved_replys_escape_sequences(history):
    env = history
    # The escape scenario's reply holds a colour, an OSC 52 clipboard write, an OSC 0 title, BEL and a C1 CSI.
    assert env.run("ask", "--model", "escape", "first\tline\nsecond line", passphrase=False).code == 0
    [saved] = conversations(env)
    exported = json.loads(env.run("history", "export", saved["id"], "--format", "json").out)
    assert "\x1b]52;c;ZXZpbA==\x07" in exported["turns"][0]["model"], "saved as it came"
    raw = env.run("history", "show", saved["id"][:6], "--raw")
    assert raw.code == 0, raw
    for sequence in ("\x1b]52", "\x1b]0", "\x1b[31m", "\x07", "\x9b2J", "\x1b"):
        assert sequence not in raw.out, sequence
    assert "clip ^[]52;c;ZXZpbA==^G title ^[]0;pwned^G bell^G c1 \\u{9b}2J end" in raw.out, raw.out
    # Otherwise the text as saved, unstyled: tabs and newlines stay.
    assert raw.out.startswith("you › first\tline\nsecond line\ngemini › red ^[[31mALERT^[[0m"), raw.out


def test_chat_bubbles_live(history):
    env = history
    s = PtySession([BIN, "chat", "--model", "echo", "--bubbles"], env.vars, columns=60)
    try:
        s.expect(r"you ›")
        s.mark()
        s.line("hello bubbles")
        s.expect(r"🤖 ╭")
        s.expect(r"last=hello")
        s.expect(r"you ›")
        assert "🧑" in s.text()
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_replies_are_rendered_from_markdown_on_a_terminal_only(api):
    prompt = "**bold** and `code` and [a link](https://example.com/x)"
    s = PtySession([BIN, "ask", "--model", "echo", prompt], api.vars)
    try:
        assert s.wait() == 0
        raw = s.raw()
        assert "\x1b[1mbold" in raw and "\x1b[36mcode" in raw and "a link" in raw and "(https://example.com/x)" in raw
        assert "**bold**" not in raw
    finally:
        s.close()
    s = PtySession([BIN, "ask", "--model", "echo", "--raw", prompt], api.vars)
    try:
        assert s.wait() == 0
        assert "**bold**" in s.raw() and "\x1b[1mbold" not in s.raw()
    finally:
        s.close()
    piped = api.run("ask", "--model", "echo", prompt, passphrase=False)
    assert "**bold**" in piped.out and "\x1b" not in piped.out
    as_json = json.loads(api.run("ask", "--model", "echo", "--json", prompt, passphrase=False).out)
    assert "**bold**" in as_json["text"]


def test_a_torn_record_is_cut_off_before_resuming_and_a_bad_file_hides_no_other(history):
    env = history
    env.run("chat", "--model", "echo", input="first\nsecond\n", passphrase=False)
    env.run("ask", "--model", "echo", "another one", passphrase=False)
    folder = glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*"))[0]
    chat_id = [c["id"] for c in conversations(env) if c["title"] == "first"][0]
    path = os.path.join(folder, chat_id + ".chat")
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) - 10)  # a crash in the middle of the last turn
    resumed = env.run("chat", "--model", "echo", "--resume", chat_id[:6], input="third\n")
    assert resumed.code == 0, resumed
    shown = env.run("history", "show", chat_id[:6])
    assert shown.code == 0 and "first" in shown.out and "third" in shown.out, shown
    # A file of garbage is reported and skipped; the others are still listed.
    with open(os.path.join(folder, "ffffffffffffffff.chat"), "wb") as handle:
        handle.write(b"not a conversation at all")
    os.chmod(os.path.join(folder, "ffffffffffffffff.chat"), 0o600)
    listed = env.run("history", "list", "--json")
    assert listed.code == 0 and "ffffffffffffffff cannot be read" in listed.err, listed
    assert sorted(c["title"] for c in json.loads(listed.out)["conversations"]) == ["another one", "first"]


def test_init_force_hands_the_conversations_to_the_vault_it_keeps_aside(history):
    env = history
    env.run("ask", "--model", "echo", "from the old vault", passphrase=False)
    result = env.run("init", "--force", "--kdf", "interactive")
    assert result.code == 0, result
    [kept] = glob.glob(env.vault + ".replaced-*")
    fresh = env.run("history", "list", "--json")
    assert fresh.code == 0 and json.loads(fresh.out)["conversations"] == [] and "cannot be read" not in fresh.err, fresh
    old = env.run("--vault", kept, "history", "list", "--json")
    assert [c["title"] for c in json.loads(old.out)["conversations"]] == ["from the old vault"], old
    # The new vault saves its own conversations beside them.
    env.run("ask", "--model", "echo", "into the new vault", passphrase=False)
    assert [c["title"] for c in conversations(env)] == ["into the new vault"]


def history_chats(env):
    return sorted(glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*", "*.chat")))


def test_rm_all_and_older_than_ask_on_a_terminal_and_need_yes_without_one(history):
    env = history
    for word in ("one", "two"):
        env.run("ask", "--model", "echo", word, passphrase=False)
    for args in (["--all"], ["--older-than", "1s"]):
        refused = env.run("history", "rm", *args, passphrase=False)
        assert refused.code == 64 and "needs --yes" in refused.err and "usage: gemvault history rm" in refused.err, refused
    assert len(history_chats(env)) == 2

    def rm_all_on_a_terminal(answer):
        s = PtySession([BIN, "history", "rm", "--all"], env.vars)
        try:
            s.expect(r"Delete all 2 saved conversations\? This cannot be undone\. \[y/N\]")
            s.line(answer)
            return s.wait(), s.text()
        finally:
            s.close()

    code, screen = rm_all_on_a_terminal("n")
    assert code == 1 and "nothing was deleted" in screen and len(history_chats(env)) == 2
    code, screen = rm_all_on_a_terminal("y")
    assert code == 0 and "deleted 2 conversations" in screen and history_chats(env) == []
    env.run("ask", "--model", "echo", "three", passphrase=False)
    done = env.run("history", "rm", "--all", "--yes", passphrase=False)
    assert done.code == 0 and "deleted 1 conversation" in done.err and history_chats(env) == []


@pytest.mark.parametrize("unary", [False, True])
def test_an_ask_cut_at_max_tokens_is_kept_as_a_chat_turn_is_and_a_filtered_one_is_not(history, unary):
    """One rule for a cut-off reply, in ask as in chat: cut at the output token limit, what came
    is kept (and the exit code still says it was cut); stopped by a filter or blocked, nothing is."""
    env = history
    flags = ["--no-stream"] if unary else []
    for scenario in ("safety", "blocked", "recitation"):
        assert env.run("ask", *flags, "--model", scenario, "filtered", passphrase=False).code == 6
    assert conversations(env) == []
    cut = env.run("ask", *flags, "--model", "max-tokens", "cut short", passphrase=False)
    assert cut.code == 6 and "MAX_TOKENS" in cut.err and cut.out == "Partial answer\n", cut
    [saved] = conversations(env)
    assert saved["kind"] == "ask" and saved["turns"] == 1, saved
    shown = env.run("history", "show", saved["id"], "--raw")
    assert shown.code == 0 and "cut short" in shown.out and "Partial answer" in shown.out, shown


def test_history_search_finds_matching_lines_ignoring_case(history):
    env = history
    env.run("chat", "--model", "echo", input="nothing here\nthe Quokka is a small marsupial\n", passphrase=False)
    env.run("ask", "--model", "echo", "what do wombats eat?", passphrase=False)
    result = env.run("history", "search", "QUOKKA")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert len([line for line in lines if not line.startswith("  ")]) == 1 and "nothing here" in lines[0]
    assert "  you (turn 2): the Quokka is a small marsupial" in lines
    assert any(line.startswith("  gemini (turn 2): echo") and "Quokka" in line for line in lines)
    assert "wombat" not in result.out
    data = json.loads(env.run("history", "search", "wombats", "--json").out)
    [found] = data["conversations"]
    assert data["query"] == "wombats" and found["kind"] == "ask"
    assert {(m["turn"], m["place"]) for m in found["matches"]} == {(0, "title"), (1, "user"), (1, "model")}
    none = env.run("history", "search", "platypus")
    assert none.code == 0 and none.out == "" and "no saved conversation holds 'platypus'" in none.err
    none = env.run("history", "search", "platypus", "--json")
    assert none.code == 0 and json.loads(none.out)["conversations"] == [] and json.loads(none.out)["query"] == "platypus", none
    # In colour, each match is highlighted (reverse video) in the line shown; piped, no escapes.
    coloured = env.run("history", "search", "quokka", "--color", "always")
    assert "the \x1b[7mQuokka\x1b[0m is a small marsupial" in coloured.out, coloured
    assert "\x1b[7m" not in result.out


PAGER_SCRIPT = """#!/usr/bin/env python3
import json, os, sys
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink("/proc/self/fd/" + name)
    except OSError:
        continue
    if not target.startswith("/proc/"):
        fds[name] = target
record = {"argv": sys.argv[1:], "input": sys.stdin.read(), "fds": sorted(fds), "stdout_tty": os.isatty(1),
          "api_key": os.environ.get("GEMINI_API_KEY"), "keylog": os.environ.get("SSLKEYLOGFILE")}
with open(os.environ["PAGER_RECORD"], "w") as handle:
    json.dump(record, handle)
print("PAGER RAN")
"""


def test_history_show_pages_what_is_taller_than_the_terminal(history):
    env = history
    lines = "\n".join("line %d of a long prompt" % i for i in range(30))
    env.run("ask", "--model", "echo", '"""\n' + lines, passphrase=False)
    env.run("ask", "--model", "echo", "short one", passphrase=False)
    long_id, short_id = [c["id"] for c in conversations(env)]
    pager = os.path.join(env.root, "pager.py")
    with open(pager, "w") as handle:
        handle.write(PAGER_SCRIPT)
    os.chmod(pager, 0o755)
    record = os.path.join(env.root, "pager.json")
    variables = dict(env.vars, PAGER=pager + " --from-gemvault", PAGER_RECORD=record, NO_COLOR="1",
                     SSLKEYLOGFILE=os.path.join(env.root, "keylog"))

    def show(conversation, rows, extra=None):
        s = PtySession([BIN, "history", "show", conversation[:8], "--passphrase-file", env.passfile], dict(variables, **(extra or {})), rows=rows)
        try:
            assert s.wait() == 0
            return s.text()
        finally:
            s.close()

    screen = show(long_id, 20)
    assert "PAGER RAN" in screen and "line 29 of a long prompt" not in screen
    with open(record) as handle:
        ran = json.load(handle)
    assert ran["argv"] == ["--from-gemvault"] and "line 29 of a long prompt" in ran["input"] and ran["stdout_tty"]
    assert ran["fds"] == ["0", "1", "2"], ran["fds"]
    assert ran["api_key"] is None and ran["keylog"] is None
    os.remove(record)
    # What fits is printed directly, and so is everything with PAGER=cat or an empty PAGER.
    screen = show(short_id, 20)
    assert "short one" in screen and "PAGER RAN" not in screen and not os.path.exists(record)
    for value in ("cat", ""):
        screen = show(long_id, 20, {"PAGER": value})
        assert "line 29 of a long prompt" in screen and not os.path.exists(record), value
    # Piped, never a pager.
    piped = env.run("history", "show", long_id[:8], env={"PAGER": pager, "PAGER_RECORD": record})
    assert "line 29" in piped.out and not os.path.exists(record)


def test_a_turn_records_its_model_and_the_chats_model_and_system_changes(history):
    env = history
    s = PtySession([BIN, "chat", "--model", "echo~first", "--passphrase-file", env.passfile], env.vars)
    try:
        s.expect(r"you ›")
        for line, reply in (("one", "last=one"), ("/model echo~second", "model set to echo~second"), ("two", "last=two"),
                            ("/system be terse", "system instruction set"), ("three", "system=be terse .*last=three"),
                            ("/system off", "system instruction removed"), ("four", "system=- .*last=four"),
                            ("/system brief again", "system instruction set")):
            s.mark()
            s.line(line)
            s.expect(reply)
        s.send("\x04")
        assert s.wait() == 0
    finally:
        s.close()
    [saved] = conversations(env)
    turns = json.loads(env.run("history", "export", saved["id"], "--format", "json").out)["turns"]
    assert [t["modelName"] for t in turns] == ["echo~first", "echo~second", "echo~second", "echo~second"]
    assert [t["system"] for t in turns] == [None, None, "be terse", ""]
    shown = env.run("history", "show", saved["id"][:8]).out
    assert "(model: echo~second)\nyou › two" in shown and "(system instruction: be terse)\nyou › three" in shown
    assert "(system instruction removed)\nyou › four" in shown and "(model: echo~first)" not in shown
    # --continue goes on with the model in use at the end; --model still wins when given.
    env.server.clear()
    resumed = env.run("chat", "--continue", input="five\n")
    assert resumed.code == 0 and "system=- " in resumed.out and "echo~second" in resumed.err, resumed
    assert env.server.requests()[-1]["path"].startswith("/v1beta/models/echo~second:")
    again = env.run("chat", "--continue", "--model", "echo~third", input="six\n")
    assert again.code == 0 and env.server.requests()[-1]["path"].startswith("/v1beta/models/echo~third:")
    turns = json.loads(env.run("history", "export", saved["id"], "--format", "json").out)["turns"]
    assert [t["modelName"] for t in turns[-2:]] == ["echo~second", "echo~third"]


def test_continue_goes_on_with_the_latest_chat_not_a_later_ask(history):
    env = history
    nothing = env.run("chat", "--continue", input="hi\n")
    assert nothing.code == 1 and "there is no saved chat to continue" in nothing.err
    env.run("ask", "--model", "echo", "an early ask", passphrase=False)
    only_asks = env.run("chat", "--continue", input="hi\n")
    assert only_asks.code == 1 and "there is no saved chat to continue" in only_asks.err, only_asks
    env.run("chat", "--model", "echo~chat", input="the chat\n", passphrase=False)
    env.run("ask", "--model", "echo", "a later ask", passphrase=False)
    env.server.clear()
    resumed = env.run("chat", "--continue", input="more\n")
    assert resumed.code == 0 and "turns=3" in resumed.out, resumed
    body = json.loads(env.server.requests()[-1]["body"])
    assert body["contents"][0]["parts"][0]["text"] == "the chat"
    assert env.server.requests()[-1]["path"].startswith("/v1beta/models/echo~chat:")
    by_title = {c["title"]: c for c in conversations(env)}
    assert by_title["the chat"]["turns"] == 2 and by_title["a later ask"]["turns"] == 1
    # --resume takes any conversation, an ask too, with its own model.
    env.server.clear()
    assert env.run("chat", "--resume", by_title["a later ask"]["id"][:8], input="on\n").code == 0
    assert env.server.requests()[-1]["path"].startswith("/v1beta/models/echo:")


def test_history_list_is_for_people_and_its_json_for_programs(history):
    """Local time as TZ says (ISO UTC in --json), a kind column, titles without heading marks,
    and rows that fit the terminal."""
    env = history
    assert env.run("ask", "--model", "echo", "## A heading as the first line", passphrase=False).code == 0
    long_title = "a title long enough to run past a narrow terminal " * 2
    assert env.run("chat", "--model", "echo", input=long_title + "\n", passphrase=False).code == 0
    listed = {c["kind"]: c for c in conversations(env)}
    assert listed["ask"]["last"].endswith("Z") and listed["ask"]["title"] == "## A heading as the first line"
    import datetime
    import zoneinfo
    zone = "Asia/Kolkata"  # +05:30: no whole-hour slip hides a UTC date
    last = datetime.datetime.strptime(listed["ask"]["last"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    # Local time with the zone, as every time a person reads (Output.localDate).
    local = last.astimezone(zoneinfo.ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M IST")
    table = env.run("history", "list", env={"TZ": zone})
    assert table.code == 0, table
    header, *rows = table.out.splitlines()
    assert header.split() == ["ID", "KIND", "TURNS", "FIRST", "LAST", "MODEL", "TITLE"], header
    [ask_row] = [row for row in rows if listed["ask"]["id"][:8] in row]
    assert " ask " in ask_row and local in ask_row and "A heading as the first line" in ask_row and "##" not in ask_row, ask_row
    s = PtySession([BIN, "history", "list", "--passphrase-file", env.passfile], dict(env.vars, TZ=zone), columns=60)
    try:
        assert s.wait() == 0
        lines = [line.rstrip() for line in s.text().splitlines() if line.strip()]
        assert lines and all(len(line) <= 60 for line in lines), lines
        assert len([line for line in lines if line[:8] in (listed["ask"]["id"][:8], listed["chat"]["id"][:8])]) == 2, lines
        assert any(line.endswith("…") for line in lines), lines
        # The title keeps room for its first words: other columns gave way.
        assert lines[0].split() == ["ID", "KIND", "LAST", "TITLE"], lines
        assert any("a title long enough to" in line for line in lines), lines
    finally:
        s.close()
