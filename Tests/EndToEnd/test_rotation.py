"""Hands-off rotation (`key rotate --create`, `--undo`, `key rm --revoke`, `key which --google`)
against fake_google.py: the API Keys service, the OAuth token endpoint and the metadata server,
in one process with the fake Gemini server, so a key made at the fake Google is the key the fake
Gemini accepts. Docs/rotation.md describes what is tested here."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import BIN, HERE, ROOT, auth_key, wait_until
from test_vault_format import decode_payload, decrypt, parse, slot_of, unpad, unwrap

PROJECT_NUMBER = "123456867718"
PROJECT_ID = "gen-lang-client-0123456789"
ACCOUNT = "gemini-bot@%s.iam.gserviceaccount.com" % PROJECT_ID
OLD_KEY = auth_key("OLDrotationkey")
OLD_NAME = "projects/%s/locations/global/keys/old-key" % PROJECT_NUMBER
RESTRICTIONS = {"apiTargets": [{"service": "generativelanguage.googleapis.com"}], "serverKeyRestrictions": {"allowedIps": ["203.0.113.7"]}}


class FakeGoogle:
    def __init__(self, tmp_dir):
        self.log = os.path.join(tmp_dir, "google.log")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_google.py"), "--log", self.log], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.url = "http://127.0.0.1:%d" % int(line.split()[1])

    def control(self, **command):
        request = urllib.request.Request(self.url + "/_control", data=json.dumps(command).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def state(self):
        with urllib.request.urlopen(self.url + "/_state", timeout=10) as answer:
            return json.loads(answer.read())

    def key(self, name):
        return self.state()["keys"].get(name)

    def live_keys(self):
        return {name: key for name, key in self.state()["keys"].items() if key["deleted_at"] is None}

    def calls(self):
        return self.state()["calls"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def google(tmp_path):
    server = FakeGoogle(str(tmp_path))
    yield server
    server.stop()


def service_account_file(env, google, email=ACCOUNT, register=True, token_uri=None, mode=0o600):
    """A service account's key file with an RSA key made now (none is committed)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    if register:
        public = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        google.control(accounts=[{"email": email, "public_pem": public}])
    path = os.path.join(env.home, "sa.json")
    env.write_private(path, json.dumps({"type": "service_account", "project_id": PROJECT_ID, "private_key_id": "k1", "private_key": pem,
                                        "client_email": email, "client_id": "1", "token_uri": token_uri or google.url + "/token"}), mode)
    env.private_key = pem
    return path


# The binary's clock for waiting on Google (operation polls, a new key's check, retries) runs
# this many times faster in these tests, and the fake counts a new key's propagation on the
# same clock: a rotation takes the same steps and says the same things in a fraction of the
# time. Tests that act at a moment of a rotation (a kill, a look at /proc) keep real time.
WAIT_SPEEDUP = 50


def speed_up_waits(env, google, factor=WAIT_SPEEDUP):
    """The binary's waits for Google, and the fake's propagation with them, `factor` times
    faster than real time from now on (GEMVAULT_TEST_WAIT_SPEEDUP); None: real time."""
    if factor:
        env.vars["GEMVAULT_TEST_WAIT_SPEEDUP"] = str(factor)
    else:
        env.vars.pop("GEMVAULT_TEST_WAIT_SPEEDUP", None)
    google.control(set={"speedup": factor or 1})


def setup(env, google, credential="service-account", key=OLD_KEY, key_id="old-key", restrictions=RESTRICTIONS, account=ACCOUNT,
          speedup=WAIT_SPEEDUP):
    """A vault whose key 'default' is a key of the fake project, bound to ACCOUNT, and a
    credential; the waits for Google `speedup` times faster (None: real time)."""
    env.init()
    assert env.run("key", "set", input=key + "\n").code == 0
    google.control(keys=[{"id": key_id, "keyString": key, "serviceAccountEmail": account, "restrictions": restrictions}])
    env.vars["GEMVAULT_ENDPOINT"] = google.url
    env.vars["GEMVAULT_APIKEYS_ENDPOINT"] = google.url
    if credential == "service-account":
        env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google)
    elif credential == "user":
        folder = os.path.join(env.home, "gcloud")
        os.makedirs(folder, mode=0o700)
        google.control(users=[{"refresh_token": "1//refresh-" + "r" * 40, "client_id": "cid.apps.googleusercontent.com", "client_secret": "GOCSPX-secret-value"}])
        env.write_private(os.path.join(folder, "application_default_credentials.json"), json.dumps({
            "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", "client_secret": "GOCSPX-secret-value",
            "refresh_token": "1//refresh-" + "r" * 40, "quota_project_id": PROJECT_ID, "token_uri": google.url + "/token"}))
        env.vars["CLOUDSDK_CONFIG"] = folder
    elif credential == "metadata":
        env.vars["GCE_METADATA_HOST"] = google.url[len("http://"):]
    elif credential == "token-command":
        token = "ya29.command-token-" + "t" * 40
        google.control(tokens=[{"token": token, "scope": "https://www.googleapis.com/auth/cloud-platform", "user": True, "identity": "ana@example.com"}])
        tokenfile = os.path.join(env.home, "token")
        env.write_private(tokenfile, token + "\n")
        assert env.run("config", "set", "token_command", "cat " + tokenfile).code == 0
        assert env.run("config", "set", "quota_project", PROJECT_ID).code == 0
        env.token = token
    speed_up_waits(env, google, speedup)
    return env


def vault_keys(env, links=None):
    """The vault's keys and their Google keys, read with the PyNaCl reader; its Secret Manager
    links go into `links` when given."""
    with open(env.vault, "rb") as handle:
        vault = parse(handle.read())
    data_key = unwrap(slot_of(vault, (1,)), b"correct horse battery staple")
    google = {}
    keys, _ = decode_payload(unpad(decrypt(vault, data_key)), google=google, links=links)
    return keys, google


def rotate(env, *args, timeout=120):
    """One hands-off rotation, in a second of its own: key ids carry the second."""
    env.advance_clock()
    return env.run("key", "rotate", "--create", "--verify-timeout", "30", *args, timeout=timeout)


def check_rotated(env, google, result):
    """A finished rotation: a new auth key bound to the same account with the same restrictions,
    current in the vault, working against Gemini, and the old key deleted at Google."""
    assert result.code == 0, result
    keys, records = vault_keys(env)
    new_key = keys["default"]
    assert new_key != OLD_KEY and new_key.startswith("AQ.")
    new_name, account = records["default"][0]
    assert records["default"][1] == (OLD_NAME, ACCOUNT)
    made = google.key(new_name)
    assert made["keyString"] == new_key and made["serviceAccountEmail"] == ACCOUNT == account
    assert made["restrictions"] == RESTRICTIONS
    assert made["name"].split("/")[-1].startswith("gemvault-default-")
    assert google.key(OLD_NAME)["deleteTime"]
    models = env.run("models")
    assert models.code == 0, models
    assert "25 minutes" in result.err
    for secret in (OLD_KEY, new_key):
        assert secret not in result.out + result.err
    return new_name, new_key


def test_rotate_create_with_a_service_account_file(env, google):
    setup(env, google, "service-account")
    google.control(set={"propagation": 14, "op_polls": 2})  # wide enough that a loaded machine still meets the window
    result = rotate(env, "--json")
    new_name, _ = check_rotated(env, google, result)
    report = json.loads(result.out)
    with open(os.path.join(ROOT, "Docs", "schemas", "key-rotate.schema.json")) as handle:
        jsonschema.Draft202012Validator(json.load(handle)).validate(report)
    assert report == {"version": 1, "name": "default", "action": "created", "old_key": OLD_NAME, "new_key": new_name,
                      "service_account": ACCOUNT, "old_key_deleted": True, "age_days": 0}
    # The propagation window was waited through, and the operation was polled until done.
    assert "not accepted yet" in result.err
    assert sum(1 for call in google.calls() if call[1].startswith("/v2/operations/")) >= 3
    # The first rotation looked the key up; the history now knows both Google names.
    history = env.run("key", "history", "default", "--json")
    values = json.loads(history.out)["values"]
    assert [v["google_key"] for v in values] == [new_name, OLD_NAME] and values[0]["service_account"] == ACCOUNT
    listing = json.loads(env.run("key", "list", "--json").out)["keys"][0]
    assert listing["google_key"] == new_name and listing["service_account"] == ACCOUNT


def test_a_second_rotation_uses_the_recorded_name_not_a_lookup(env, google):
    setup(env, google, "service-account")
    first_name, _ = check_rotated(env, google, rotate(env))
    lookups = [c for c in google.calls() if c[1] == "/v2/keys:lookupKey"]
    second = rotate(env)
    assert second.code == 0, second
    assert [c for c in google.calls() if c[1] == "/v2/keys:lookupKey"] == lookups
    _, records = vault_keys(env)
    assert records["default"][1][0] == first_name and google.key(first_name)["deleteTime"]


def test_rotate_create_with_user_credentials_and_a_quota_project(env, google):
    setup(env, google, "user")
    result = rotate(env)
    check_rotated(env, google, result)
    assert {call[2] for call in google.calls()} == {PROJECT_ID}


def test_user_credentials_without_a_quota_project_get_the_service_disabled_hint(env, google):
    setup(env, google, "user")
    path = os.path.join(env.vars["CLOUDSDK_CONFIG"], "application_default_credentials.json")
    with open(path) as handle:
        document = json.load(handle)
    del document["quota_project_id"]
    env.write_private(path, json.dumps(document))
    before = env.vault_bytes()
    result = rotate(env)
    # The lookup goes out before the key's project is known: no quota project at all.
    assert result.code == 6, result
    assert "SERVICE_DISABLED" in result.err and "quota project" in result.err and "quota_project" in result.err
    assert env.vault_bytes() == before
    assert set(google.live_keys()) == {OLD_NAME}


def test_rotate_create_with_the_metadata_server(env, google):
    setup(env, google, "metadata")
    which = env.run("key", "which", "--google")
    assert which.code == 0 and "metadata server" in which.out and "ya29." not in which.out, which
    check_rotated(env, google, rotate(env))


def test_rotate_create_with_token_command(env, google):
    setup(env, google, "token-command")
    which = env.run("key", "which", "--google")
    assert which.code == 0 and "token_command (cat)" in which.out and env.token not in which.out, which
    result = rotate(env)
    check_rotated(env, google, result)
    assert env.token not in result.out + result.err


def test_undo_brings_the_old_key_back_and_deletes_the_newer(env, google):
    setup(env, google)
    new_name, new_key = check_rotated(env, google, rotate(env))
    result = env.run("key", "rotate", "--undo", "--json")
    assert result.code == 0, result
    keys, records = vault_keys(env)
    assert keys["default"] == OLD_KEY and records["default"][0] == (OLD_NAME, ACCOUNT) and records["default"][1][0] == new_name
    assert "deleteTime" not in google.key(OLD_NAME) and google.key(new_name)["deleteTime"]
    assert json.loads(result.out)["action"] == "undone"
    assert env.run("models").code == 0


def test_if_older_than_does_nothing_for_a_young_key(env, google):
    setup(env, google)
    before = env.vault_bytes()
    result = rotate(env, "--if-older-than", "90", "--json")
    assert result.code == 0 and "nothing to do" in result.err, result
    assert json.loads(result.out)["action"] == "skipped"
    # The key is found (a lookup, as the vault holds no Google name yet) and read, nothing else.
    assert env.vault_bytes() == before and {call[0] for call in google.calls()} == {"GET"}, google.calls()
    # Zero days: any key is old enough.
    check_rotated(env, google, rotate(env, "--if-older-than", "0"))


def test_keep_old_leaves_the_old_key_working(env, google):
    setup(env, google)
    result = rotate(env, "--keep-old")
    assert result.code == 0 and "--keep-old" in result.err, result
    assert "deleteTime" not in google.key(OLD_NAME)
    assert set(google.live_keys()) == {OLD_NAME, vault_keys(env)[1]["default"][0][0]}
    # The next rotation says the kept value still works.
    again = rotate(env)
    assert again.code == 0 and "still works at Google" in again.err, again


def test_a_reused_key_id_inside_a_200_is_a_failure(env, google):
    setup(env, google)
    google.control(set={"reuse_id": True})
    before = env.vault_bytes()
    result = rotate(env)
    assert result.code == 6, result
    assert "code 6" in result.err and "A key with this id already exists." in result.err
    assert env.vault_bytes() == before and set(google.live_keys()) == {OLD_NAME}


def test_a_new_key_never_accepted_is_deleted_again(env, google):
    setup(env, google)
    google.control(set={"propagation": 600})
    before = env.vault_bytes()
    result = env.run("key", "rotate", "--create", "--verify-timeout", "4s")
    assert result.code == 6, result
    assert "still refused after" in result.err and "deleted the new key" in result.err
    assert env.vault_bytes() == before and set(google.live_keys()) == {OLD_NAME}


def test_an_unrestricted_result_is_refused_and_deleted(env, google):
    setup(env, google)
    google.control(set={"unrestricted_result": True})
    before = env.vault_bytes()
    result = rotate(env)
    assert result.code == 6 and "without restrictions" in result.err, result
    assert env.vault_bytes() == before and set(google.live_keys()) == {OLD_NAME}


def test_an_unrestricted_old_key_is_not_copied(env, google):
    setup(env, google, restrictions={})
    result = rotate(env)
    assert result.code == 6 and "no restrictions" in result.err, result
    assert [c for c in google.calls() if c[0] == "POST"] == []


def test_a_failed_delete_leaves_the_new_key_stored_and_says_what_to_delete(env, google):
    setup(env, google)
    google.control(set={"fail": {"delete": "permission"}})
    result = rotate(env)
    assert result.code == 6, result
    assert "gcloud services api-keys delete old-key --project %s" % PROJECT_NUMBER in result.err
    keys, records = vault_keys(env)
    assert keys["default"] != OLD_KEY and records["default"][1][0] == OLD_NAME
    assert "deleteTime" not in google.key(OLD_NAME)


def test_an_etag_mismatch_on_delete_is_reported(env, google):
    """The fake refuses a stale etag; gemvault reads the key right before deleting, so a
    change made in between is what gets reported."""
    setup(env, google)
    new_name, _ = check_rotated(env, google, rotate(env))
    request = urllib.request.Request(google.url + "/v2/" + new_name + "?etag=stale", method="DELETE",
                                     headers={"Authorization": "Bearer " + next(iter(google.state()["tokens"]))})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 409 and b"ABORTED" in refused.value.read()


@pytest.mark.parametrize("scenario,expected", [
    ("no-token", "HTTP 401"),
    ("scope", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"),
    ("permission", "apiKeysAdmin"),
    ("disabled", "API Keys API has not been used in project"),
])
def test_api_keys_refusals_give_a_precise_message_and_exit_6(env, google, scenario, expected):
    setup(env, google, "token-command")
    if scenario == "no-token":
        env.write_private(os.path.join(env.home, "token"), "ya29.unknown-token-" + "u" * 30 + "\n")
    elif scenario == "scope":
        google.control(tokens=[{"token": env.token, "scope": "https://www.googleapis.com/auth/cloud-platform.read-only", "user": True, "identity": "ana"}])
    elif scenario == "permission":
        google.control(deny=["ana@example.com"])
    elif scenario == "disabled":
        google.control(project={"apikeys_enabled": False})
    before = env.vault_bytes()
    result = rotate(env)
    assert result.code == 6, result
    assert expected in result.err and "hint:" in result.err, result
    assert env.vault_bytes() == before and set(google.live_keys()) == {OLD_NAME}
    assert "ya29." not in result.err


def test_a_server_that_never_answers_is_exit_7(env, google):
    setup(env, google)
    env.vars["GEMVAULT_APIKEYS_ENDPOINT"] = "http://127.0.0.1:9"
    env.vars["GEMVAULT_RETRIES"] = "0"
    result = rotate(env)
    assert result.code == 7 and "did not answer" in result.err, result


@pytest.mark.parametrize("flaw", ["signature", "aud", "iss", "scope", "exp"])
def test_the_fake_token_endpoint_refuses_a_bad_jwt(env, google, flaw):
    """The fake checks what Google checks, so gemvault's JWT passing it means something."""
    import base64
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    service_account_file(env, google)
    key = serialization.load_pem_private_key(env.private_key.encode(), None)
    if flaw == "signature":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {"iss": ACCOUNT, "scope": "https://www.googleapis.com/auth/cloud-platform", "aud": google.url + "/token", "iat": now, "exp": now + 3600}
    if flaw == "aud":
        claims["aud"] = "https://oauth2.googleapis.com/elsewhere"
    if flaw == "iss":
        claims["iss"] = "stranger@example.iam.gserviceaccount.com"
    if flaw == "scope":
        claims["scope"] = "https://www.googleapis.com/auth/userinfo.email"
    if flaw == "exp":
        claims["iat"], claims["exp"] = now - 7300, now - 3700

    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    signing = b64(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
    signature = key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
    body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + signing + "." + b64(signature)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(google.url + "/token", data=body.encode(), method="POST"), timeout=10)
    assert refused.value.code == 400 and b"invalid_grant" in refused.value.read()


def test_a_service_account_google_does_not_know_is_refused(env, google):
    setup(env, google, credential=None)
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google, register=False)
    result = rotate(env)
    assert result.code == 6 and "refused the credential" in result.err and "iss is not a known service account" in result.err, result
    assert env.private_key.splitlines()[1] not in result.err


def test_credential_files_are_checked_like_every_trusted_file(env, google):
    setup(env, google, credential=None)
    path = service_account_file(env, google)
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = path
    os.chmod(path, 0o644)
    readable = env.run("key", "which", "--google")
    assert readable.code == 0 and "readable by group or others" in readable.err, readable
    os.chmod(path, 0o666)
    writable = env.run("key", "which", "--google")
    assert writable.code == 1 and "writable by group or others" in writable.err, writable
    os.chmod(path, 0o600)
    # A token_uri that is plain http off loopback would carry the credential in the clear.
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google, token_uri="http://oauth.example.com/token")
    insecure = rotate(env)
    assert insecure.code == 1 and "unencrypted" in insecure.err, insecure
    none = env.run("key", "which", "--google", env={"GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": "127.0.0.1:9",
                                                    "CLOUDSDK_CONFIG": os.path.join(env.home, "nothing")})
    assert none.code == 1 and "no Google credentials" in none.err, none


def test_an_insecure_apikeys_endpoint_is_refused(env, google):
    setup(env, google)
    env.vars["GEMVAULT_APIKEYS_ENDPOINT"] = "http://apikeys.example.com"
    result = rotate(env)
    assert result.code == 64 and "apikeys_endpoint" in result.err and "access token" in result.err, result


def test_rm_revoke_deletes_the_key_at_google(env, google):
    setup(env, google)
    result = env.run("key", "rm", "default", "--revoke")
    assert result.code == 0, result
    assert google.key(OLD_NAME)["deleteTime"] and vault_keys(env)[0] == {}
    # A refused delete leaves the vault as it was.
    assert env.run("key", "set", input=auth_key("another") + "\n").code == 0
    google.control(keys=[{"id": "another", "keyString": auth_key("another"), "serviceAccountEmail": ACCOUNT}], set={"fail": {"delete": "permission"}})
    before = env.vault_bytes()
    refused = env.run("key", "rm", "default", "--revoke")
    assert refused.code == 6 and env.vault_bytes() == before, refused


def test_nothing_secret_reaches_argv_files_or_output(env, google):
    """While a rotation waits for Google, its command line, and every file under HOME after it,
    hold no key, token, refresh token or private key."""
    setup(env, google, "token-command", speedup=None)  # the test looks at the process while it waits
    google.control(set={"propagation": 6})
    argv = [BIN, "key", "rotate", "--create", "--verify-timeout", "30", "--passphrase-file", env.passfile]
    proc = subprocess.Popen(argv, env=dict(env.vars), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Google has made the new key, which it refuses for 6 s: the rotation is waiting.
    wait_until(lambda: any(method == "POST" and path.endswith("/keys") for method, path, _ in google.calls()), "the create call")
    with open("/proc/%d/cmdline" % proc.pid, "rb") as handle:
        cmdline = handle.read()
    with open("/proc/%d/environ" % proc.pid, "rb") as handle:
        environ = handle.read()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    new_key = vault_keys(env)[0]["default"]
    secrets = [env.token, OLD_KEY, new_key]
    for secret in secrets:
        assert secret.encode() not in cmdline + environ
        assert secret not in out + err
    for folder, _, files in os.walk(env.home):
        for name in files:
            if name == "token":
                continue
            with open(os.path.join(folder, name), "rb") as handle:
                content = handle.read()
            for secret in secrets:
                assert secret.encode() not in content, os.path.join(folder, name)


@pytest.mark.slow
@pytest.mark.parametrize("step", ["looking the current key", "creating gemvault-", "not accepted yet", "now AQ.",
                                  "deleted the old key", None])
def test_kill_9_at_every_step_leaves_a_consistent_vault_and_project(env, google, step):
    """A rotation killed while it looks up, creates, polls, verifies, stores or deletes leaves a
    vault that opens with the old or the new key current; the next rotation deletes a key it
    made and never stored, and ends with exactly one live key, the vault's. (Each step on a
    vault of its own, so the steps run side by side.)"""
    setup(env, google, speedup=None)  # killed at a moment it is seen at: in real time
    google.control(set={"op_polls": 3, "propagation": 2})
    argv = [BIN, "key", "rotate", "--create", "--verify-timeout", "30", "--passphrase-file", env.passfile]
    proc = subprocess.Popen(argv, env=dict(env.vars), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.set_blocking(proc.stderr.fileno(), False)
    err = b""
    deadline = time.time() + 60
    while step and step.encode() not in err and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
        err += proc.stderr.read() or b""
    if step:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    keys, records = vault_keys(env)
    current = keys["default"]
    assert current in {k["keyString"] for k in google.state()["keys"].values()}, step
    assert records["default"][0] is None or records["default"][0][0] in google.state()["keys"]
    if step is None:
        return
    env.advance_clock()  # key ids carry the second
    speed_up_waits(env, google)
    following = env.run("key", "rotate", "--create", "--verify-timeout", "30")
    assert following.code == 0, (step, following)
    # Killed after Google made the new key and before the vault stored it: the next run says so.
    # Killed after it named the key it creates and before the vault stored it: the next run says so.
    if step == "creating gemvault-":
        assert "was interrupted before it stored its new key" in following.err, following
    keys, records = vault_keys(env)
    live = google.live_keys()
    # The vault's current key lives; what the fake still has live is the vault's or was reported.
    assert records["default"][0][0] in live
    for name in live:
        assert name == records["default"][0][0] or name in following.err, (step, name, following.err)


def test_rotation_through_an_unlocked_session(env, google):
    """Through the agent: the rotation's change carries both Google names, and the key
    summaries the agent answers carry them back, without a passphrase."""
    setup(env, google)
    assert env.run("unlock").code == 0
    try:
        result = env.run("key", "rotate", "--create", "--verify-timeout", "30", passphrase=False)
        assert result.code == 0, result
        listing = json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"][0]
        history = json.loads(env.run("key", "history", "default", "--json", passphrase=False).out)["values"]
    finally:
        env.run("lock", passphrase=False)
    keys, records = vault_keys(env)
    assert listing["google_key"] == records["default"][0][0] and history[1]["google_key"] == OLD_NAME
    assert google.key(OLD_NAME)["deleteTime"] and keys["default"] == google.key(records["default"][0][0])["keyString"]


def api_keys_call(google, method, path):
    token = next(iter(google.state()["tokens"]))
    request = urllib.request.Request(google.url + path, method=method, headers={"Authorization": "Bearer " + token,
                                                                               "x-goog-user-project": PROJECT_ID})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_the_key_string_comes_from_getkeystring_when_the_operation_lacks_it(env, google):
    setup(env, google)
    google.control(set={"omit_key_string": True})
    new_name, new_key = check_rotated(env, google, rotate(env))
    assert any(call[1] == "/v2/" + new_name + "/keyString" for call in google.calls())
    # get and list never carry a key string; getKeyString does.
    assert "keyString" not in api_keys_call(google, "GET", "/v2/" + new_name)
    assert all("keyString" not in key for key in api_keys_call(google, "GET", "/v2/projects/%s/locations/global/keys" % PROJECT_ID)["keys"])
    assert api_keys_call(google, "GET", "/v2/" + new_name + "/keyString")["keyString"] == new_key


def test_a_deleted_key_is_soft_deleted_and_works_for_a_while(env, google):
    """Google's delete lag: the old key still authenticates for a while after the rotation
    (gemvault says so); list hides it unless showDeleted; get still answers with deleteTime."""
    setup(env, google)
    google.control(set={"delete_lag": 3600})
    result = rotate(env)
    check_rotated(env, google, result)
    old = env.run("models", env={"GEMINI_API_KEY": OLD_KEY}, passphrase=False)
    assert old.code == 0, old
    listed = [k["name"] for k in api_keys_call(google, "GET", "/v2/projects/%s/locations/global/keys" % PROJECT_NUMBER)["keys"]]
    assert OLD_NAME not in listed
    shown = [k["name"] for k in api_keys_call(google, "GET", "/v2/projects/%s/locations/global/keys?showDeleted=true" % PROJECT_NUMBER)["keys"]]
    assert OLD_NAME in shown and api_keys_call(google, "GET", "/v2/" + OLD_NAME)["deleteTime"]
    # The lag ends (set by the test, not waited for: a loaded machine must not change the outcome).
    google.control(set={"delete_lag": 0})
    refused = env.run("models", env={"GEMINI_API_KEY": OLD_KEY}, passphrase=False)
    assert refused.code == 6 and "API_KEY_INVALID" not in refused.out, refused


def test_an_organisation_that_forbids_bound_keys_fails_inside_the_operation(env, google):
    setup(env, google)
    google.control(set={"bound_keys_forbidden": True})
    before = env.vault_bytes()
    result = rotate(env)
    assert result.code == 6 and "disableServiceAccountApiKeyCreation violated" in result.err and "the organisation may forbid" in result.err, result
    assert env.vault_bytes() == before and set(google.live_keys()) == {OLD_NAME}


def test_a_server_error_is_retried(env, google):
    setup(env, google)
    google.control(set={"fail": {"create": "unavailable:once"}})
    check_rotated(env, google, rotate(env))
    assert sum(1 for call in google.calls() if call[0] == "POST" and call[1].endswith("/keys")) == 2
