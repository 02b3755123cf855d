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


TOOL_SECRET, TOOL_SECRET_SUMMARIES, KEY_NAME, KEY_VALUE = 22, 23, 6, 20


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
