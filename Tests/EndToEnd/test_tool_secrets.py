"""Issue 43: secrets for other tools beside the keys (`gemvault secret …`), served by the
session agent one at a time by name."""
import os
import socket
import struct

import pytest

GITHUB = "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"
SLACK = "xoxb-2048-1234567890-AbCdEfGhIjKlMnOpQrStUv"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----"


@pytest.fixture
def vault(env):
    env.init()
    return env


def secret_set(env, name, value, *extra, **kwargs):
    return env.run("secret", "set", name, *extra, input=value + "\n", **kwargs)


def test_a_secret_is_stored_listed_masked_and_printed_for_scripts(vault):
    env = vault
    result = secret_set(env, "github", GITHUB)
    assert result.code == 0 and "stored secret 'github' (ghp_…2aQe" in result.err, result
    assert GITHUB not in result.err and GITHUB not in result.out
    got = env.run("secret", "get", "github")
    assert got.code == 0 and got.out == GITHUB + "\n", got
    listed = env.run("secret", "list")
    assert listed.code == 0 and "github" in listed.out and "ghp_…2aQe" in listed.out and GITHUB not in listed.out, listed
    # The keys are untouched: a secret is not a key, and `key list` does not show it.
    assert "github" not in env.run("key", "list").out


def test_history_rollback_rename_and_rm(vault):
    env = vault
    assert secret_set(env, "slack", SLACK).code == 0
    newer = SLACK.replace("AbCd", "WxYz")
    replaced = secret_set(env, "slack", newer)
    assert replaced.code == 0 and "replaced secret 'slack'" in replaced.err, replaced
    history = env.run("secret", "history", "slack")
    assert history.code == 0 and "xoxb…StUv" in history.out and "1 back" in history.out and SLACK not in history.out, history
    back = env.run("secret", "rollback", "slack")
    assert back.code == 0, back
    assert env.run("secret", "get", "slack").out == SLACK + "\n"
    # A second rollback undoes the first: the replaced value went into the history.
    assert env.run("secret", "rollback", "slack").code == 0
    assert env.run("secret", "get", "slack").out == newer + "\n"
    renamed = env.run("secret", "rename", "slack", "mcp.slack.SLACK_BOT_TOKEN")
    assert renamed.code == 0, renamed
    assert env.run("secret", "get", "mcp.slack.SLACK_BOT_TOKEN").out == newer + "\n"
    missing = env.run("secret", "get", "slack")
    assert missing.code == 1 and "no secret named 'slack'" in missing.err, missing
    assert secret_set(env, "other", GITHUB).code == 0
    taken = env.run("secret", "rename", "other", "mcp.slack.SLACK_BOT_TOKEN")
    assert taken.code == 1 and "already in the vault" in taken.err, taken
    removed = env.run("secret", "rm", "other")
    assert removed.code == 0 and env.run("secret", "get", "other").code == 1
    # The history moves with the name.
    assert env.run("secret", "rollback", "mcp.slack.SLACK_BOT_TOKEN").code == 0
    assert env.run("secret", "get", "mcp.slack.SLACK_BOT_TOKEN").out == SLACK + "\n"
    assert env.run("secret", "rollback", "nothing-here").code == 1


def test_values_are_printable_text_up_to_64_kib_and_line_breaks_need_multiline(vault):
    env = vault
    refused = secret_set(env, "tls", PEM)
    assert refused.code == 64 and "more than one line" in refused.err and PEM.splitlines()[1] not in refused.err, refused
    assert env.run("secret", "get", "tls").code == 1
    stored = secret_set(env, "tls", PEM, "--multiline")
    assert stored.code == 0 and "****" in stored.err, stored
    assert env.run("secret", "get", "tls").out == PEM + "\n"
    largest = "a" * 65536
    assert secret_set(env, "big", largest).code == 0
    assert env.run("secret", "get", "big").out == largest + "\n"
    too_big = secret_set(env, "big", largest + "b")
    assert too_big.code == 64 and "65536" in too_big.err, too_big
    assert env.run("secret", "get", "big").out == largest + "\n"
    control = secret_set(env, "bell", "abc\x07def")
    assert control.code == 64 and "control character" in control.err, control
    assert env.run("secret", "set", "bad/name", input="x\n").code == 64


def test_from_env_moves_a_variable_into_the_vault(vault):
    env = vault
    result = env.run("secret", "set", "gh", "--from-env", "GITHUB_TOKEN", env={"GITHUB_TOKEN": GITHUB})
    assert result.code == 0 and "unset GITHUB_TOKEN" in result.err and GITHUB not in result.err, result
    assert env.run("secret", "get", "gh").out == GITHUB + "\n"
    unset = env.run("secret", "set", "gh2", "--from-env", "NOT_THERE")
    assert unset.code == 64 and "not set" in unset.err, unset


def frame(op, fields=()):
    body = bytes([op]) + b"".join(bytes([tag]) + struct.pack("<I", len(value)) + value for tag, value in fields)
    return b"GVA1" + struct.pack("<I", len(body)) + body


def fields_of(answer):
    assert answer[:4] == b"GVA1"
    body = answer[8:8 + struct.unpack("<I", answer[4:8])[0]]
    found, offset = [], 1
    while offset < len(body):
        tag, length = body[offset], struct.unpack("<I", body[offset + 1:offset + 5])[0]
        found.append((tag, body[offset + 5:offset + 5 + length]))
        offset += 5 + length
    return body[0], found


def ask_agent(env, request):
    folder = os.path.join(env.vars["XDG_RUNTIME_DIR"], "gemvault")
    [name] = [n for n in os.listdir(folder) if n.endswith(".sock")]
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(10)
    client.connect(os.path.join(folder, name))
    client.sendall(request)
    answer = b""
    while len(answer) < 8 or len(answer) < 8 + struct.unpack("<I", answer[4:8])[0]:
        chunk = client.recv(65536)
        assert chunk
        answer += chunk
    client.close()
    return fields_of(answer)


TOOL_SECRET, TOOL_SECRET_SUMMARIES, KEY_NAME, KEY_VALUE = 23, 24, 6, 20


def test_the_session_serves_one_secret_per_request_by_name_and_summaries_without_values(vault):
    env = vault
    for name, value in (("github", GITHUB), ("slack", SLACK)):
        assert secret_set(env, name, value).code == 0
    assert env.run("unlock").code == 0
    try:
        got = env.run("secret", "get", "slack", passphrase=False)
        assert got.code == 0 and got.out == SLACK + "\n", got
        status, fields = ask_agent(env, frame(TOOL_SECRET, [(KEY_NAME, b"github")]))
        assert status == 0
        values = [value for tag, value in fields if tag == KEY_VALUE]
        assert values == [GITHUB.encode()]
        raw = b"".join(value for _, value in fields)
        assert SLACK.encode() not in raw
        status, fields = ask_agent(env, frame(TOOL_SECRET_SUMMARIES))
        raw = b"".join(value for _, value in fields)
        assert status == 0 and b"github" in raw and b"slack" in raw
        assert GITHUB.encode() not in raw and SLACK.encode() not in raw
        status, fields = ask_agent(env, frame(TOOL_SECRET, [(KEY_NAME, b"missing")]))
        assert status == 1 and b"no secret named 'missing'" in b"".join(v for _, v in fields)
        # Changes go through the session too, and the value never reaches the agent's log.
        assert secret_set(env, "github", GITHUB[::-1], passphrase=False).code == 0
        assert env.run("secret", "get", "github", passphrase=False).out == GITHUB[::-1] + "\n"
        listed = env.run("secret", "list", passphrase=False)
        assert listed.code == 0 and "github" in listed.out, listed
        folder = os.path.join(env.vars["XDG_RUNTIME_DIR"], "gemvault")
        log = "".join(open(os.path.join(folder, n)).read() for n in os.listdir(folder) if n.endswith(".log"))
        assert "handed out secret 'github'" in log and GITHUB not in log and GITHUB[::-1] not in log and SLACK not in log
    finally:
        env.run("lock", passphrase=False)


# --- exec --secret and --secret-file (item 2) ---

import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from conftest import BIN, GOOD_KEY, PASSPHRASE  # noqa: E402
from ptyrun import PtySession  # noqa: E402

# Prints the environment it got as JSON (only what gemvault could have added or kept).
REPORT_ENV = ("import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
              "if k not in ('PATH', 'HOME', 'LANG', 'PWD', 'SHLVL', '_', 'SWIFT_BACKTRACE')}))")


def run_exec(user, *args, passphrase=True, **kwargs):
    """`gemvault exec`, with the test passphrase file before the `--` (Env.run puts it last)."""
    args = list(args)
    if passphrase:
        args[args.index("--"):args.index("--")] = ["--passphrase-file", user.passfile]
    return user.run("exec", *args, passphrase=False, **kwargs)


def reported(result):
    assert result.code == 0, result
    return json.loads(result.out)


@pytest.fixture
def secrets_vault(vault):
    env = vault
    for name, value in (("github", GITHUB), ("slack", SLACK)):
        assert secret_set(env, name, value).code == 0
    assert env.run("key", "set", input=GOOD_KEY + "\n").code == 0
    return env


def test_exec_secret_sets_each_variable_and_nothing_else_from_the_vault(secrets_vault):
    env = secrets_vault
    got = reported(run_exec(env, "--secret", "GITHUB_TOKEN=github", "--secret", "SLACK_BOT_TOKEN=slack", "--",
                           sys.executable, "-c", REPORT_ENV))
    assert got["GITHUB_TOKEN"] == GITHUB and got["SLACK_BOT_TOKEN"] == SLACK
    assert "GEMINI_API_KEY" not in got and GOOD_KEY not in json.dumps(got)
    assert got["GEMVAULT_EXEC"] == "1"
    # The key too only when --key asks for it, in --env's variable.
    got = reported(run_exec(env, "--secret", "GITHUB_TOKEN=github", "--key", "default", "--env", "MY_KEY", "--",
                           sys.executable, "-c", REPORT_ENV))
    assert got["GITHUB_TOKEN"] == GITHUB and got["MY_KEY"] == GOOD_KEY and SLACK not in json.dumps(got)


def test_exec_secret_refusals(secrets_vault):
    env = secrets_vault
    for args, words in ((["--secret", "LD_PRELOAD=github"], "dynamic loader"), (["--secret", "A=github", "--secret", "A=slack"], "given twice"),
                        (["--secret", "github"], "VAR=NAME"), (["--secret", "A=no/such"], "VAR=NAME"),
                        (["--secret", "GEMINI_API_KEY=github", "--key", "default"], "both the API key and a secret"),
                        (["--secret", "A=github", "--env", "MY_KEY"], "--env goes with --key")):
        result = run_exec(env, *args, "--", "true")
        assert result.code == 64 and words in result.err, (args, result)
    missing = run_exec(env, "--secret", "A=nothing", "--", "true")
    assert missing.code == 1 and "no secret named 'nothing'" in missing.err, missing


def test_a_wrapped_command_runs_under_another_exec(secrets_vault):
    env = secrets_vault
    got = reported(run_exec(env, "--secret", "T=github", "--", sys.executable, "-c", REPORT_ENV, env={"GEMVAULT_EXEC": "1"}))
    assert got["T"] == GITHUB
    nested_key = run_exec(env, "--", "true", env={"GEMVAULT_EXEC": "1"})
    assert nested_key.code == 1 and "already inside" in nested_key.err


def test_locked_without_a_terminal_fails_at_once_with_the_message_an_mcp_client_shows(secrets_vault):
    env = secrets_vault
    # start_new_session: no controlling terminal, as under an editor; no passphrase source.
    result = run_exec(env, "--secret", "T=github", "--", "true", passphrase=False, timeout=30)
    assert result.code == 1, result
    assert result.err.splitlines()[0] == "gemvault: error: the vault is locked: run 'gemvault unlock'"


def test_locked_with_a_terminal_asks_for_the_passphrase_there(secrets_vault):
    env = secrets_vault
    s = PtySession([BIN, "exec", "--secret", "T=github", "--", sys.executable, "-c", "import os; print('got', len(os.environ['T']))"], env.vars)
    try:
        s.expect(r"[Pp]assphrase")
        s.line(PASSPHRASE)
        s.expect(r"got %d" % len(GITHUB))
        assert s.wait() == 0
        assert GITHUB not in s.text()
    finally:
        s.close()


def test_through_a_session_the_agent_serves_one_secret_per_request(secrets_vault):
    env = secrets_vault
    assert env.run("unlock").code == 0
    try:
        got = reported(run_exec(env, "--secret", "A=github", "--secret", "B=slack", "--", sys.executable, "-c", REPORT_ENV, passphrase=False))
        assert got["A"] == GITHUB and got["B"] == SLACK
        folder = os.path.join(env.vars["XDG_RUNTIME_DIR"], "gemvault")
        log = "".join(open(os.path.join(folder, n)).read() for n in os.listdir(folder) if n.endswith(".log"))
        assert log.count("handed out secret 'github'") == 1 and log.count("handed out secret 'slack'") == 1
        assert GITHUB not in log and SLACK not in log
    finally:
        env.run("lock", passphrase=False)


def test_with_only_home_and_path_the_wrapped_command_finds_the_session(secrets_vault):
    env = secrets_vault
    minimal = {"HOME": env.home, "PATH": env.vars["PATH"]}
    # The session is started the same way: no XDG_RUNTIME_DIR on either side.
    # (The test build's KDF floor, with which the vault was made, is needed to open it.)
    unlocked = subprocess.run([BIN, "unlock", "--passphrase-file", env.passfile], env=dict(minimal, GEMVAULT_TEST_KDF_FLOOR="1"),
                              capture_output=True, text=True, timeout=60)
    assert unlocked.returncode == 0, unlocked
    try:
        ran = subprocess.run([BIN, "exec", "--secret", "T=github", "--", sys.executable, "-c", REPORT_ENV], env=minimal,
                             capture_output=True, text=True, timeout=60, start_new_session=True)
        assert ran.returncode == 0, ran
        assert json.loads(ran.stdout)["T"] == GITHUB
    finally:
        subprocess.run([BIN, "lock"], env=minimal, capture_output=True, timeout=60)
        forget_shared_runtime_files(env)


def forget_shared_runtime_files(env):
    """The agent's lock and log for this test's vault, left in the shared /tmp/gemvault-<uid>
    (without XDG_RUNTIME_DIR, and no /run/user/<uid>), removed; the folder stays (another test's
    agent may be starting in it)."""
    folder = "/tmp/gemvault-%d" % os.getuid()
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        if name.endswith(".log") and env.vault in open(os.path.join(folder, name), errors="replace").read():
            for suffix in (".log", ".lock"):
                try:
                    os.remove(os.path.join(folder, name[:-len(".log")] + suffix))
                except FileNotFoundError:
                    pass


def run_with_secret_file(env, script):
    """Starts exec --secret-file with `script`, which prints the path it got and its pid, then
    waits; returns the gemvault process and the two."""
    proc = subprocess.Popen([BIN, "exec", "--secret-file", "TOKEN_FILE=github", "--passphrase-file", env.passfile, "--",
                             sys.executable, "-c", script], env=env.vars, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    path, pid = proc.stdout.readline().split()
    return proc, path, int(pid)


# Its argv holds only the secret's length, so a secret found in an argv is gemvault's fault.
WAITING_CHILD = ("import os, time; p = os.environ['TOKEN_FILE']; assert len(open(p).read()) == %d; "
                 "print(p, os.getpid(), flush=True); time.sleep(60)" % len(GITHUB))


def test_secret_file_is_private_and_removed_when_the_command_exits(secrets_vault):
    env = secrets_vault
    result = run_exec(env, "--secret-file", "TOKEN_FILE=github", "--", sys.executable, "-c",
                     "import os, stat; p = os.environ['TOKEN_FILE']; s = os.stat(p); d = os.stat(os.path.dirname(p)); "
                     "print(p, oct(s.st_mode & 0o777), oct(d.st_mode & 0o777), open(p).read())")
    assert result.code == 0, result
    path, mode, folder_mode, value = result.out.split()
    assert (mode, folder_mode, value) == ("0o600", "0o700", GITHUB)
    assert path.startswith(env.vars["XDG_RUNTIME_DIR"] + "/gemvault-exec-")
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
    assert GITHUB not in result.err


def test_secret_file_is_removed_when_the_child_is_killed_and_no_secret_is_in_gemvaults_argv_or_environment(secrets_vault):
    env = secrets_vault
    proc, path, child = run_with_secret_file(env, WAITING_CHILD)
    try:
        assert os.path.exists(path)
        for part in ("cmdline", "environ"):
            with open("/proc/%d/%s" % (proc.pid, part), "rb") as handle:
                raw = handle.read()
            assert GITHUB.encode() not in raw and PASSPHRASE.encode() not in raw
        os.kill(child, signal.SIGKILL)
        assert proc.wait(timeout=30) == 128 + signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
    assert GITHUB not in proc.stderr.read()


def test_secret_file_is_removed_when_gemvault_is_told_to_stop(secrets_vault):
    env = secrets_vault
    proc, path, _ = run_with_secret_file(env, WAITING_CHILD)
    os.kill(proc.pid, signal.SIGTERM)  # passed on to the child; gemvault waits, then removes
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))



def test_a_secret_file_left_by_a_killed_gemvault_is_removed_by_the_next_run(secrets_vault):
    """SIGKILL gives gemvault no chance to clean up; the folder carries its pid, and the next
    --secret-file run zeroes and removes every such folder whose gemvault is gone."""
    env = secrets_vault
    proc, path, child = run_with_secret_file(env, WAITING_CHILD)
    try:
        assert os.path.dirname(path).startswith(env.vars["XDG_RUNTIME_DIR"] + "/gemvault-exec-%d-" % proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert os.path.exists(path)  # what SIGKILL leaves
    finally:
        os.kill(child, signal.SIGKILL)
    result = run_exec(env, "--secret-file", "TOKEN_FILE=github", "--", "true")
    assert result.code == 0, result
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
