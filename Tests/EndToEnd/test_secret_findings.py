"""The third review's findings about secrets and the agent (issue 25, items 11, 13, 14, 15 and 17):
keys that could become HTTP headers, Google endpoints that trickle, what helper commands inherit,
what --json lets through, a vault replaced during a session, a connection flood read as "locked",
and a chat that kept sealing to a retired key."""
import json
import os
import subprocess
import threading

import pytest

from conftest import GOOD_KEY, auth_key
from test_rotation import OLD_NAME, google, setup  # noqa: F401
from test_session import connect_agent, session  # noqa: F401 (fixtures)

INJECTED = "X-Injected: yes"


def injected_requests(requests):
    """Requests that arrived with a header the key's later lines would make."""
    return [r["path"] for r in requests if any(name.lower() == "x-injected" for name in r["headers"])]


# -- 11: a key is one line, and nothing else reaches a header -------------------------------------

@pytest.mark.parametrize("typed", [GOOD_KEY + "\n" + INJECTED + "\n", GOOD_KEY + "\r\n" + INJECTED, GOOD_KEY + "\n\nsecond line\n"])
def test_key_set_refuses_a_key_with_more_lines_and_stores_nothing(env, typed):
    env.init()
    before = env.vault_bytes()
    result = env.run("key", "set", input=typed)
    assert result.code == 64 and "more than one line" in result.err, result
    assert "head -n 1" in result.err and GOOD_KEY not in result.err
    assert env.vault_bytes() == before


def test_key_set_takes_the_first_line_when_only_line_breaks_follow(env):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY + "\r\n\r\n\n").code == 0
    assert env.run("key", "get").out == GOOD_KEY + "\n"


def test_a_multi_line_key_from_the_environment_sends_no_request(api):
    result = api.run("ask", "--model", "echo", "hello", env={"GEMINI_API_KEY": GOOD_KEY + "\n" + INJECTED}, passphrase=False)
    assert result.code == 5 and "environment variable GEMINI_API_KEY is more than one line" in result.err, result
    assert injected_requests(api.server.requests()) == [] and api.server.requests() == []
    # A trailing line break (an `export X=$(cat file)` keeps none, `$'...\n'` does) is no second line.
    fine = api.run("ask", "--model", "echo", "hello", env={"GOOGLE_API_KEY": GOOD_KEY + "\r\n"}, passphrase=False)
    assert fine.code == 0, fine
    assert all(r["headers"].get("x-goog-api-key") == GOOD_KEY for r in api.server.requests())


@pytest.mark.parametrize("how", ["key-file", "key-file-flag", "key-command"])
def test_a_multi_line_key_from_a_file_or_key_command_sends_no_request(api, how):
    del api.vars["GEMINI_API_KEY"]
    path = os.path.join(api.root, "twolines")
    api.write_private(path, GOOD_KEY + "\n" + INJECTED + "\n")
    args = []
    if how == "key-file":
        api.write_private(os.path.join(api.vars["XDG_CONFIG_HOME"], "gemvault", "api-key"), GOOD_KEY + "\n" + INJECTED + "\n")
    elif how == "key-file-flag":
        args = ["--key-file", path]
    else:
        assert api.run("config", "set", "--file", "key_command", "cat " + path).code == 0
    result = api.run("ask", *args, "--model", "echo", "hello", passphrase=False)
    assert result.code == 5 and "more than one line" in result.err, result
    assert GOOD_KEY not in result.err and INJECTED not in result.err
    assert api.server.requests() == []


def test_a_rotation_refuses_a_multi_line_key_string_from_google_and_deletes_it(env, google):
    setup(env, google, "service-account")
    google.control(set={"key_string_tail": "\n" + INJECTED})
    before = env.vault_bytes()
    result = env.run("key", "rotate", "--create", "--verify-timeout", "30", timeout=120)
    assert result.code == 6 and "more than one line" in result.err, result
    assert env.vault_bytes() == before
    made = [k for name, k in google.state()["keys"].items() if name != OLD_NAME]
    assert made and all(k["deleted_at"] for k in made), made
    assert google.key(OLD_NAME)["deleted_at"] is None
    assert injected_requests(read_log(google.log)) == []


def test_a_token_command_printing_two_lines_is_refused(env, google):
    setup(env, google, "token-command")
    with open(os.path.join(env.home, "token"), "a") as handle:
        handle.write(INJECTED + "\n")
    result = env.run("key", "rotate", "--create", "--verify-timeout", "30", timeout=120)
    assert result.code == 1 and "token_command 'cat' printed more than one line" in result.err, result
    assert injected_requests(read_log(google.log)) == []


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle]


# -- 15: a Google endpoint that trickles is stopped by the timeout -------------------------------

@pytest.mark.parametrize("endpoint,credential,code,words", [
    ("token", "service-account", 7, "the token endpoint"),
    ("apikeys", "service-account", 7, "the API Keys service did not answer"),
    # The metadata server counts only when it answers within a second: a trickle is no answer.
    ("metadata", "metadata", 1, "no Google credentials"),
])
def test_a_google_endpoint_sending_a_byte_at_a_time_is_stopped_by_the_timeout(env, google, endpoint, credential, code, words):
    setup(env, google, credential)
    google.control(set={"trickle": [endpoint]})
    # The fake takes ten minutes for each answer; without a total deadline the run is cut off here.
    result = env.run("key", "rotate", "--create", "--verify-timeout", "30", env={"GEMVAULT_TIMEOUT": "2", "GEMVAULT_RETRIES": "0"}, timeout=120)
    assert result.code == code and words in result.err, result
    if code == 7:
        assert "no answer within 2 s" in result.err, result


# -- 17: helpers' environment, --json's bidi controls, a replaced vault, --key-file, the metadata host --

def env_dumping_helper(env, prints):
    """A helper command that writes its environment to a file and prints `prints`'s contents."""
    script = os.path.join(env.home, "helper.sh")
    env.write_private(script, "#!/bin/sh\nenv > \"$HOME/helper-env\"\ncat %s\n" % prints, mode=0o700)
    return script


def helper_environment(env):
    with open(os.path.join(env.home, "helper-env")) as handle:
        return dict(line.split("=", 1) for line in handle.read().splitlines() if "=" in line)


def test_key_command_gets_no_api_key_variable(api):
    keyfile = os.path.join(api.home, "the-key")
    api.write_private(keyfile, GOOD_KEY + "\n")
    assert api.run("config", "set", "--file", "key_command", env_dumping_helper(api, keyfile)).code == 0
    # --key names a vault key, so the environment's key is passed over; with no vault, key_command runs.
    result = api.run("ask", "--key", "default", "--model", "echo", "hello", env={"GOOGLE_API_KEY": auth_key("google-variable")}, passphrase=False)
    assert result.code == 0, result
    seen = helper_environment(api)
    assert "HOME" in seen and "GEMINI_API_KEY" not in seen and "GOOGLE_API_KEY" not in seen, seen


def test_token_command_gets_no_api_key_variable(env, google):
    setup(env, google, "token-command")
    assert env.run("config", "set", "token_command", env_dumping_helper(env, os.path.join(env.home, "token"))).code == 0
    result = env.run("key", "rotate", "--create", "--verify-timeout", "30",
                     env={"GEMINI_API_KEY": GOOD_KEY, "GOOGLE_API_KEY": auth_key("google-variable")}, timeout=120)
    assert result.code == 0, result
    seen = helper_environment(env)
    assert "HOME" in seen and "GEMINI_API_KEY" not in seen and "GOOGLE_API_KEY" not in seen, seen


def test_json_escapes_bidi_controls(api):
    prompt = "abc\u202edcba \u2066x\u2069 \u200e\u200f \u202a\u202b\u202c\u202d"
    result = api.run("ask", "--json", "--model", "echo", prompt, passphrase=False)
    assert result.code == 0, result
    for control in "\u202e\u2066\u2069\u200e\u200f\u202a\u202b\u202c\u202d":
        assert control not in result.out
    assert "\\u202e" in result.out and "\\u2066" in result.out
    assert prompt in json.loads(result.out)["text"]


@pytest.fixture
def unlocked(env):
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    assert env.run("unlock").code == 0
    yield env
    env.run("lock", passphrase=False)


def test_another_vault_put_at_the_path_during_a_session_ends_it_with_a_clear_message(unlocked):
    env = unlocked
    other = os.path.join(env.root, "other", "vault")
    os.makedirs(os.path.dirname(other), mode=0o700)
    assert env.run("--vault", other, "init", "--kdf", "interactive", "--json").code == 0
    assert env.run("--vault", other, "key", "set", input=auth_key("other-vault")).code == 0
    os.replace(other, env.vault)
    result = env.run("key", "get", passphrase=False)
    assert result.code == 4 and "another vault was put in its place" in result.err, result
    assert "the agent failed" not in result.err and "anotherVault" not in result.err
    status = json.loads(env.run("status", "--json", passphrase=False).out)
    assert status["unlocked"] is False, status


def test_a_refused_key_file_exits_1(api):
    path = os.path.join(api.root, "shared-key")
    api.write_private(path, GOOD_KEY + "\n", mode=0o644)
    result = api.run("ask", "--key-file", path, "--model", "echo", "hello", passphrase=False)
    assert result.code == 1 and path in result.err, result
    assert api.server.requests() == []


def test_a_metadata_host_off_loopback_says_why_it_is_ignored(env, google):
    setup(env, google, credential=None)
    result = env.run("key", "rotate", "--create", env={"GCE_METADATA_HOST": "203.0.113.9"}, timeout=120)
    assert result.code == 1 and "no Google credentials" in result.err, result
    assert "gemvault: warning: the metadata server is not asked: GCE_METADATA_HOST '203.0.113.9' is not loopback" in result.err
    assert "--allow-insecure-endpoint" in result.err


# -- 14: a connection flood is never read as "locked" -------------------------------------------

def test_a_connection_flood_is_never_read_as_locked(session):
    env = session
    assert env.run("unlock").code == 0
    stop = threading.Event()

    def flood():
        # Connections that never send: the agent's slots fill, and it drops the idlest.
        held = []
        while not stop.is_set():
            try:
                held.append(connect_agent(env, timeout=2))
            except OSError:
                continue
            if len(held) > 60:
                for client in held[:30]:
                    client.close()
                del held[:30]
        for client in held:
            client.close()

    threads = [threading.Thread(target=flood) for _ in range(6)]
    for thread in threads:
        thread.start()
    answers = []
    try:
        for _ in range(25):
            answers.append(("status", env.run("status", "--json", passphrase=False)))
            answers.append(("key get", env.run("key", "get", passphrase=False)))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    for what, result in answers:
        busy = result.code == 1 and "gemvault: error: the session is busy" in result.err
        if what == "status":
            assert busy or (result.code == 0 and json.loads(result.out)["unlocked"] is True), (what, result)
        else:
            assert busy or (result.code == 0 and result.out == GOOD_KEY + "\n"), (what, result)
        assert "session is locked" not in result.err and "passphrase" not in result.err, (what, result)
    # Most were answered: the retries and the backlog leave room for them.
    assert sum(1 for _, result in answers if result.code == 0) > len(answers) // 2, answers
    assert json.loads(env.run("status", "--json", passphrase=False).out)["unlocked"] is True


# -- 13: a chat left open during passwd, rekey or recovery-code reseals to the new key -----------

@pytest.mark.parametrize("command", ["passwd", "rekey", "recovery-code"])
def test_a_chat_open_during_a_key_change_seals_its_next_turn_to_the_new_key(api, command):
    from ptyrun import PtySession
    from test_history_keys import conversation_keys, files, opens, records
    from conftest import BIN, PASSPHRASE
    env = api
    env.init()
    chat = PtySession([BIN, "chat", "--model", "echo"], dict(env.vars))
    try:
        chat.expect(r"you ›")
        chat.line("before the change")
        chat.expect(r"last=before the change")
        [old_key] = conversation_keys(env.vault_bytes(), PASSPHRASE)
        passphrase = PASSPHRASE
        if command == "passwd":
            new_pass = os.path.join(env.root, "new-pass")
            passphrase = "a new passphrase, long enough"
            env.write_private(new_pass, passphrase + "\n")
            changed = env.run("passwd", "--new-passphrase-file", new_pass)
        else:
            changed = env.run(command)
        assert changed.code == 0, changed
        chat.line("after the change")
        chat.expect(r"last=after the change")
        chat.line("/exit")
        assert chat.wait() == 0
    finally:
        chat.close()
    [(conversation_id, path)] = files(env).items()
    sealed = records(path)[1:]
    keys = conversation_keys(env.vault_bytes(), passphrase)
    assert keys[0] != old_key
    # Each turn is one record after the meta: the first opens with the old key, the second only with the new.
    assert [opens(record, old_key) for record in sealed] == [True, True, False], len(sealed)
    assert opens(sealed[-1], keys[0])
    if command == "passwd":
        env.passfile = new_pass
    shown = env.run("history", "show", conversation_id)
    assert shown.code == 0 and "after the change" in shown.out, shown
