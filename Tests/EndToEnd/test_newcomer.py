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
