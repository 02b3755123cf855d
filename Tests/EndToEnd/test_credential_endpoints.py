"""Where the machine's Google access token may go (Docs/security.md, Docs/fleet.md): Google's
hosts and loopback always; another host only when the vault or the command's flag names it,
never from the environment, config.json or a credential file's token_uri. Against
fake_google.py; the hosts named here do not exist (.invalid), so nothing can reach them."""
import json
import os

from test_rotation import google, service_account_file  # noqa: F401 (fixture)
from test_secret_manager import SECRET, fleet, linked_vault

ELSEWHERE = "https://tokens.attacker.invalid"


def write_config(env, values):
    folder = os.path.join(env.home, ".config", "gemvault")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    env.write_private(os.path.join(folder, "config.json"), json.dumps(values))


def test_a_host_from_the_environment_or_config_json_is_refused_with_the_reason(env, google):
    fleet(env, google)
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = ELSEWHERE
    refused = env.run("key", "which", passphrase=False)
    assert refused.code == 64, refused
    assert "GEMVAULT_SECRETMANAGER_ENDPOINT: secretmanager_endpoint: %s is not Google's and not loopback" % ELSEWHERE in refused.err
    assert "--secretmanager-endpoint" in refused.err and "config set secretmanager_endpoint" in refused.err
    env.vars.pop("GEMVAULT_SECRETMANAGER_ENDPOINT")
    write_config(env, {"secretmanager_endpoint": ELSEWHERE})
    from_file = env.run("key", "which", passphrase=False)
    assert from_file.code == 64 and "config.json: secretmanager_endpoint" in from_file.err, from_file
    assert google.state()["sm_calls"] == []


def test_a_credential_files_token_uri_elsewhere_is_refused(env, google):
    fleet(env, google)
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google, token_uri=ELSEWHERE + "/token")
    refused = env.run("key", "which", passphrase=False)
    assert refused.code != 0 and "token_uri %s/token, which is not Google's and not loopback" % ELSEWHERE in refused.err, refused
    assert google.state()["sm_calls"] == []


def test_a_flag_sends_the_token_elsewhere_with_a_warning_said_once(env, google):
    linked_vault(env, google)
    sent = env.run("key", "set", "lab", "--from", SECRET, "--secretmanager-endpoint", ELSEWHERE)
    assert sent.code == 7, sent  # allowed: it went to a host that does not exist
    warning = "the Google access token goes to tokens.attacker.invalid, which is not Google's (secretmanager_endpoint from flag --secretmanager-endpoint)"
    assert sent.err.count(warning) == 1, sent.err
    # The same host stored in the vault is taken too, and listed by doctor.
    assert env.run("config", "set", "secretmanager_endpoint", ELSEWHERE).code == 0
    env.vars.pop("GEMVAULT_SECRETMANAGER_ENDPOINT")
    doctor = env.run("doctor")
    assert "secretmanager_endpoint is %s (from vault" % ELSEWHERE in doctor.out + doctor.err, doctor


def test_config_explain_shows_an_insecure_endpoint_and_only_its_users_refuse_it(env, google):
    fleet(env, google)
    env.vars["GEMVAULT_APIKEYS_ENDPOINT"] = "http://apikeys.example.com"
    explained = env.run("config", "explain", "--no-vault", passphrase=False)
    assert explained.code == 0, explained
    assert "http://apikeys.example.com" in explained.out and "plain http off loopback" in explained.err
    assert env.run("key", "which", passphrase=False).code == 0  # key which does not use apikeys_endpoint
