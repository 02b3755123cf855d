"""Google's keys as they are since September 2026: auth keys (AQ.) work everywhere without a word,
standard keys (AIza) are stored with a warning and refused by the API with a hint that says what
to do, and neither shape leaks through a prompt, an error or a scan."""
import json
import os
import subprocess

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, STANDARD_KEY, FakeGemini, auth_key
from fake_gemini import FOREIGN_AUTH_KEY
from ptyrun import PtySession
from test_fit_in import clean_user, create_vault

MIGRATION = "create an auth key at https://aistudio.google.com/apikey"


def key_list(env):
    result = env.run("key", "list", "--json")
    assert result.code == 0, result
    return {entry["name"]: entry for entry in json.loads(result.out)["keys"]}


def test_an_auth_key_is_stored_silently_and_listed_as_auth(env):
    env.init()
    stored = env.run("key", "set", input=GOOD_KEY)
    assert stored.code == 0 and "warning" not in stored.err and "hint" not in stored.err, stored
    entry = key_list(env)["default"]
    assert entry["kind"] == "auth" and entry["kind_retired"] is False and entry["masked"] == GOOD_KEY[:4] + "…" + GOOD_KEY[-4:]
    table = env.run("key", "list")
    assert "auth" in table.out and "warning" not in table.err


def test_a_standard_key_is_stored_with_the_migration_warning_and_marked_retired(env):
    env.init()
    stored = env.run("key", "set", "old", input=STANDARD_KEY)
    assert stored.code == 0, stored
    assert "gemvault: warning: this is a standard API key" in stored.err and "September 2026" in stored.err
    assert "gemvault: hint: create an auth key in Google AI Studio" in stored.err and "gemvault key rotate old" in stored.err
    assert STANDARD_KEY not in stored.err
    entry = key_list(env)["old"]
    assert entry["kind"] == "standard" and entry["kind_retired"] is True
    table = env.run("key", "list")
    assert "standard (retired)" in table.out and "'old'" in table.err
    other = env.run("key", "set", "proxy", input="sk-not-a-google-key-0123456789")
    assert other.code == 0 and "does not look like a Google API key" in other.err
    assert key_list(env)["proxy"]["kind"] == "other"


def test_key_history_which_and_status_show_each_kind(env):
    env.init()
    assert env.run("key", "set", input=STANDARD_KEY).code == 0
    rotated = env.run("key", "rotate", "--no-verify", input=GOOD_KEY)
    assert rotated.code == 0 and "warning" not in rotated.err, rotated
    history = json.loads(env.run("key", "history", "default", "--json").out)
    assert [(value["kind"], value["current"]) for value in history["values"]] == [("auth", True), ("standard", False)]
    assert "standard (retired)" in env.run("key", "history", "default").out
    which = env.run("key", "which", "--json")
    assert json.loads(which.out)["kind"] == "auth" and "standard" not in which.err
    legacy = env.run("key", "which", env={"GEMINI_API_KEY": STANDARD_KEY})
    assert "kind:   standard (retired)" in legacy.out
    assert "gemvault: warning: the key from environment variable GEMINI_API_KEY is a standard key" in legacy.err
    assert MIGRATION in legacy.err
    # Through an unlocked session, status names every key with its kind.
    assert env.run("key", "set", "legacy", input=STANDARD_KEY).code == 0
    run_dir = os.path.join(env.root, "run")
    os.makedirs(run_dir, mode=0o700)
    variables = {"XDG_RUNTIME_DIR": run_dir}
    assert env.run("unlock", env=variables).code == 0
    try:
        status = env.run("status", "--json", env=variables, passphrase=False)
        assert json.loads(status.out)["keys"] == [{"name": "default", "kind": "auth"}, {"name": "legacy", "kind": "standard"}]
        text = env.run("status", env=variables, passphrase=False)
        assert "default (auth), legacy (standard (retired))" in text.out and "standard keys" in text.err
    finally:
        env.run("lock", env=variables, passphrase=False)
    assert json.loads(env.run("status", "--json", env=variables, passphrase=False).out)["keys"] is None


def test_key_which_json_warns_about_a_standard_key_as_the_text_form_does(env):
    # With a vault present, an environment key shadows it: --json printed that warning but not
    # the standard-key one, so a script saw a retired key go by without a word.
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    for flags in ([], ["--json"]):
        which = env.run("key", "which", *flags, env={"GEMINI_API_KEY": STANDARD_KEY})
        assert which.code == 0, which
        assert "shadowed by environment variable GEMINI_API_KEY" in which.err, which
        assert "gemvault: warning: the key from environment variable GEMINI_API_KEY is a standard key" in which.err, (flags, which)
        assert MIGRATION in which.err
    assert json.loads(which.out)["kind"] == "standard"


def test_ask_works_with_an_auth_key_and_sends_no_second_credential(api):
    result = api.run("ask", "--model", "echo", "hello", passphrase=False)
    assert result.code == 0 and "last=hello" in result.out, result
    requests = api.server.requests()
    assert requests and all(r["headers"].get("x-goog-api-key") == GOOD_KEY for r in requests)
    assert not any(name.lower() == "authorization" for r in requests for name in r["headers"])


@pytest.mark.parametrize("policy,status,reason", [("reject-401", 401, "ACCESS_TOKEN_TYPE_UNSUPPORTED"), ("reject-400", 400, "API_KEY_INVALID")])
def test_a_refused_standard_key_exits_6_with_the_migration_hint(env, tmp_path, policy, status, reason):
    server = FakeGemini(str(tmp_path), "--standard-keys", policy)
    try:
        variables = {"GEMVAULT_ENDPOINT": server.url, "GEMINI_API_KEY": STANDARD_KEY}
        text = env.run("ask", "--model", "ok", "hello", env=variables, passphrase=False)
        assert text.code == 6 and text.out == "", text
        assert "standard API key from environment variable GEMINI_API_KEY" in text.err and "September 2026" in text.err
        assert "OAuth" not in text.err and STANDARD_KEY not in text.err
        hints = [line for line in text.err.splitlines() if line.startswith("gemvault: hint: ")]
        assert len(hints) == 1 and MIGRATION in hints[0] and "GEMINI_API_KEY" in hints[0]
        as_json = env.run("ask", "--json", "--model", "ok", "hello", env=variables, passphrase=False)
        error = json.loads(as_json.out)["error"]
        assert as_json.code == 6 and error["exitCode"] == 6 and error["status"] == status and error["reason"] == reason
        assert MIGRATION in error["hint"]
        # The same key in the vault: the hint names the command that replaces it.
        env.init()
        assert env.run("key", "set", input=STANDARD_KEY).code == 0
        stored = env.run("ask", "--model", "ok", "hello", env={"GEMVAULT_ENDPOINT": server.url})
        assert stored.code == 6 and "gemvault key rotate default" in stored.err, stored
    finally:
        server.stop()


@pytest.mark.parametrize("key,model,reason,words", [
    ("AQ.UNBOUND" + "x" * 43, "ok", "ACCESS_TOKEN_TYPE_UNSUPPORTED", "service account"),
    ("AQ.BAD" + "x" * 47, "ok", "API_KEY_INVALID", "wrong, revoked or deleted"),
    (GOOD_KEY, "api-blocked", "API_KEY_SERVICE_BLOCKED", "Generative Language API"),
    (GOOD_KEY, "disabled", "SERVICE_DISABLED", "https://console.developers.google.com/apis/api/generativelanguage.googleapis.com/overview?project=99999999"),
])
def test_every_refusal_says_what_to_do(api, key, model, reason, words):
    variables = {"GEMINI_API_KEY": key}
    text = api.run("ask", "--model", model, "hello", env=variables, passphrase=False)
    assert text.code == 6, text
    assert words in text.err and len([line for line in text.err.splitlines() if line.startswith("gemvault: hint: ")]) == 1
    assert key not in text.err
    as_json = api.run("ask", "--json", "--model", model, "hello", env=variables, passphrase=False)
    assert as_json.code == 6 and json.loads(as_json.out)["error"]["reason"] == reason, as_json
    if reason == "SERVICE_DISABLED":
        assert "few minutes" in text.err


def test_rotate_and_first_run_take_an_auth_key_silently_and_warn_about_a_standard_one(api):
    api.init()
    assert api.run("key", "set", input=auth_key("first")).code == 0
    del api.vars["GEMINI_API_KEY"]
    rotated = api.run("key", "rotate", input=GOOD_KEY)
    assert rotated.code == 0 and "warning" not in rotated.err and "which the API accepted" in rotated.err, rotated
    before = api.vault_bytes()
    refused = api.run("key", "rotate", input=STANDARD_KEY)
    assert refused.code == 6 and "this is a standard API key" in refused.err and MIGRATION in refused.err, refused
    assert api.vault_bytes() == before
    assert api.run("key", "get").out == GOOD_KEY + "\n"


def first_run_until_key(env, fake_server):
    variables = clean_user(env, fake_server)
    s = PtySession([BIN], variables)
    create_vault(s)
    s.expect(r"Have you stored the recovery code\? \[y/N\]", timeout=30)
    s.line("y")
    s.expect(r"2\. Store your Gemini API key .*\[Y/n\]")
    s.line("")
    s.expect(r"Paste the API key .*: ")
    return s, variables


def test_the_first_run_warns_like_key_set_and_offers_to_type_the_key_again(env, fake_server):
    s, variables = first_run_until_key(env, fake_server)
    try:
        s.line(STANDARD_KEY)
        s.expect(r"this is a standard API key [\s\S]*September\s+2026")
        s.expect(r"Type the key again\? \[Y/n\]")
        s.line("y")
        s.expect(r"Paste the API key .*: ")
        s.mark()
        s.line(GOOD_KEY)
        s.expect(r"3\. Check the key .*\[Y/n\]")
        assert "warning" not in s.text()
        s.line("n")
        s.expect(r"4\. Unlock a session.*\[Y/n\]")
        s.line("n")
        s.expect(r"Start a chat now\? \[Y/n\]")
        s.line("n")
        assert s.wait() == 0
        screen = s.raw()
    finally:
        s.close()
    assert GOOD_KEY not in screen and STANDARD_KEY not in screen
    assert env.run("key", "get", env=variables).out == GOOD_KEY + "\n"


def test_the_first_run_keeps_a_standard_key_when_told_to_but_stops_when_the_check_fails(env, fake_server):
    """Typing the key again is the default; a key kept anyway and refused by the check ends
    the set-up with exit 6: no "all set", no chat that would get the same 401."""
    s, variables = first_run_until_key(env, fake_server)
    try:
        s.line(STANDARD_KEY)
        s.expect(r"Type the key again\? \[Y/n\]")
        s.line("n")
        s.expect(r"stored key 'default'")
        s.expect(r"3\. Check the key .*\[Y/n\]")
        s.line("")
        s.expect(r"warning: the check failed: the standard API key from what you pasted was refused")
        s.expect(r"Type the key again\? \[Y/n\]")
        s.line("n")
        assert s.wait() == 6
        screen = s.text()
    finally:
        s.close()
    assert "set-up stopped: key 'default' is stored, but the Gemini API refused it" in screen
    assert "gemvault key rotate default" in screen
    for contradiction in ("nothing was changed", "the new key", "all set", "4. Unlock", "Start a chat"):
        assert contradiction not in screen, screen
    assert env.run("key", "get", env=variables).out == STANDARD_KEY + "\n"


def test_the_first_run_types_a_refused_key_again_by_default_and_keeps_only_the_good_one(env, fake_server):
    s, variables = first_run_until_key(env, fake_server)
    try:
        s.line(STANDARD_KEY)
        s.expect(r"Type the key again\? \[Y/n\]")
        s.line("n")
        s.expect(r"3\. Check the key .*\[Y/n\]")
        s.line("")
        s.expect(r"the check failed")
        s.expect(r"Type the key again\? \[Y/n\]")
        s.line("")
        s.expect(r"Paste the API key .*: ")
        s.line(GOOD_KEY)
        s.expect(r"the API accepted the key")
        s.expect(r"4\. Unlock a session.*\[Y/n\]")
        s.line("n")
        s.expect(r"Start a chat now\? \[Y/n\]")
        s.line("n")
        assert s.wait() == 0
    finally:
        s.close()
    assert env.run("key", "get", env=variables).out == GOOD_KEY + "\n"
    # The refused key is not kept as an earlier value of the key.
    history = json.loads(env.run("key", "history", "default", "--json", env=variables).out)
    assert [v["current"] for v in history["values"]] == [True], history


def test_a_prompt_holding_an_auth_key_is_refused_without_a_terminal(api):
    leaked = auth_key("Leaked-in-a-prompt")
    in_argument = api.run("ask", "--model", "ok", "my new key %s works?" % leaked, passphrase=False)
    on_stdin = api.run("ask", "--model", "ok", "--json", input="key: %s\n" % leaked, passphrase=False)
    assert json.loads(on_stdin.out)["error"]["exitCode"] == 1
    for result in (in_argument, on_stdin):
        assert result.code == 1, result
        assert leaked not in result.out and leaked not in result.err
    assert "looks like a Google auth key (AQ.L…xxxx)" in api.run("ask", "--model", "ok", "k=" + leaked, passphrase=False).err
    assert api.server.requests() == []
    allowed = api.run("ask", "--model", "echo", "--allow-secrets", "k=" + leaked, passphrase=False)
    assert allowed.code == 0 and len(api.server.requests()) == 1


def test_a_prompt_holding_an_auth_key_is_asked_about_on_a_terminal(api):
    s = PtySession([BIN, "chat", "--model", "echo"], api.vars)
    try:
        s.expect(r"you ›")
        s.mark()
        s.line("here is " + auth_key("Typed-at-the-prompt"))
        s.expect(r"looks like a Google auth key \(AQ\.T…xxxx\)")
        s.expect(r"Send it to Gemini anyway\? \[y/N\]")
        s.line("")
        s.expect(r"not sent")
        s.line("/exit")
        s.wait()
    finally:
        s.close()
    assert api.server.requests() == []


@pytest.mark.parametrize("scenario,secret", [("echo-key", GOOD_KEY), ("echo-foreign-key", FOREIGN_AUTH_KEY)])
def test_an_error_body_echoing_an_auth_key_is_redacted_in_every_output_mode(api, scenario, secret):
    for extra in ([], ["--json"], ["--raw"]):
        result = api.run("ask", "--model", scenario, *extra, "hello", passphrase=False)
        assert result.code == 6, result
        assert secret not in result.out and secret not in result.err
        assert secret[:16] not in result.out + result.err
        assert "[redacted]" in (json.loads(result.out)["error"]["message"] if extra == ["--json"] else result.err)


def test_key_command_output_is_redacted_by_shape(api):
    del api.vars["GEMINI_API_KEY"]
    script = os.path.join(api.root, "leaky-helper")
    api.write_private(script, "#!/bin/sh\necho \"vault said no for %s\" >&2\nexit 3\n" % FOREIGN_AUTH_KEY, mode=0o700)
    assert api.run("config", "set", "--file", "key_command", script).code == 0
    result = api.run("ask", "--model", "ok", "hello", passphrase=False)
    assert result.code == 5 and "vault said no for [redacted]" in result.err, result
    assert FOREIGN_AUTH_KEY not in result.err


def test_doctor_finds_auth_keys_by_shape_and_standard_keys_in_the_vault(env):
    env.init()
    assert env.run("key", "set", "legacy", input=STANDARD_KEY).code == 0
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    env.write_private(os.path.join(env.home, ".bashrc"), "export PATH=$PATH:~/bin\nexport LLM_TOKEN=%s\n" % auth_key("bashrc"))
    project = os.path.join(env.home, "src", "app")
    env.write_private(os.path.join(project, ".env"), "DEBUG=1\nMODEL_KEY='%s'\n" % auth_key("dotenv"))
    env.write_private(os.path.join(project, ".envrc"), "export OTHER=%s\n" % STANDARD_KEY)
    os.makedirs(os.path.join(env.home, ".bashrc.d"), exist_ok=True)
    env.write_private(os.path.join(env.home, ".bashrc.d", "ai.sh"), "export X=%s\n" % auth_key("bashrcd"))
    env.write_private(os.path.join(env.home, ".pam_environment"), "GEMINI_API_KEY DEFAULT=%s\n" % auth_key("pam"))
    env.write_private(os.path.join(env.vars["XDG_CONFIG_HOME"], "environment.d", "50-ai.conf"), "AI_KEY=%s\n" % auth_key("envd"))
    report = env.run("doctor", "--json", env={"MY_GEMINI": auth_key("environment")})
    assert report.code == 1, report
    findings = [(f["check"], f["message"]) for f in json.loads(report.out)["findings"]]
    assert ("environment", "MY_GEMINI is set in this environment to an auth key; every program you start inherits it") in findings
    assert any(check == "dotenv" and message.endswith("/src/app/.envrc:1 holds a standard API key in plain text") for check, message in findings)
    assert any(check == "shell-startup" and message.endswith(".bashrc:2 holds an auth key in plain text") for check, message in findings)
    assert any(check == "shell-startup" and "/.bashrc.d/ai.sh:1 holds an auth key" in message for check, message in findings)
    assert any(check == "shell-startup" and message.endswith("/.pam_environment:1 holds an auth key in plain text") for check, message in findings)
    assert any(check == "shell-startup" and message.endswith("/environment.d/50-ai.conf:1 holds an auth key in plain text") for check, message in findings)
    assert any(check == "dotenv" and message.endswith("/src/app/.env:2 holds an auth key in plain text") for check, message in findings)
    assert any(check == "dotenv" and "/src/app/.envrc:1 holds a standard API key" in message for check, message in findings)
    assert ("vault-keys", "the vault's key 'legacy' is a standard API key, which Google rejects for the Gemini API since September 2026") in findings
    assert not any("'default'" in message for _, message in findings)
    for secret in (GOOD_KEY, STANDARD_KEY, auth_key("bashrc"), auth_key("dotenv"), auth_key("environment")):
        assert secret not in report.out and secret not in report.err
    # Without a session or a passphrase, doctor never asks and says what it skipped.
    unchecked = env.run("doctor", passphrase=False)
    assert "the vault's keys were not checked" in unchecked.err and "legacy" not in unchecked.out
