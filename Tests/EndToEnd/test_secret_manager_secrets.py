"""`secret set NAME --from gsm://…` (Docs/tool-secrets.md): a secret for another tool linked to
Secret Manager, checked as text rather than as a Google key, and fetched again once its copy is
older than secret_cache_ttl, against fake_google.py's Secret Manager."""
import json

from test_rotation import PROJECT_ID, google, service_account_file  # noqa: F401 (fixture)

TOKEN = "ghp_linkedFirst0123456789abcdefghijklmno"
NEXT_TOKEN = "ghp_linkedSecond123456789abcdefghijklmn"
SECRET = "gsm://projects/%s/secrets/tool-token" % PROJECT_ID
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"


def linked_secret(env, google, versions=(TOKEN,)):
    """A vault whose secret 'gh' is linked to the fake's secret tool-token."""
    google.control(secrets=[{"id": "tool-token", "versions": list(versions)}])
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google)
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = google.url
    env.init()
    made = env.run("secret", "set", "gh", "--from", SECRET)
    assert made.code == 0, made
    assert "from Secret Manager projects/%s/secrets/tool-token, version %d" % (PROJECT_ID, len(versions)) in made.err, made
    assert TOKEN not in made.out + made.err and NEXT_TOKEN not in made.out + made.err
    return made


def test_a_secret_that_is_no_google_key_is_linked_and_the_key_path_still_refuses_it(env, google):
    linked_secret(env, google)
    assert env.run("secret", "get", "gh").out == TOKEN + "\n"
    # The link is in the payload where Docs/vault-format.md puts it (version 10).
    import test_vault_format as fmt
    from conftest import PASSPHRASE
    vault = fmt.parse(env.vault_bytes())
    payload = fmt.unpad(fmt.decrypt(vault, fmt.unwrap(fmt.slot_of(vault, [fmt.PASSPHRASE_SLOT]), PASSPHRASE.encode())))
    secrets = {}
    fmt.decode_payload(payload, secrets=secrets)
    reference, version, fetched = secrets["gh"]["link"]
    assert payload[0] == 11 and reference == SECRET and version == 1 and fetched > 0
    listed = env.run("secret", "list")
    assert "gh" in listed.out and TOKEN[:4] in listed.out and TOKEN not in listed.out
    # The same value is not a Gemini key: key set --from keeps the key's check.
    refused = env.run("key", "set", "lab", "--from", SECRET)
    assert refused.code != 0 and "does not look like a Google API key" in refused.err, refused
    assert TOKEN not in refused.out + refused.err


def test_a_multi_line_value_needs_multiline(env, google):
    google.control(secrets=[{"id": "tls", "versions": [PEM]}])
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google)
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = google.url
    env.init()
    reference = "gsm://projects/%s/secrets/tls" % PROJECT_ID
    refused = env.run("secret", "set", "tls", "--from", reference)
    assert refused.code != 0 and "more than one line" in refused.err and "--multiline" in refused.err, refused
    assert env.run("secret", "list").out.count("tls") == 0
    taken = env.run("secret", "set", "tls", "--from", reference, "--multiline")
    assert taken.code == 0, taken
    assert env.run("secret", "get", "tls").out == PEM + "\n"


def test_a_linked_secret_takes_a_new_version_once_its_copy_is_older_than_the_cache_time(env, google):
    linked_secret(env, google)
    google.control(secrets=[{"id": "tool-token", "versions": [NEXT_TOKEN]}])
    calls = len(google.state()["sm_calls"])
    assert env.run("secret", "get", "gh").out == TOKEN + "\n"
    assert len(google.state()["sm_calls"]) == calls
    env.advance_clock(301)
    fetched = env.run("secret", "get", "gh")
    assert fetched.code == 0 and fetched.out == NEXT_TOKEN + "\n", fetched
    assert "took version 2 of secret 'gh' from Secret Manager" in fetched.err and NEXT_TOKEN not in fetched.err
    # Kept in the vault: the next use within the cache time asks nothing.
    calls = len(google.state()["sm_calls"])
    assert env.run("secret", "get", "gh").out == NEXT_TOKEN + "\n"
    assert len(google.state()["sm_calls"]) == calls
    history = env.run("secret", "history", "gh")
    assert TOKEN[:4] + "…" + TOKEN[-4:] in history.out
    # Set by hand, the secret is the vault's own again: no fetch after the cache time.
    assert env.run("secret", "set", "gh", input=TOKEN + "\n").code == 0
    env.advance_clock(301)
    calls = len(google.state()["sm_calls"])
    assert env.run("secret", "get", "gh").out == TOKEN + "\n"
    assert len(google.state()["sm_calls"]) == calls


def test_exec_and_a_session_refresh_a_linked_secret(env, google):
    linked_secret(env, google)
    assert env.run("unlock").code == 0
    try:
        google.control(secrets=[{"id": "tool-token", "versions": [NEXT_TOKEN]}])
        env.advance_clock(301)
        shown = env.run("exec", "--secret", "TOKEN=gh", "--", "sh", "-c", 'printf %s "$TOKEN"', passphrase=False)
        assert shown.code == 0 and shown.out == NEXT_TOKEN, shown
        assert "took version 2 of secret 'gh'" in shown.err
        assert env.run("secret", "get", "gh", passphrase=False).out == NEXT_TOKEN + "\n"
    finally:
        env.run("lock", passphrase=False)


def test_an_unreachable_secret_manager_means_the_copy_with_a_warning_then_exit_7(env, google):
    linked_secret(env, google)
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = "http://127.0.0.1:9"
    env.vars["GEMVAULT_RETRIES"] = "0"
    env.advance_clock(301)
    used = env.run("secret", "get", "gh")
    assert used.code == 0 and used.out == TOKEN + "\n", used
    assert used.err.count("could not refresh secret 'gh' from Secret Manager") == 1
    env.advance_clock(86400)
    stale = env.run("secret", "get", "gh")
    assert stale.code == 7 and "could not be refreshed from Secret Manager" in stale.err, stale
    assert TOKEN not in stale.out + stale.err


def test_a_refused_refresh_is_an_error_and_the_copy_stays(env, google):
    linked_secret(env, google)
    google.control(secrets=[{"id": "tool-token", "versions": [NEXT_TOKEN], "states": {"2": "DISABLED"}}])
    env.advance_clock(301)
    refused = env.run("secret", "get", "gh")
    assert refused.code == 6 and "DISABLED" in refused.err and TOKEN not in refused.out, refused
    listed = env.run("secret", "list")
    assert TOKEN[:4] + "…" + TOKEN[-4:] in listed.out and NEXT_TOKEN[-4:] not in listed.out, listed.out


def test_an_imported_share_ends_the_secrets_link(env, google, tmp_path):
    """Docs/sharing.md: a share stored over a linked secret ends its link, so the next read
    is the shared value, not a refresh from Secret Manager."""
    from test_sharing import identity, second
    linked_secret(env, google)
    alice = second(tmp_path, "alice")
    assert alice.run("secret", "set", "gh", input=NEXT_TOKEN + "\n").code == 0
    share = str(tmp_path / "gh.age")
    assert alice.run("secret", "share", "gh", "--to", identity(env)["recipient"], "-o", share).code == 0
    imported = env.run("secret", "import", share, "--replace")
    assert imported.code == 0, imported
    env.advance_clock(301)
    google.control(secrets=[{"id": "tool-token", "versions": [TOKEN, TOKEN]}])
    assert env.run("secret", "get", "gh").out == NEXT_TOKEN + "\n"
