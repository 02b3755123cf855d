"""key_secret (Docs/configuration.md, Docs/fleet.md): a key kept in Secret Manager, fetched with
the Google credentials rotation uses and held in memory only, against fake_google.py's Secret
Manager (versions.access with Google's errors) and its Gemini."""
import base64
import json
import os

from conftest import auth_key
from test_rotation import ACCOUNT, PROJECT_ID, PROJECT_NUMBER, google, service_account_file  # noqa: F401 (fixture)

FLEET_KEY = auth_key("FleetKeyVersion1")
NEXT_KEY = auth_key("FleetKeyVersion2")
SECRET = "gsm://projects/%s/secrets/gemini-key" % PROJECT_ID


def fleet(env, google, versions=(FLEET_KEY,), **secret):
    """A machine without a vault: a service account, the fake's endpoints, key_secret set."""
    google.control(keys=[{"id": "k%d" % index, "keyString": value} for index, value in enumerate(versions) if value.startswith("AQ.")],
                   secrets=[dict({"id": "gemini-key", "versions": list(versions)}, **secret)])
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google)
    env.vars["GEMVAULT_ENDPOINT"] = google.url
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = google.url
    env.vars["GEMVAULT_KEY_SECRET"] = SECRET


def which(env):
    result = env.run("key", "which", "--json", passphrase=False)
    return result, (json.loads(result.out) if result.code == 0 else None)


def test_a_machine_without_a_vault_takes_its_key_from_secret_manager(env, google):
    fleet(env, google, versions=(FLEET_KEY, NEXT_KEY))
    result, data = which(env)
    assert result.code == 0, result
    assert data["source"] == "secret-manager"
    assert "projects/%s/secrets/gemini-key, version 2" % PROJECT_ID in data["detail"] and "held in memory only" in data["detail"]
    assert data["masked"] == NEXT_KEY[:4] + "…" + NEXT_KEY[-4:]
    asked = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert asked.code == 0, asked
    assert FLEET_KEY not in asked.err and NEXT_KEY not in asked.err + asked.out
    # A pinned version; nothing of it is written anywhere under the user's folders.
    env.vars["GEMVAULT_KEY_SECRET"] = SECRET + "/versions/1"
    _, data = which(env)
    assert data["masked"] == FLEET_KEY[:4] + "…" + FLEET_KEY[-4:] and "version 1" in data["detail"]
    for folder, _, files in os.walk(env.home):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                content = handle.read()
            assert FLEET_KEY.encode() not in content and NEXT_KEY.encode() not in content, name
    assert all(call[1] == "/v1/projects/%s/secrets/gemini-key/versions/%s:access" % (PROJECT_ID, version)
               for call, version in zip(google.state()["sm_calls"][-1:], ["1"]))


def test_every_other_source_wins_over_key_secret_and_is_shown_as_shadowing_it(env, google):
    fleet(env, google)
    result = env.run("key", "which", "--json", env={"GEMINI_API_KEY": NEXT_KEY}, passphrase=False)
    data = json.loads(result.out)
    assert data["source"] == "environment" and any(s["source"] == "secret-manager" for s in data["shadowed"])
    assert google.state()["sm_calls"] == []


def test_secret_manager_refusals_name_the_secret_and_keep_the_exit_codes(env, google):
    fleet(env, google, versions=(FLEET_KEY, NEXT_KEY), states={"2": "DISABLED"})
    disabled, _ = which(env)
    assert disabled.code == 6 and "versions/latest" in disabled.err and "DISABLED" in disabled.err and "enable it" in disabled.err
    env.vars["GEMVAULT_KEY_SECRET"] = SECRET + "/versions/9"
    missing, _ = which(env)
    assert missing.code == 6 and "not found" in missing.err
    env.vars["GEMVAULT_KEY_SECRET"] = "gsm://projects/%s/secrets/nothing-here" % PROJECT_ID
    absent, _ = which(env)
    assert absent.code == 6 and "not found or has no versions" in absent.err
    env.vars["GEMVAULT_KEY_SECRET"] = SECRET
    google.control(sm_deny=[ACCOUNT])
    denied, _ = which(env)
    assert denied.code == 6 and "secretmanager.versions.access" in denied.err and ACCOUNT in denied.err
    assert "roles/secretmanager.secretAccessor" in denied.err
    env.vars["GEMVAULT_KEY_SECRET"] = "gsm://projects/p/secret/oops"
    malformed, _ = which(env)
    assert malformed.code == 1 and "gsm://projects/PROJECT/secrets/SECRET" in malformed.err


def test_bad_data_is_exit_4_and_never_shown(env, google):
    fleet(env, google, raw=[base64.b64encode((FLEET_KEY + "\nX-Evil: 1\n").encode()).decode(),
                            base64.b64encode(b"not-a-key-at-all").decode(),
                            base64.b64encode(b"A" * 70000).decode()])
    for version, words in [(2, "not one line"), (3, "does not look like a Google API key"), (4, "64 KiB")]:
        env.vars["GEMVAULT_KEY_SECRET"] = SECRET + "/versions/%d" % version
        result, _ = which(env)
        assert result.code == 4 and words in result.err, result
        assert "X-Evil" not in result.err
    env.vars["GEMVAULT_KEY_SECRET"] = SECRET + "/versions/1"
    google.control(set={"bad_crc": True})
    damaged, _ = which(env)
    assert damaged.code == 4 and "checksum" in damaged.err and FLEET_KEY not in damaged.err


def test_no_google_credentials_names_secret_manager_and_the_chain_tried(env, google):
    fleet(env, google)
    env.vars.pop("GOOGLE_APPLICATION_CREDENTIALS")
    env.vars["GCE_METADATA_HOST"] = "127.0.0.1:9"  # nothing listens there
    result, _ = which(env)
    assert result.code == 1, result
    assert "no Google credentials for Secret Manager (projects/%s/secrets/gemini-key)" % PROJECT_ID in result.err, result.err
    assert "API Keys" not in result.err
    for source in ("token_command", "GOOGLE_APPLICATION_CREDENTIALS", "application-default credentials", "metadata server"):
        assert source in result.err, source


def test_a_busy_secret_manager_is_retried(env, google):
    fleet(env, google)
    google.control(set={"fail": {"access": "unavailable:once"}})
    result, data = which(env)
    assert result.code == 0, result
    assert data["source"] == "secret-manager"
    assert len(google.state()["sm_calls"]) == 2


def linked_vault(env, google, versions=(FLEET_KEY,)):
    """A vault whose key 'lab' is linked to the secret (key set --from), and the key in use."""
    fleet(env, google, versions=versions)
    env.vars.pop("GEMVAULT_KEY_SECRET")
    env.init()
    made = env.run("key", "set", "lab", "--from", SECRET)
    assert made.code == 0, made
    assert "from Secret Manager projects/%s/secrets/gemini-key, version %d" % (PROJECT_ID, len(versions)) in made.err
    assert env.run("config", "set", "key", "lab").code == 0
    return made


def test_a_linked_vault_key_takes_a_new_version_once_its_copy_is_older_than_the_cache_time(env, google):
    linked_vault(env, google)
    listed = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert listed[0]["secret_manager"] == SECRET + " (version 1)"
    shown = env.run("key", "which")
    assert "secret: Secret Manager projects/%s/secrets/gemini-key, version 1, fetched " % PROJECT_ID in shown.out and "(cache)" in shown.out, shown
    data = json.loads(env.run("key", "which", "--json").out)
    assert data["source"] == "vault" and data["secret_manager"]["version"] == 1 and data["secret_manager"]["from_cache"], data
    # A new version at Google: within secret_cache_ttl (5m) the copy is used, with no request.
    google.control(keys=[{"id": "next", "keyString": NEXT_KEY}], secrets=[{"id": "gemini-key", "versions": [NEXT_KEY]}])
    calls = len(google.state()["sm_calls"])
    assert env.run("key", "get", "lab").out == FLEET_KEY + "\n"
    assert len(google.state()["sm_calls"]) == calls
    env.advance_clock(301)
    asked = env.run("ask", "hello", "--model", "ok")
    assert asked.code == 0, asked
    assert "took version 2 of 'lab' from Secret Manager" in asked.err and NEXT_KEY not in asked.err
    assert env.run("key", "get", "lab").out == NEXT_KEY + "\n"
    history = env.run("key", "history", "lab")
    assert FLEET_KEY[:4] + "…" + FLEET_KEY[-4:] in history.out
    # secret_cache_ttl 0: every use asks.
    assert env.run("config", "set", "secret_cache_ttl", "0").code == 0
    calls = len(google.state()["sm_calls"])
    env.run("key", "get", "lab")
    env.run("key", "get", "lab")
    assert len(google.state()["sm_calls"]) == calls + 2


def test_an_unreachable_secret_manager_means_the_copy_with_a_warning_then_exit_7(env, google):
    linked_vault(env, google)
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = "http://127.0.0.1:9"
    env.vars["GEMVAULT_RETRIES"] = "0"
    env.advance_clock(301)
    used = env.run("key", "get", "lab")
    assert used.code == 0 and used.out == FLEET_KEY + "\n"
    assert used.err.count("could not refresh 'lab' from Secret Manager") == 1 and "version 1" in used.err
    env.advance_clock(86400)
    stale = env.run("key", "get", "lab")
    assert stale.code == 7 and "could not be refreshed from Secret Manager" in stale.err and "since" in stale.err
    assert FLEET_KEY not in stale.out + stale.err


def test_a_refused_refresh_is_an_error_and_the_copy_stays(env, google):
    linked_vault(env, google)
    google.control(secrets=[{"id": "gemini-key", "versions": [NEXT_KEY], "states": {"2": "DISABLED"}}])
    env.advance_clock(301)
    refused = env.run("key", "get", "lab")
    assert refused.code == 6 and "DISABLED" in refused.err and FLEET_KEY not in refused.out
    listed = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert listed[0]["masked"] == FLEET_KEY[:4] + "…" + FLEET_KEY[-4:] and listed[0]["secret_manager"] == SECRET + " (version 1)"


def test_a_linked_key_is_not_rotated_or_rolled_back_by_hand(env, google):
    """A pasted value or a rollback would be replaced by the next fetch; --create goes through
    the secret (test_fleet_rotation.py)."""
    linked_vault(env, google)
    by_hand = env.run("key", "rotate", "lab", "--no-verify", input=NEXT_KEY)
    assert by_hand.code == 1 and "linked to Secret Manager" in by_hand.err
    assert google.state()["calls"] == []
    rolled = env.run("key", "rollback", "lab")
    assert rolled.code == 1 and "linked to Secret Manager" in rolled.err
    # Set by hand, the key is the vault's own again.
    assert env.run("key", "set", "lab", input=NEXT_KEY).code == 0
    assert json.loads(env.run("key", "list", "--json").out)["keys"][0]["secret_manager"] is None


def test_a_linked_key_is_refreshed_through_a_session_too(env, google):
    linked_vault(env, google)
    assert env.run("unlock").code == 0
    try:
        google.control(keys=[{"id": "next", "keyString": NEXT_KEY}], secrets=[{"id": "gemini-key", "versions": [NEXT_KEY]}])
        env.advance_clock(301)
        asked = env.run("ask", "hello", "--model", "ok", passphrase=False)
        assert asked.code == 0, asked
        assert "took version 2 of 'lab'" in asked.err
        listed = json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"]
        assert listed[0]["secret_manager"] == SECRET + " (version 2)"
        assert env.run("key", "get", "lab", passphrase=False).out == NEXT_KEY + "\n"
    finally:
        env.run("lock", passphrase=False)


def test_a_bad_reference_is_refused_before_anything_is_asked(env, google):
    fleet(env, google)
    env.vars.pop("GEMVAULT_KEY_SECRET")
    env.init()
    bad = env.run("key", "set", "lab", "--from", "gsm://projects/p/secrets/../x")
    assert bad.code == 64 and "gsm://projects/PROJECT/secrets/SECRET" in bad.err
    assert google.state()["sm_calls"] == []


def test_latest_going_back_to_an_older_version_is_refused_and_the_copy_kept(env, google):
    linked_vault(env, google, versions=(FLEET_KEY, NEXT_KEY))
    google.control(secrets=[{"id": "gemini-key", "keep": 1}])
    env.advance_clock(301)
    back = env.run("key", "get", "lab")
    assert back.code == 4 and "older than version 2 already taken" in back.err and FLEET_KEY not in back.out
    listed = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert listed[0]["secret_manager"] == SECRET + " (version 2)" and listed[0]["masked"] == NEXT_KEY[:4] + "…" + NEXT_KEY[-4:]


def test_an_answer_naming_another_project_is_refused(env, google):
    """The whole name is checked, not its /secrets/S/versions/N end: another project's secret
    of the same name is not this one."""
    fleet(env, google)
    google.control(set={"access_project": "attacker-project"})
    result, _ = which(env)
    assert result.code == 4 and "not a version of projects/%s/secrets/gemini-key" % PROJECT_ID in result.err, result
    google.control(set={"access_project": PROJECT_ID})  # by id, as by number: this secret
    result, data = which(env)
    assert result.code == 0 and data["source"] == "secret-manager", result


FORGED_KEY = auth_key("ForgedByTheAttacker")


def test_a_forged_version_jump_is_refused_and_relink_recovers(env, google):
    """One hostile answer for `latest` with a huge version: refused because versions.list does
    not show it (or, without that permission, the version asked for by number does not exist).
    A vault that did take one goes back with key set --from … --relink."""
    linked_vault(env, google, versions=(FLEET_KEY, NEXT_KEY))
    for denied in (False, True):
        if denied:
            google.control(sm_deny_permission=[[ACCOUNT, "secretmanager.versions.list"]])
        google.control(set={"forge_latest": {"version": 999999, "value": FORGED_KEY}})
        env.advance_clock(301)
        forged = env.run("key", "get", "lab")
        assert forged.code == 4 and "version 999999" in forged.err and "which the secret does not have" in forged.err, forged
        assert FORGED_KEY not in forged.out + forged.err
        env.advance_clock(301)
        assert env.run("key", "get", "lab").out == NEXT_KEY + "\n"  # the genuine answer is still taken
    # A vault holding a version the secret no longer shows (a forged one taken earlier): linking
    # again goes back only with --relink.
    google.control(secrets=[{"id": "gemini-key", "versions": [FORGED_KEY] + [FLEET_KEY] * 7}])  # versions 3..10
    env.advance_clock(301)
    assert env.run("key", "get", "lab").out == FLEET_KEY + "\n"
    google.control(secrets=[{"id": "gemini-key", "keep": 2}])
    refused = env.run("key", "set", "lab", "--from", SECRET)
    assert refused.code == 1 and "took version 10" in refused.err and "--relink" in refused.err, refused
    relinked = env.run("key", "set", "lab", "--from", SECRET, "--relink")
    assert relinked.code == 0 and "version 2" in relinked.err, relinked
    env.advance_clock(301)
    assert env.run("key", "get", "lab").out == NEXT_KEY + "\n"
    assert env.run("key", "set", "lab", "--relink", input=NEXT_KEY + "\n").code == 64


def test_a_version_list_naming_another_secret_does_not_confirm_a_newer_version(env, google):
    """A forged `latest` of version 7, and a list whose version 7 is another secret's (or the
    same secret in another project): the whole listed name is checked, so nothing confirms it."""
    linked_vault(env, google)
    for foreign in ("projects/%s/secrets/other-key/versions/7" % PROJECT_NUMBER, "projects/attacker-project/secrets/gemini-key/versions/7"):
        google.control(set={"forge_latest": {"version": 7, "value": FORGED_KEY}, "list_extra": [{"name": foreign, "state": "ENABLED"}]})
        env.advance_clock(301)
        forged = env.run("key", "get", "lab")
        assert forged.code == 4 and "among the versions of projects/%s/secrets/gemini-key, which is not one of them" % PROJECT_ID in forged.err, forged
        assert FORGED_KEY not in forged.out + forged.err
    google.control(set={"list_extra": []})
    env.advance_clock(301)
    assert env.run("key", "get", "lab").out == FLEET_KEY + "\n"


def test_answers_naming_two_project_numbers_are_refused(env, google):
    """The link names the project by id, so Google answers by number; a newer version named by
    another project's number is refused once the list names this one's."""
    linked_vault(env, google)
    google.control(secrets=[{"id": "gemini-key", "versions": [NEXT_KEY]}], set={"access_project": "999999999999"})
    env.advance_clock(301)
    refused = env.run("key", "get", "lab")
    assert refused.code == 4 and "projects/%s/secrets/gemini-key/versions/2" % PROJECT_NUMBER in refused.err and "not one of them" in refused.err, refused
    listed = json.loads(env.run("key", "list", "--json").out)["keys"][0]
    assert listed["secret_manager"] == SECRET + " (version 1)" and listed["masked"] == FLEET_KEY[:4] + "…" + FLEET_KEY[-4:]  # the copy is kept
    google.control(set={"access_project": PROJECT_NUMBER})
    env.advance_clock(301)
    assert env.run("key", "get", "lab").out == NEXT_KEY + "\n"


def test_doctor_shows_the_links_and_a_copy_too_old_to_be_used(env, google):
    linked_vault(env, google)
    data = json.loads(env.run("doctor", "--json").out)
    assert [(k["name"], k["reference"], k["version"]) for k in data["linked"]] == [("lab", SECRET, 1)]
    assert not any("secret_max_stale" in f["message"] for f in data["findings"])
    assert "linked: 'lab' comes from Secret Manager %s, version 1" % SECRET in env.run("doctor").out
    env.advance_clock(86400 + 60)
    stale = json.loads(env.run("doctor", "--json").out)
    assert any(f["check"] == "vault-keys" and "secret_max_stale" in f["message"] for f in stale["findings"])
    # Through a session, without counting as its use.
    assert env.run("unlock").code == 0
    try:
        through = json.loads(env.run("doctor", "--json", passphrase=False).out)
        assert [k["name"] for k in through["linked"]] == ["lab"]
    finally:
        env.run("lock", passphrase=False)


def test_a_ci_runner_with_only_the_metadata_server_reads_the_secret(env, google):
    """Docs/fleet.md's CI runner: no vault, no credential file, the VM's metadata server."""
    google.control(keys=[{"id": "k0", "keyString": FLEET_KEY}], secrets=[{"id": "gemini-key", "versions": [FLEET_KEY]}])
    env.vars.update(GCE_METADATA_HOST=google.url[len("http://"):], GEMVAULT_ENDPOINT=google.url,
                    GEMVAULT_SECRETMANAGER_ENDPOINT=google.url, GEMVAULT_KEY_SECRET=SECRET)
    asked = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert asked.code == 0, asked
    result, data = which(env)
    assert data["source"] == "secret-manager" and "version 1" in data["detail"]
    # The VM's service account lacks the role: the message names the metadata server's identity.
    google.control(sm_deny=["vm@%s.iam.gserviceaccount.com" % PROJECT_ID])
    denied, _ = which(env)
    assert denied.code == 6 and "metadata server" in denied.err and "secretmanager.versions.access" in denied.err


def test_exporting_a_linked_key_for_a_service_takes_its_current_version(env, google, tmp_path):
    import shutil
    import subprocess
    creds = shutil.which("systemd-creds")
    if creds is None:
        import pytest
        pytest.skip("systemd-creds is not installed (./test installs the package systemd as root)")
    linked_vault(env, google)
    google.control(keys=[{"id": "next", "keyString": NEXT_KEY}], secrets=[{"id": "gemini-key", "versions": [NEXT_KEY]}])
    env.advance_clock(301)
    host = os.path.join(str(tmp_path), "credential.secret")
    with open(host, "wb") as handle:
        handle.write(os.urandom(4096))
    os.chmod(host, 0o400)
    target = os.path.join(str(tmp_path), "lab.cred")
    made = env.run("key", "export", "lab", "--systemd-creds", "-o", target, env={"SYSTEMD_CREDENTIAL_SECRET": host})
    assert made.code == 0 and "took version 2 of 'lab'" in made.err, made
    opened = subprocess.run([creds, "decrypt", "--name=gemini-api-key", target, "-"], env=dict(os.environ, SYSTEMD_CREDENTIAL_SECRET=host),
                            capture_output=True, text=True)
    assert opened.stdout == NEXT_KEY


def test_a_vault_that_cannot_be_written_still_gets_the_fetched_value(env, google):
    """Keeping the copy is best effort: a read-only vault folder (a service's read-only home)
    still gets the version just fetched, with a warning."""
    import subprocess
    import pytest
    linked_vault(env, google)
    google.control(keys=[{"id": "next", "keyString": NEXT_KEY}], secrets=[{"id": "gemini-key", "versions": [NEXT_KEY]}])
    env.advance_clock(301)
    folder = os.path.dirname(env.vault)
    locked = subprocess.run(["chattr", "+i", folder], capture_output=True, text=True)
    if locked.returncode != 0:
        pytest.skip("chattr +i is not available here (%s): a read-only folder cannot be made for root" % locked.stderr.strip())
    try:
        got = env.run("key", "get", "lab")
    finally:
        subprocess.run(["chattr", "-i", folder], check=True)
    assert got.code == 0 and got.out == NEXT_KEY + "\n", got
    assert "could not keep it in the vault" in got.err and NEXT_KEY not in got.err
