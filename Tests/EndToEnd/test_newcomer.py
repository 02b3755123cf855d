"""A newcomer whose vault's only key is not called 'default': commands use it, several keys
are named with the fix, and the first key stored under another name offers to become the default."""
import json

from conftest import BIN, GOOD_KEY
from ptyrun import PtySession

OTHER_KEY = "AQ.Zz9RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhQq"


def vault_with(env, *names):
    env.init()
    for name, key in zip(names, [GOOD_KEY, OTHER_KEY]):
        assert env.run("key", "set", name, input=key + "\n").code == 0
    return env


def test_a_vault_whose_only_key_is_lab_uses_it_for_every_command(api):
    del api.vars["GEMINI_API_KEY"]
    vault_with(api, "lab")
    which = api.run("key", "which", "--json")
    assert which.code == 0, which
    assert json.loads(which.out)["name"] == "lab", which.out
    asked = api.run("ask", "--model", "echo", "hello")
    assert asked.code == 0, asked
    assert [r["headers"].get("x-goog-api-key") for r in api.server.requests()][-1] == GOOD_KEY
    got = api.run("key", "get")
    assert got.code == 0 and got.out == GOOD_KEY + "\n", got


def test_several_keys_and_none_named_says_which_and_how_to_choose(api):
    del api.vars["GEMINI_API_KEY"]
    vault_with(api, "lab", "work")
    asked = api.run("ask", "--model", "echo", "hello")
    assert asked.code == 5, asked
    assert "no key 'default' (it holds 'lab', 'work')" in asked.err
    assert "--key lab" in asked.err and "gemvault config set key lab" in asked.err
    assert "store one with" not in asked.err
    assert not api.server.requests()
    assert api.run("ask", "--model", "echo", "--key", "work", "hello").code == 0
    assert api.run("config", "set", "key", "work").code == 0
    assert api.run("ask", "--model", "echo", "hello").code == 0
    assert [r["headers"].get("x-goog-api-key") for r in api.server.requests()] == [OTHER_KEY, OTHER_KEY]


def test_a_key_setting_naming_a_missing_key_is_not_overridden_by_the_only_key(api):
    del api.vars["GEMINI_API_KEY"]
    vault_with(api, "lab")
    assert api.run("config", "set", "key", "prod").code == 0
    asked = api.run("ask", "--model", "echo", "hello")
    assert asked.code == 5 and "no key 'prod' (it holds 'lab')" in asked.err, asked
    assert not api.server.requests()


def test_the_first_key_set_under_another_name_says_it_is_used_without_a_terminal(env):
    env.init()
    stored = env.run("key", "set", "lab", input=GOOD_KEY + "\n")
    assert stored.code == 0
    assert "'lab' is the vault's only key, so commands use it" in stored.err
    assert "gemvault config set key lab" in stored.err
    second = env.run("key", "set", "work", input=OTHER_KEY + "\n")
    assert "only key" not in second.err
    assert env.run("config", "get", "key").code == 1


def test_the_first_key_set_under_another_name_offers_to_become_the_default_on_a_terminal(env):
    env.init()
    session = PtySession([BIN, "key", "set", "lab", "--passphrase-file", env.passfile], env.vars)
    try:
        session.expect("API key for 'lab'")
        session.line(GOOD_KEY)
        session.expect(r"Make 'lab' the key commands use by default\? \[Y/n\]")
        session.line("y")
        assert session.wait() == 0
    finally:
        session.close()
    got = env.run("config", "get", "key")
    assert got.code == 0 and got.out.strip() == "lab", got


def test_times_a_person_reads_are_local_with_the_zone_and_json_keeps_iso(env):
    """One rule: local time with its zone on the terminal, ISO 8601 UTC in --json."""
    import re
    env.vars["TZ"] = "XYZ-3"  # POSIX: a zone called XYZ, three hours east of UTC
    vault_with(env, "lab")
    listed = env.run("key", "list")
    assert listed.code == 0
    shown = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d XYZ", listed.out)
    assert shown, listed.out
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", listed.out), listed.out
    as_json = json.loads(env.run("key", "list", "--json").out)["keys"][0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", as_json["updated"])
    # The same moment, three hours on.
    from datetime import datetime, timedelta
    utc = datetime.strptime(as_json["updated"], "%Y-%m-%dT%H:%M:%SZ")
    assert shown[0] == (utc + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M") + " XYZ"
    which = env.run("key", "which")
    assert re.search(r"\(set \d{4}-\d\d-\d\d \d\d:\d\d XYZ\)", which.out), which.out
    unlocked = env.run("unlock", "--max", "2h")
    try:
        assert re.search(r"at the latest at \d{4}-\d\d-\d\d \d\d:\d\d XYZ", unlocked.err), unlocked.err
    finally:
        env.run("lock", passphrase=False)


def test_a_refusal_that_is_not_about_the_command_line_shows_the_fix_not_the_usage_line(env):
    env.init()
    asked = env.run("ask", "--model", "echo", input="", passphrase=False)
    assert asked.code == 64
    assert "gemvault: hint: gemvault ask \"QUESTION\", or pipe text in" in asked.err and "usage:" not in asked.err, asked
    agent = env.run("agent", passphrase=False)
    assert agent.code == 64 and "'gemvault unlock' starts one in the background" in agent.err and "usage:" not in agent.err, agent
    assert env.run("key", "set", "lab", input=GOOD_KEY + "\n").code == 0
    shared = env.run("key", "share", "lab")
    assert shared.code == 64 and "'lab' has not been shared yet, and no recipient was named" in shared.err, shared
    assert "hint: name one: gemvault key share lab --to age1…" in shared.err and "usage:" not in shared.err, shared
    # A real usage error still shows the usage line.
    wrong = env.run("key", "list", "--no-such-option", passphrase=False)
    assert wrong.code == 64 and "usage: gemvault key list" in wrong.err, wrong
