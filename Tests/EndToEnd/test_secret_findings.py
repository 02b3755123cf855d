"""The third review's findings about secrets and the agent (issue 25, items 11, 13, 14, 15 and 17):
keys that could become HTTP headers, Google endpoints that trickle, what helper commands inherit,
what --json lets through, a vault replaced during a session, a connection flood read as "locked",
and a chat that kept sealing to a retired key."""
import json
import os
import subprocess

import pytest

from conftest import GOOD_KEY, auth_key
from test_rotation import OLD_NAME, google, setup  # noqa: F401

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
