"""Fitting in: the first run, completions, the man page, colour, progress and the JSON contracts."""
import datetime
import json
import os
import re
import shutil
import subprocess
import time
import uuid

import jsonschema
import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, ROOT
from ptyrun import PtySession

SCHEMAS = os.path.join(ROOT, "Docs", "schemas")


def schema(name):
    with open(os.path.join(SCHEMAS, name + ".schema.json")) as handle:
        return json.load(handle)


def valid(name, text):
    document = json.loads(text)
    jsonschema.Draft202012Validator(schema(name)).validate(document)
    return document


def tag(scenario):
    return "%s~%s" % (scenario, uuid.uuid4().hex[:8])


# The JSON contracts

def test_every_json_output_matches_its_committed_schema(api):
    used = set()

    def check(name, *args, code=0, **kw):
        result = api.run(*args, **kw)
        assert result.code == code, result
        used.add(name)
        return valid(name, result.out)

    check("init", "init", "--kdf", "interactive", "--json")
    check("recovery-code", "recovery-code", "--json")
    assert api.run("key", "set", input=GOOD_KEY).code == 0
    assert api.run("key", "rotate", "--no-verify", input=GOOD_KEY.replace("D3", "R0")).code == 0
    assert api.run("config", "set", "temperature", "0.5").code == 0
    assert api.run("config", "set", "--file", "model", "echo").code == 0
    keys = check("key-list", "key", "list", "--json")
    assert [k["name"] for k in keys["keys"]] == ["default"] and keys["keys"][0]["previous_versions"] == 1
    check("key-history", "key", "history", "default", "--json")
    me = check("identity", "identity", "--json")
    slots = check("slot-list", "slot", "list", "--json", passphrase=False)
    assert [slot["kind"] for slot in slots["slots"]] == ["passphrase", "recovery"] and slots["formatVersion"] == 2
    share = os.path.join(api.root, "default.age")
    assert api.run("key", "share", "default", "--to", me["recipient"], "-o", share).code == 0
    assert len(check("key-share-list", "key", "share", "default", "--list", "--json")["recipients"]) == 1
    assert check("key-import", "key", "import", share, "copy", "--yes", "--json")["verified"] is True
    # A young key with --if-older-than: found at (the fake) Google, whose createTime says it is
    # young; the rotation does nothing and says so (test_rotation.py checks the report of real
    # rotations against the same schema).
    from test_rotation import FakeGoogle
    google = FakeGoogle(api.root)
    try:
        google.control(keys=[{"id": "fit-in", "keyString": GOOD_KEY.replace("D3", "R0"),
                              "serviceAccountEmail": "bot@fit-in.iam.gserviceaccount.com"}])
        at_google = {"GEMVAULT_APIKEYS_ENDPOINT": google.url, "GCE_METADATA_HOST": google.url[len("http://"):]}
        assert check("key-rotate", "key", "rotate", "--create", "--if-older-than", "90", "--json", env=at_google)["action"] == "skipped"
    finally:
        google.stop()
    check("inspect", "inspect", "--json", passphrase=False)
    assert check("status", "status", "--json", passphrase=False)["unlocked"] is False
    assert check("config-list", "config", "list", "--json")["settings"] == {"temperature": "0.5"}
    assert check("config-list", "config", "list", "--file", "--json", passphrase=False)["settings"] == {"model": "echo"}
    check("config-explain", "config", "explain", "--json")
    assert check("key-which", "key", "which", "--json", passphrase=False)["source"] == "environment"
    # doctor exits 1 when it finds something; its JSON is the same either way.
    used.add("doctor")
    valid("doctor", api.run("doctor", "--json", passphrase=False).out)
    answer = check("ask", "ask", "--json", "hello there", passphrase=False)
    assert "hello there" in answer["text"] and answer["error"] is None
    failed = check("ask", "ask", "--json", "--model", tag("always-503"), "hi", passphrase=False, code=7,
                   env={"GEMVAULT_RETRIES": "0"})
    assert failed["error"]["exitCode"] == 7
    assert check("ask", "ask", "--json", "--count-tokens", "hi", passphrase=False)["totalTokens"] > 0
    check("models", "models", "--json", passphrase=False)
    check("prices", "prices", "--json", passphrase=False)
    listed = check("history-list", "history", "list", "--json")
    assert len(listed["conversations"]) == 1
    check("history-export", "history", "export", listed["conversations"][0]["id"], "--format", "json")
    usage = check("key-usage", "key", "usage", "--json")
    assert usage["rows"] and usage["rows"][0]["key"] == "$GEMINI_API_KEY"
    found = check("history-search", "history", "search", "HELLO", "--json")
    assert found["conversations"][0]["id"] == listed["conversations"][0]["id"]
    # Unlocked, status has every field filled.
    assert api.run("unlock").code == 0
    try:
        unlocked = check("status", "status", "--json", passphrase=False)
        assert unlocked["unlocked"] and isinstance(unlocked["agentPid"], int)
    finally:
        api.run("lock", passphrase=False)
    committed = {name[:-len(".schema.json")] for name in os.listdir(SCHEMAS)}
    assert used == committed, "schemas without a test: %s" % (committed - used)


def test_results_go_to_stdout_and_everything_else_to_stderr(api):
    api.init()
    stored = api.run("key", "set", input=GOOD_KEY)
    assert stored.code == 0 and stored.out == "" and "stored key" in stored.err
    got = api.run("key", "get")
    assert got.out == GOOD_KEY + "\n" and GOOD_KEY not in got.err
    retried = api.run("ask", "--model", tag("retry-503"), "hi", passphrase=False)
    assert retried.code == 0 and "retrying in" in retried.err and "retrying" not in retried.out


# The first run

def clean_user(env, fake_server):
    variables = dict(env.vars)
    variables.update({"GEMVAULT_ENDPOINT": fake_server.url, "GEMVAULT_MODEL": "echo", "XDG_RUNTIME_DIR": os.path.join(env.root, "run")})
    os.makedirs(variables["XDG_RUNTIME_DIR"], mode=0o700)
    return variables


def create_vault(session, answer=""):
    """Accepts step 1 and types the new passphrase twice."""
    session.expect(r"1\. Create the vault now\? \[Y/n\]")
    session.line(answer)
    session.expect(r"New passphrase for .*: ")
    session.line(PASSPHRASE)
    session.expect(r"Repeat the passphrase: ")
    session.line(PASSPHRASE)


def walk_through_first_run(session):
    """Answers every step of the guided set-up the way a new user would."""
    create_vault(session)
    code = session.expect(r"shown only this once:\s+([0-9A-Z]{4}(?:-[0-9A-Z]{4}){7})", timeout=30).group(1)
    session.expect(r"Have you stored the recovery code\? \[y/N\]")
    session.line("y")
    session.expect(r"2\. Store your Gemini API key .*\[Y/n\]")
    session.line("")
    session.expect(r"Paste the API key .*: ")
    session.line(GOOD_KEY)
    session.expect(r"3\. Check the key .*\[Y/n\]")
    session.line("")
    session.expect(r"the API accepted the key")
    session.expect(r"4\. Unlock a session.*\[Y/n\]")
    session.line("")
    session.expect(r"Start a chat now\? \[Y/n\]", timeout=30)
    return code


def test_first_run_sets_everything_up_and_starts_a_chat(env, fake_server):
    fake_server.clear()
    variables = clean_user(env, fake_server)
    s = PtySession([BIN], variables)
    try:
        code = walk_through_first_run(s)
        s.line("")
        s.expect(r"you ›")
        s.line("hello from the first run")
        s.expect(r"last=hello from the first run")
        s.line("/exit")
        assert s.wait() == 0, s.text()
        screen = s.text()
    finally:
        s.close()
    assert PASSPHRASE not in screen and GOOD_KEY not in screen
    assert any(r["headers"].get("x-goog-api-key") == GOOD_KEY for r in fake_server.requests())
    try:
        # The session holds the vault: no passphrase is needed, and the key is the one pasted.
        status = env.run("status", "--json", env=variables, passphrase=False)
        assert json.loads(status.out)["unlocked"], status
        assert env.run("key", "get", env=variables, passphrase=False).out == GOOD_KEY + "\n"
        # The recovery code shown is the real one.
        env.write_private(os.path.join(env.root, "code"), code + "\n")
        recovered = env.run("--no-session", "key", "list", "--passphrase-file", os.path.join(env.root, "code"), env=variables, passphrase=False)
        assert recovered.code == 3, "a recovery code is not a passphrase"
    finally:
        env.run("lock", env=variables, passphrase=False)


def test_first_run_fits_a_60_column_window(env, fake_server):
    from vt import widest_line
    s = PtySession([BIN], clean_user(env, fake_server), columns=60)
    try:
        create_vault(s)
        s.expect(r"Have you stored the recovery code\?", timeout=30)
        s.line("n")
        s.expect(r"Go on without storing it\?")
        s.line("y")
        s.expect(r"2\. Store your Gemini API key")
        s.line("n")
        assert s.wait() == 0
        # Every line the set-up wrote fits the window: none is broken mid-word by the terminal.
        assert widest_line(s.raw()) <= 60, s.raw()
        assert "Welcome to gemvault" in s.text() and "every key in the vault" in " ".join(s.text().split())
    finally:
        s.close()


def test_first_run_steps_can_be_declined(env, fake_server):
    variables = clean_user(env, fake_server)
    s = PtySession([BIN], variables)
    try:
        s.expect(r"1\. Create the vault now\? \[Y/n\]")
        s.line("n")
        assert s.wait() == 0
        assert "nothing was created" in s.text()
    finally:
        s.close()
    assert not os.path.exists(env.vault)
    # Declining the key step leaves a vault with no key, and says how to add one.
    s = PtySession([BIN], variables)
    try:
        create_vault(s, "y")
        s.expect(r"Have you stored the recovery code\?", timeout=30)
        s.line("n")
        s.expect(r"It cannot be shown again")
        s.expect(r"Go on without storing it\?")
        s.line("y")
        s.expect(r"2\. Store your Gemini API key")
        s.line("n")
        assert s.wait() == 0
        assert "gemvault key set" in s.text()
    finally:
        s.close()
    listed = env.run("key", "list", "--json", env=variables)
    assert listed.code == 0 and json.loads(listed.out)["keys"] == []


def test_first_run_against_an_endpoint_that_never_answers_shows_progress_and_stops_soon(env, fake_server):
    """A server that takes the connection and never answers: the check shows a progress line
    and stops after the first run's short limit (not the minute of the 'timeout' setting),
    with a clear message, and the set-up goes no further."""
    import socket
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    variables = clean_user(env, fake_server)
    variables["GEMVAULT_ENDPOINT"] = "http://127.0.0.1:%d" % silent.getsockname()[1]
    s = PtySession([BIN], variables)
    try:
        create_vault(s)
        s.expect(r"Have you stored the recovery code\? \[y/N\]", timeout=30)
        s.line("y")
        s.expect(r"2\. Store your Gemini API key .*\[Y/n\]")
        s.line("")
        s.expect(r"Paste the API key .*: ")
        s.line(GOOD_KEY)
        s.expect(r"3\. Check the key .*\[Y/n\]")
        s.line("")
        s.expect(r"checking the key with http://127\.0\.0\.1:\d+… \d")
        code = s.wait(timeout=40)
        screen = s.text()
    finally:
        s.close()
        silent.close()
    assert code == 7, screen
    assert "set-up stopped: the Gemini API at http://127.0.0.1:" in screen and "did not answer within 10 s" in screen
    assert "4. Unlock" not in screen and "Start a chat" not in screen
    assert env.run("key", "get", env=variables).out == GOOD_KEY + "\n"


def test_plain_gemvault_with_a_vault_but_no_key_offers_the_key_step(env, fake_server):
    variables = clean_user(env, fake_server)
    assert env.run("init", "--kdf", "interactive", env=variables).code == 0
    # The endpoint is the vault's own setting: the key step's check uses it, as the chat does.
    assert env.run("config", "set", "endpoint", variables.pop("GEMVAULT_ENDPOINT"), env=variables).code == 0
    env.vars.pop("GEMVAULT_ENDPOINT", None)
    fake_server.clear()
    s = PtySession([BIN], variables)
    try:
        s.expect(r"Passphrase for .*: ", timeout=30)
        s.line(PASSPHRASE)
        # Broken between words on the terminal: any space may be a line break.
        s.expect(r"the vault at [\s\S]* has no key 'default' yet".replace(" ", r"\s+"), timeout=30)
        s.expect(r"Store your Gemini API key in it now \(hidden input\)\? \[Y/n\]")
        s.line("")
        s.expect(r"Paste the API key .*: ")
        s.line(GOOD_KEY)
        s.expect(r"stored key 'default'")
        s.expect(r"Check the key .*\[Y/n\]")
        s.line("")
        s.expect(r"the API accepted the key")
        s.expect(r"you ›")
        s.line("hello with the new key")
        s.expect(r"last=hello with the new key")
        s.line("/exit")
        assert s.wait() == 0, s.text()
        screen = s.text()
    finally:
        s.close()
    # One passphrase for the whole run: the key step reuses the vault the chat opened.
    assert screen.count("Passphrase for") == 1, screen
    assert any(r["path"].endswith("/models?pageSize=1000") for r in fake_server.requests())
    assert env.run("key", "get", env=variables).out == GOOD_KEY + "\n"


def test_plain_gemvault_with_a_vault_starts_chat_and_without_a_terminal_prints_help(api):
    api.init()
    api.run("key", "set", input=GOOD_KEY)
    s = PtySession([BIN], dict(api.vars, GEMVAULT_MODEL="echo"))
    try:
        s.expect(r"you ›")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()
    piped = subprocess.run([BIN], env=api.vars, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert piped.returncode == 64 and "Usage: gemvault COMMAND" in piped.stderr and piped.stdout == ""


def readme_quick_start():
    with open(os.path.join(ROOT, "README.md")) as handle:
        text = handle.read()
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_ci_runs_the_readmes_test_command_and_nothing_else():
    """.ci/run's commands, after moving to the checkout, are exactly the README's "## Tests"
    block: no variable, option or step a user running the README's command would not have."""
    with open(os.path.join(ROOT, "README.md")) as handle:
        section = handle.read().split("## Tests", 1)[1]
    readme = [line.strip() for line in re.search(r"```sh\n(.*?)```", section, re.S).group(1).splitlines() if line.strip()]
    with open(os.path.join(ROOT, ".ci", "run")) as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.strip().startswith("#")]
    assert lines[0] == "set -euo pipefail" and lines[1] == 'cd "$(dirname "$0")/.."', lines
    assert lines[2:] == readme, (lines, readme)


def test_the_readme_quick_start_works_as_written(env, fake_server):
    """Every line of the README's quick start, literally, in a clean HOME with gemvault on PATH."""
    commands = readme_quick_start()
    assert commands[0] == "gemvault", commands
    variables = clean_user(env, fake_server)
    variables["PATH"] = os.path.dirname(BIN) + ":" + variables["PATH"]
    try:
        for command in commands:
            s = PtySession(["/bin/sh", "-c", command], variables)
            try:
                if command == "gemvault":
                    walk_through_first_run(s)
                    s.line("")
                    s.expect(r"you ›")
                    s.line("/exit")
                code = s.wait(timeout=60)
                assert code == 0, (command, s.text())
            finally:
                s.close()
    finally:
        env.run("lock", env=variables, passphrase=False)


# Completions and the manual

def script(shell):
    result = subprocess.run([BIN, "completion", shell], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == ""
    return result.stdout


@pytest.mark.parametrize("shell,check", [("bash", ["bash", "-n"]), ("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])])
def test_completion_scripts_parse(shell, check, tmp_path):
    path = tmp_path / ("gemvault." + shell)
    path.write_text(script(shell))
    if shutil.which(check[0]) is None:
        pytest.skip("%s is not installed, so its completion script cannot be checked" % check[0])
    result = subprocess.run(check + [str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def bash_candidates(env, line):
    path = os.path.join(env.root, "gemvault.bash")
    with open(path, "w") as handle:
        handle.write(script("bash"))
    probe = 'source %s; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gemvault; printf "%%s\\n" "${COMPREPLY[@]}"' % (
        path, " ".join("'%s'" % w for w in line.split(" ")))
    variables = dict(env.vars, PATH=os.path.dirname(BIN) + ":" + env.vars["PATH"])
    result = subprocess.run(["bash", "-c", probe], env=variables, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return [c for c in result.stdout.splitlines() if c]


def test_bash_completes_commands_options_keys_models_and_history(api):
    assert bash_candidates(api, "gemvault ke") == ["key"]
    assert bash_candidates(api, "gemvault key r") == ["rm", "rotate", "rollback"]
    assert sorted(bash_candidates(api, "gemvault chat --m")) == ["--max-output-tokens", "--model"]
    assert bash_candidates(api, "gemvault chat --mo") == ["--model"]
    assert bash_candidates(api, "gemvault init --kdf s") == ["sensitive"]
    api.init()
    api.run("key", "set", "work", input=GOOD_KEY)
    # Key names only from an unlocked session: none now, and nothing asked.
    assert bash_candidates(api, "gemvault key get ") == []
    assert api.run("unlock").code == 0
    try:
        assert bash_candidates(api, "gemvault key get w") == ["work"]
        assert bash_candidates(api, "gemvault chat --key ") == ["work"]
    finally:
        api.run("lock", passphrase=False)
    # Model names come from what `models` last saw.
    assert bash_candidates(api, "gemvault chat --model gem") == []
    assert api.run("models", passphrase=False).code == 0
    assert bash_candidates(api, "gemvault chat --model gem") == ["gemini-3.6-flash", "gemini-3.1-pro-preview"]
    # History ids.
    assert api.run("ask", "--model", "echo", "remember this", passphrase=False).code == 0
    ids = [c["id"] for c in json.loads(api.run("history", "list", "--json").out)["conversations"]]
    assert bash_candidates(api, "gemvault history show ") == ids
    # Paths for --vault.
    assert os.path.join(api.root, "pass") in bash_candidates(api, "gemvault --vault %s/pa" % api.root)


def test_fish_completes_from_the_same_table(env, tmp_path):
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed, so its completions cannot be exercised")
    path = tmp_path / "gemvault.fish"
    path.write_text(script("fish"))
    variables = dict(env.vars, PATH=os.path.dirname(BIN) + ":" + env.vars["PATH"])
    result = subprocess.run(["fish", "--no-config", "-c", "source %s; complete -C 'gemvault key r'" % path],
                            env=variables, capture_output=True, text=True, timeout=30)
    assert sorted(line.split("\t")[0] for line in result.stdout.splitlines()) == ["rm", "rollback", "rotate"], result


def test_the_man_page_renders_and_matches_help():
    committed = open(os.path.join(ROOT, "Docs", "gemvault.1")).read()
    generated = subprocess.run([BIN, "help", "--man"], capture_output=True, text=True).stdout
    assert generated == committed
    if shutil.which("groff") is None:
        pytest.skip("groff is not installed, so the page cannot be rendered")
    rendered = subprocess.run(["groff", "-man", "-Tutf8", "-ww"], input=committed, capture_output=True, text=True)
    assert rendered.returncode == 0 and "warning" not in rendered.stderr, rendered.stderr
    overview = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    page = re.sub(r".\x08", "", rendered.stdout)
    for line in overview.split("Commands:")[1].split("Global options:")[0].splitlines():
        if line.strip():
            name = re.split(r"\s{2,}", line.strip())[0].split(" [")[0]
            command = " ".join(w for w in name.split() if not w.isupper() and "|" not in w)
            assert "gemvault " + command in page, command


# Colour and progress

def help_on_a_terminal(env_vars, columns, *args):
    s = PtySession([BIN] + list(args), env_vars, columns=columns)
    try:
        assert s.wait() == 0
        return s.text().replace("\r\n", "\n")
    finally:
        s.close()


def test_help_is_wrapped_to_the_terminal_and_groups_subcommands(env):
    overview = help_on_a_terminal(env.vars, 60, "--help")
    lines = overview.splitlines()
    assert max(len(line) for line in lines) <= 60, overview
    # Every `key` subcommand sits together, where the first one is, and so do `config` and `history`.
    for subject in ("key", "config", "history"):
        rows = [i for i, line in enumerate(lines) if line.startswith("  %s " % subject)]
        assert len(rows) >= 4 and all(lines[i].startswith("  ") for i in range(rows[0], rows[-1] + 1)), (subject, rows)
        between = [lines[i] for i in range(rows[0], rows[-1] + 1) if re.match(r"^  [a-z]", lines[i])]
        assert all(line.startswith("  %s " % subject) for line in between), between
    command = help_on_a_terminal(env.vars, 50, "chat", "--help")
    before_examples, examples = command.split("Examples:\n")
    assert max(len(line) for line in before_examples.splitlines()) <= 50, before_examples
    assert "  gemvault chat --bubbles --model gemini-3.1-pro-preview" in examples  # whole, to copy
    assert "[--model M]" in command  # an option is never split between lines
    # Piped, nothing is wrapped: scripts and grep see one line per entry.
    piped = subprocess.run([BIN, "--help"], capture_output=True, text=True, env=env.vars)
    assert any(len(line) > 100 for line in piped.stdout.splitlines())


def test_color_flag_setting_no_color_and_dumb_terminals(api):
    api.init()
    api.run("key", "set", input=GOOD_KEY)
    assert api.run("ask", "--model", "echo", "hi", passphrase=False).code == 0
    conversation = json.loads(api.run("history", "list", "--json").out)["conversations"][0]["id"]
    piped = api.run("history", "show", conversation)
    assert "\x1b[" not in piped.out
    forced = api.run("--color", "always", "history", "show", conversation)
    assert "\x1b[1m" in forced.out
    assert api.run("config", "set", "--file", "color", "always", passphrase=False).code == 0
    assert "\x1b[1m" in api.run("history", "show", conversation).out
    assert "\x1b[" not in api.run("history", "show", conversation, "--color=never").out
    assert api.run("config", "unset", "--file", "color", passphrase=False).code == 0
    bad = api.run("history", "show", conversation, "--color", "sometimes")
    assert bad.code == 64 and "--color takes auto, always or never" in bad.err

    def on_terminal(extra):
        s = PtySession([BIN, "history", "show", conversation, "--passphrase-file", api.passfile], dict(api.vars, **extra))
        try:
            assert s.wait(timeout=30) == 0
            return s.raw()
        finally:
            s.close()
    # On a terminal the conversation is drawn as coloured bubbles. (A progress line may
    # erase itself with ESC [2K; only styles count here.)
    styles = re.compile(r"\x1b\[[0-9;]*m")
    assert "\x1b[90m" in on_terminal({})
    assert not styles.search(on_terminal({"NO_COLOR": "1"}))
    assert not styles.search(on_terminal({"GEMVAULT_COLOR": "never"}))
    dumb = on_terminal({"TERM": "dumb"})
    assert "\x1b[" not in dumb, "TERM=dumb: no styles and no progress line"


def run_on_terminal(argv, variables, timeout=60):
    s = PtySession(argv, variables)
    try:
        code = s.wait(timeout=timeout)
        return code, s.text()
    finally:
        s.close()


@pytest.mark.real_kdf
def test_argon2_shows_unlocking_with_elapsed_time_on_a_terminal_only(env):
    code, screen = run_on_terminal([BIN, "init", "--kdf", "moderate", "--passphrase-file", env.passfile], env.vars)
    assert code == 0 and re.search(r"protecting the vault… \d+(\.\d)? s", screen), screen
    code, screen = run_on_terminal([BIN, "key", "list", "--passphrase-file", env.passfile], env.vars)
    assert code == 0 and re.search(r"unlocking… \d+(\.\d)? s", screen), screen
    dumb = run_on_terminal([BIN, "key", "list", "--passphrase-file", env.passfile], dict(env.vars, TERM="dumb"))
    assert dumb[0] == 0 and "unlocking" not in dumb[1]
    piped = env.run("key", "list")
    assert piped.code == 0 and "unlocking" not in piped.err


def test_retries_count_down_and_first_token_waits_show_a_spinner(api):
    variables = dict(api.vars)
    code, screen = run_on_terminal([BIN, "ask", "--model", tag("retry-429"), "hi"], variables)
    assert code == 0 and re.search(r"retrying in 1 s…", screen), screen
    code, screen = run_on_terminal([BIN, "ask", "--model", "hang-first", "--timeout", "2", "hi"], variables)
    assert code == 7 and "waiting for Gemini" in screen, screen
    code, screen = run_on_terminal([BIN, "ask", "--model", tag("retry-429"), "hi"], dict(variables, TERM="dumb"))
    assert code == 0 and "retrying in 1 s (429" in screen and "…" not in screen.split("retrying in 1 s (429")[1], screen


def test_zsh_completes_through_compinit(env, tmp_path):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed, so its completions cannot be exercised")
    (tmp_path / "_gemvault").write_text(script("zsh"))
    variables = dict(env.vars, PATH=os.path.dirname(BIN) + ":" + env.vars["PATH"], TERM="xterm")
    s = PtySession([shutil.which("zsh"), "-f"], variables)
    try:
        s.line("fpath=(%s $fpath); autoload -Uz compinit; compinit -u; PS1='zsh> '" % tmp_path)
        s.expect(r"zsh> ")
        s.mark()
        s.send("gemvault key r\t")
        s.expect(r"rm\s+rollback\s+rotate")
        s.send("\x15")
        s.mark()
        s.send("gemvault hist\t")
        s.expect(r"gemvault history ")
    finally:
        s.close()


def test_completion_offers_no_hostile_words_and_never_touches_the_session(api):
    """A server's model names and the history folder's file names are not trusted as shell
    words, and asking for key names neither extends the session nor waits on a stalled agent."""
    cache = os.path.join(api.home, ".cache", "gemvault")
    os.makedirs(cache, mode=0o700)
    with open(os.path.join(cache, "models"), "w") as handle:
        handle.write("gemini-ok\ngemini-x;touch${IFS}/tmp/pwned\ngemini-\x1b]0;title\x07\ngemini-$(id)\n")
    assert bash_candidates(api, "gemvault chat --model gemini") == ["gemini-ok"]
    api.init()
    api.run("key", "set", "work", input=GOOD_KEY)
    assert api.run("unlock", "--idle", "1h").code == 0
    try:
        def idle_deadline():
            text = json.loads(api.run("status", "--json", passphrase=False).out)["idleLocksAt"]
            return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
        before = idle_deadline()
        time.sleep(3)
        assert bash_candidates(api, "gemvault key get ") == ["work"]
        # Use would move the deadline by the 3 s waited; whole seconds allow 1 s of rounding.
        assert abs((idle_deadline() - before).total_seconds()) <= 1, "completion must not count as use of the session"
        pid = json.loads(api.run("status", "--json", passphrase=False).out)["agentPid"]
        os.kill(pid, 19)  # SIGSTOP: an agent that does not answer
        try:
            stalled = subprocess.run([BIN, "__complete", "key", "get", ""], env=api.vars, capture_output=True, text=True, timeout=10)
            assert stalled.returncode == 0 and stalled.stdout == ""
        finally:
            os.kill(pid, 18)  # SIGCONT
    finally:
        api.run("lock", passphrase=False)


# Polish a newcomer notices (issue 25, item 30)

def test_version_aliases_bare_history_help_json_spacing_and_grouped_numbers(api):
    version = api.run("--version", passphrase=False).out
    assert version.startswith("gemvault ")
    for spelling in (["-v"], ["version"], ["-V"]):
        result = api.run(*spelling, passphrase=False)
        assert (result.code, result.out) == (0, version), (spelling, result)
    api.init()
    assert api.run("ask", "--model", "ok", "hi", passphrase=False).code == 0
    bare, listed = api.run("history", "--json"), api.run("history", "list", "--json")
    assert bare.code == 0 and bare.out == listed.out, (bare, listed)
    assert api.run("history", "nonsense").code == 64
    overview = api.run("--help", passphrase=False).out
    assert "Plain 'gemvault', on a terminal, walks through the set-up" in overview and "starts a chat" in overview
    # JSON is laid out "key": value, on stdout and in config.json.
    status = api.run("status", "--json", passphrase=False).out
    assert '" : ' not in status and '"unlocked": false' in status, status
    assert api.run("config", "set", "--file", "model", "echo").code == 0
    with open(os.path.join(api.vars["XDG_CONFIG_HOME"], "gemvault", "config.json")) as handle:
        assert '"model": "echo"' in handle.read()
    models = api.run("models", passphrase=False).out
    assert "1,048,576" in models and "1048576" not in models, models
    assert json.loads(api.run("models", "--json", passphrase=False).out)["models"][0]["inputTokenLimit"] == 1048576


def test_ask_on_a_terminal_ends_without_a_blank_line_and_says_interrupted(api):
    s = PtySession(["/bin/sh", "-c", BIN + " ask --model ok hi; echo '<end>'"], api.vars)
    try:
        assert s.wait() == 0
        rows = [row for row in s.screen.all_lines() if row.strip()] and s.screen.all_lines()
    finally:
        s.close()
    reply = next(i for i, row in enumerate(rows) if row.startswith("Bonjour"))
    assert rows[reply + 1] == "<end>", rows
    s = PtySession([BIN, "ask", "--model", tag("slow-long"), "hi"], api.vars)
    try:
        s.expect(r"tick 0")
        s.send("\x03")
        assert s.wait() == 130
        screen = s.text()
    finally:
        s.close()
    assert "[interrupted]" in screen, screen


def test_retries_on_a_terminal_leave_one_summary_line(api):
    code, screen = run_on_terminal([BIN, "ask", "--model", tag("always-503"), "hi"], dict(api.vars, GEMVAULT_RETRIES="2"))
    assert code == 7, screen
    warnings = [line for line in screen.splitlines() if "gemvault: warning:" in line]
    assert len(warnings) == 1 and "retried 2 times (last: 503 UNAVAILABLE" in warnings[0], screen
    assert "retrying in 1 s… (retry 1: 503 UNAVAILABLE" in screen


def test_the_spinner_says_thinking_once_thought_parts_arrive(api):
    code, screen = run_on_terminal([BIN, "ask", "--model", "thinking-slow", "hi"], api.vars)
    assert code == 0 and "Forty-two." in screen, screen
    assert "Gemini is thinking…" in screen and "secret thought" not in screen, screen



def test_errors_on_a_terminal_are_broken_between_words_to_its_width(env):
    """A long hint on a 60-column terminal: broken between words, its later lines indented
    under its first word; in a pipe the same hint stays one line, for grep."""
    env.vars.pop("GEMINI_API_KEY", None)
    piped = env.run("ask", "hi", passphrase=False)
    [hint] = [line for line in piped.err.splitlines() if line.startswith("gemvault: hint: ")]
    assert piped.code == 5 and len(hint) > 60, piped
    s = PtySession([BIN, "ask", "hi"], env.vars, columns=60, rows=24)
    assert s.wait() == 5
    s.read_available(0.1)
    lines = [line.rstrip() for line in s.screen.all_lines()]
    first = [index for index, line in enumerate(lines) if line.startswith("gemvault: hint: ")][0]
    shown = [lines[first]]
    for line in lines[first + 1:]:
        if not line.startswith(" " * len("gemvault: hint: ")):
            break
        shown.append(line)
    assert len(shown) > 1 and all(len(line) <= 59 for line in shown), lines
    assert " ".join(line.strip() for line in shown) == hint, (shown, hint)


def test_the_recovery_code_leaves_the_screen_once_stored(env, fake_server):
    variables = clean_user(env, fake_server)
    s = PtySession([BIN], variables)
    try:
        create_vault(s)
        code = s.expect(r"shown only this once:\s+([0-9A-Z]{4}(?:-[0-9A-Z]{4}){7})", timeout=30).group(1)
        s.expect(r"Have you stored the recovery code\? \[y/N\]")
        assert code in s.screen.text()
        s.line("y")
        s.expect(r"the recovery code was cleared from the screen")
        s.expect(r"2\. Store your Gemini API key")
        # Gone from the window and the scrollback (xterm's ED 3), as the emulator plays it.
        assert code not in s.screen.text(), s.screen.text()
        assert "\x1b[3J" in s.raw()
        s.line("n")
        assert s.wait() == 0
    finally:
        s.close()
    assert not os.path.exists(env.vault + ".recovery-unconfirmed")


def test_ctrl_c_at_the_recovery_question_is_remembered_and_declining_the_key_later_exits_0(env, fake_server):
    variables = clean_user(env, fake_server)
    s = PtySession([BIN], variables)
    try:
        create_vault(s)
        s.expect(r"Have you stored the recovery code\? \[y/N\]", timeout=30)
        s.send("\x03")
        s.wait()
    finally:
        s.close()
    assert os.path.exists(env.vault)
    marker = env.vault + ".recovery-unconfirmed"
    assert os.path.exists(marker) and os.path.getsize(marker) == 0
    s = PtySession([BIN], variables)
    try:
        s.expect(r"never confirmed as stored", timeout=30)
        s.expect(r"Have you stored the recovery code\? \[y/N\]")
        s.line("n")
        s.expect(r"gemvault recovery-code")
        s.expect(r"Passphrase for .*: ", timeout=30)
        s.line(PASSPHRASE)
        s.expect(r"Store your Gemini API key in it now \(hidden input\)\? \[Y/n\]", timeout=30)
        s.line("n")
        assert s.wait() == 0, s.text()
        assert "gemvault key set" in s.text()
    finally:
        s.close()
    assert os.path.exists(marker)
    # A new recovery code settles it.
    assert env.run("recovery-code", env=variables).code == 0
    assert not os.path.exists(marker)
