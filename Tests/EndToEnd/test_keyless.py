"""Keyless Google credentials (issue 44, Docs/keyless.md): Workload Identity Federation
(`external_account` files with file, url and executable subject tokens, STS, service-account
impersonation) and `impersonated_service_account` files, end to end against fake_google.py's
OIDC issuer, STS and IAM Credentials (fake_federation.py)."""
import json
import os
import stat

from conftest import auth_key
from test_rotation import PROJECT_ID, google, service_account_file  # noqa: F401 (fixture)

FLEET_KEY = auth_key("KeylessFleetKey")
SECRET = "gsm://projects/%s/secrets/gemini-key" % PROJECT_ID
POOL = "projects/123456867718/locations/global/workloadIdentityPools/ci-pool"
AUDIENCE = "//iam.googleapis.com/%s/providers/github" % POOL
CI_ACCOUNT = "gemini-ci@%s.iam.gserviceaccount.com" % PROJECT_ID
REPOSITORY = "example-org/gemini-app"


def federation(env, google, condition=None, grant=True):
    """A provider trusting the fake's issuer for REPOSITORY, CI_ACCOUNT minting for it, and a
    key kept in Secret Manager that the minted token reads."""
    google.control(providers={AUDIENCE: {"condition": condition or {"repository": REPOSITORY}}},
                   grants={CI_ACCOUNT: ["repository:" + REPOSITORY] if grant else []},
                   keys=[{"id": "fleet", "keyString": FLEET_KEY}], secrets=[{"id": "gemini-key", "versions": [FLEET_KEY]}])
    env.vars["GEMVAULT_ENDPOINT"] = google.url
    env.vars["GEMVAULT_SECRETMANAGER_ENDPOINT"] = google.url
    env.vars["GEMVAULT_KEY_SECRET"] = SECRET


def oidc(google, audience="https://iam.googleapis.com/" + POOL + "/providers/github", **claims):
    claims = dict({"sub": "repo:%s:ref:refs/heads/main" % REPOSITORY, "repository": REPOSITORY, "aud": audience}, **claims)
    return google.control(oidc=claims)["oidc"]


def external_account(env, google, source, impersonate=True, name="wif.json", **extra):
    config = dict({"type": "external_account", "audience": AUDIENCE, "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                   "token_url": google.url + "/v1/token", "credential_source": source}, **extra)
    if impersonate:
        config["service_account_impersonation_url"] = google.url + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % CI_ACCOUNT
    path = os.path.join(env.home, name)
    env.write_private(path, json.dumps(config))
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = path
    return path


def subject_file(env, token, name="subject.jwt", mode=0o600):
    path = os.path.join(env.home, name)
    env.write_private(path, token + "\n", mode)
    return path


def which(env, extra=None):
    result = env.run("key", "which", "--json", passphrase=False, env=extra)
    return result, (json.loads(result.out) if result.code == 0 else None)


def no_token_in(text, google):
    for token in google.state()["tokens"]:
        assert token not in text


def test_a_federated_file_token_is_exchanged_and_impersonated(env, google):
    federation(env, google)
    token = oidc(google)
    external_account(env, google, {"file": subject_file(env, token)})
    result, data = which(env)
    assert result.code == 0, result
    assert data["masked"] == FLEET_KEY[:4] + "…" + FLEET_KEY[-4:]
    state = google.state()
    assert state["sts_calls"][-1]["audience"] == AUDIENCE
    # STS grants only what generateAccessToken needs; the minted token carries the scopes asked.
    assert state["sts_calls"][-1]["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert state["iam_calls"][-1]["target"] == CI_ACCOUNT and state["iam_calls"][-1]["lifetime"] == 3600
    no_token_in(result.err + result.out, google)
    assert token not in result.err


def test_a_url_source_with_headers_and_a_json_field_is_githubs_shape(env, google):
    federation(env, google)
    google.control(set={"github_request_token": "gh-request-token-1", "github_claims": {"sub": "repo:%s:ref:refs/heads/main" % REPOSITORY,
                                                                                        "repository": REPOSITORY}})
    audience = "https://iam.googleapis.com/" + POOL + "/providers/github"
    external_account(env, google, {"url": google.url + "/oidc/gha?audience=" + audience, "headers": {"Authorization": "Bearer gh-request-token-1"},
                                   "format": {"type": "json", "subject_token_field_name": "value"}},
                     service_account_impersonation={"token_lifetime_seconds": 1200})
    result, data = which(env)
    assert result.code == 0, result
    assert google.state()["iam_calls"][-1]["lifetime"] == 1200
    assert "gh-request-token-1" not in result.err + result.out


def test_a_plain_http_url_off_this_machine_is_refused(env, google):
    federation(env, google)
    external_account(env, google, {"url": "http://token.example.com/oidc", "format": {"type": "text"}})
    result, _ = which(env)
    assert result.code != 0
    assert "refusing the subject token URL http://token.example.com/oidc" in result.err and google.state()["sts_calls"] == []


def test_a_subject_token_file_others_can_write_is_refused(env, google):
    federation(env, google)
    path = subject_file(env, oidc(google), mode=0o622)
    os.chmod(path, 0o622)
    external_account(env, google, {"file": path})
    result, _ = which(env)
    assert result.code != 0 and "refusing the subject token file" in result.err and "chmod" in result.err
    assert google.state()["sts_calls"] == []


def executable_script(env, token, name="issue-token"):
    """A program printing Google's executable response, and the environment it saw."""
    seen = os.path.join(env.home, "seen-env")
    path = os.path.join(env.home, name)
    response = json.dumps({"version": 1, "success": True, "token_type": "urn:ietf:params:oauth:token-type:jwt", "id_token": token,
                           "expiration_time": 4102444800})
    env.write_private(path, "#!/bin/sh\nenv > %s\nprintf '%%s' '%s'\n" % (seen, response), 0o700)
    return path, seen


def test_the_executable_source_runs_only_with_the_opt_in(env, google):
    federation(env, google)
    program, seen = executable_script(env, oidc(google))
    external_account(env, google, {"executable": {"command": program + " --quiet", "timeout_millis": 5000}})
    refused, _ = which(env)
    assert refused.code != 0 and "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1" in refused.err and not os.path.exists(seen)
    allowed, data = which(env, {"GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1"})
    assert allowed.code == 0, allowed
    with open(seen) as handle:
        variables = dict(line.split("=", 1) for line in handle.read().splitlines() if "=" in line)
    assert variables["GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE"] == AUDIENCE
    assert variables["GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL"] == CI_ACCOUNT
    assert variables["GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE"] == "urn:ietf:params:oauth:token-type:jwt"
    for token in google.state()["tokens"]:
        assert all(token not in value for value in variables.values())


def test_a_wrong_audience_is_refused_with_the_providers_fix(env, google):
    federation(env, google)
    external_account(env, google, {"file": subject_file(env, oidc(google, audience="https://example.com/other"))})
    result, _ = which(env)
    assert result.code == 6, result
    assert "does not match the expected audience" in result.err and AUDIENCE in result.err
    assert "allowed audiences" in result.err and "attribute condition" in result.err


def test_a_token_outside_the_attribute_condition_is_refused(env, google):
    federation(env, google)
    external_account(env, google, {"file": subject_file(env, oidc(google, repository="someone-else/fork"))})
    result, _ = which(env)
    assert result.code == 6 and "rejected by the attribute condition" in result.err


def test_a_missing_role_names_the_principal_the_permission_and_the_role(env, google):
    federation(env, google, grant=False)
    external_account(env, google, {"file": subject_file(env, oidc(google))})
    result, _ = which(env)
    assert result.code == 6, result
    assert CI_ACCOUNT in result.err and "iam.serviceAccounts.getAccessToken" in result.err
    assert "roles/iam.workloadIdentityUser" in result.err and AUDIENCE in result.err


def test_the_executable_source_without_impersonation_uses_the_federated_token(env, google):
    federation(env, google)
    google.control(grants={})
    external_account(env, google, {"file": subject_file(env, oidc(google))}, impersonate=False)
    result, _ = which(env)
    # The fake's Secret Manager takes any token with cloud-platform, a federated one too.
    assert result.code == 0, result
    assert google.state()["iam_calls"] == []


def test_an_impersonated_service_account_file_mints_through_its_delegates(env, google):
    federation(env, google)
    source_path = service_account_file(env, google, email="deployer@%s.iam.gserviceaccount.com" % PROJECT_ID)
    with open(source_path) as handle:
        source = json.load(handle)
    middle = "middle@%s.iam.gserviceaccount.com" % PROJECT_ID
    google.control(grants={middle: ["deployer@%s.iam.gserviceaccount.com" % PROJECT_ID], CI_ACCOUNT: [middle]})
    path = os.path.join(env.home, "impersonated.json")
    env.write_private(path, json.dumps({"type": "impersonated_service_account", "source_credentials": source, "delegates": [middle],
                                        "service_account_impersonation_url": google.url + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % CI_ACCOUNT}))
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = path
    result, _ = which(env)
    assert result.code == 0, result
    assert google.state()["iam_calls"][-1]["delegates"] == ["projects/-/serviceAccounts/" + middle]
    # Without the delegate's grant on the target, the chain breaks there.
    google.control(set={}, grants={}, providers={})
    path2 = os.path.join(env.home, "impersonated2.json")
    env.write_private(path2, json.dumps({"type": "impersonated_service_account", "source_credentials": source, "delegates": [],
                                         "service_account_impersonation_url": google.url + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % CI_ACCOUNT}))
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = path2
    refused, _ = which(env)
    assert refused.code == 6 and "roles/iam.serviceAccountTokenCreator" in refused.err and "deployer@" in refused.err


# -- auth = google: Gemini with a token, no key ---------------------------------------------

def keyless(env, google, lifetime=None):
    """A CI-like machine: the federation above, Gemini at the fake, no key anywhere."""
    federation(env, google)
    del env.vars["GEMVAULT_KEY_SECRET"]
    if lifetime:
        google.control(set={"token_lifetime": lifetime})
    return external_account(env, google, {"file": subject_file(env, oidc(google))})


def bearer_calls(google):
    return google.state().get("gemini_bearer_calls", [])


def test_ask_with_auth_google_sends_a_bearer_token_and_no_key(env, google):
    keyless(env, google)
    result = env.run("ask", "hello", "--model", "ok", "--auth", "google", passphrase=False)
    assert result.code == 0, result
    calls = bearer_calls(google)
    assert calls and calls[-1] == {"identity": CI_ACCOUNT, "user_project": None}
    state = google.state()
    # The minted token carries Gemini's scopes; STS was asked for cloud-platform only.
    assert state["iam_calls"][-1]["scope"] == ["https://www.googleapis.com/auth/cloud-platform",
                                               "https://www.googleapis.com/auth/generative-language.retriever"]
    no_token_in(result.err + result.out, google)
    for folder, _, files in os.walk(env.home):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                content = handle.read()
            for token in state["tokens"]:
                assert token.encode() not in content, name


def test_models_with_the_auth_setting_from_the_environment(env, google):
    keyless(env, google)
    result = env.run("models", "--json", env={"GEMVAULT_AUTH": "google"}, passphrase=False)
    assert result.code == 0, result
    assert bearer_calls(google)


def test_a_three_turn_chat_across_token_expiries_takes_a_fresh_token(env, google):
    # Every minted token lives one second: a client that kept one past its expiry is refused.
    keyless(env, google, lifetime=1)
    result = env.run("chat", "--model", "echo", "--auth", "google", input="one\ntwo\nthree\n", passphrase=False)
    assert result.code == 0, result
    assert "three" in result.out
    assert len(google.state()["iam_calls"]) >= 3


def test_exec_with_auth_google_refuses_and_names_the_way(env, google):
    keyless(env, google)
    result = env.run("exec", "--auth", "google", "--", "true", passphrase=False)
    assert result.code == 64, result
    assert "GOOGLE_APPLICATION_CREDENTIALS" in result.err and "no key" in result.err
    assert google.state()["sts_calls"] == []


def test_key_which_shows_the_chain_without_fetching_and_token_fetches(env, google):
    keyless(env, google)
    shown = env.run("key", "which", "--auth", "google", passphrase=False)
    assert shown.code == 0, shown
    assert "google: external_account (file %s → sts → %s)" % (os.path.join(env.home, "subject.jwt"), CI_ACCOUNT) in shown.out
    assert "google:" + CI_ACCOUNT in shown.out
    assert google.state()["sts_calls"] == []
    fetched = env.run("key", "which", "--auth", "google", "--token", passphrase=False)
    assert fetched.code == 0, fetched
    assert "token valid until " in fetched.out
    no_token_in(fetched.out + fetched.err, google)


def user_credentials(env, google, scope, quota_project=None):
    google.control(users=[{"refresh_token": "1//refresh-me", "client_id": "cid.apps.googleusercontent.com", "client_secret": "csecret",
                           "email": "dev@example.com", "scope": scope}])
    credential = {"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", "client_secret": "csecret", "refresh_token": "1//refresh-me",
                  "token_uri": google.url + "/token"}
    if quota_project:
        credential["quota_project_id"] = quota_project
    path = os.path.join(env.home, "adc.json")
    env.write_private(path, json.dumps(credential))
    env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = path
    env.vars["GEMVAULT_ENDPOINT"] = google.url


def test_a_user_login_without_geminis_scope_gets_the_scoped_login_hint(env, google):
    user_credentials(env, google, "https://www.googleapis.com/auth/cloud-platform", quota_project="my-project")
    result = env.run("ask", "hello", "--model", "ok", "--auth", "google", passphrase=False)
    assert result.code == 6, result
    assert "gcloud auth application-default login --scopes=https://www.googleapis.com/auth/cloud-platform,https://www.googleapis.com/auth/generative-language.retriever" in result.err


def test_a_users_token_carries_the_quota_project_in_googles_order(env, google):
    scopes = "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/generative-language.retriever"
    user_credentials(env, google, scopes)
    missing = env.run("ask", "hello", "--model", "ok", "--auth", "google", passphrase=False)
    assert missing.code == 6 and "quota project" in missing.err and "quota_project" in missing.err
    user_credentials(env, google, scopes, quota_project="from-file")
    assert env.run("ask", "hi", "--model", "ok", "--auth", "google", passphrase=False).code == 0
    assert bearer_calls(google)[-1]["user_project"] == "from-file"
    assert env.run("ask", "hi", "--model", "ok", "--auth", "google", env={"GOOGLE_CLOUD_QUOTA_PROJECT": "from-env"}, passphrase=False).code == 0
    assert bearer_calls(google)[-1]["user_project"] == "from-env"
    assert env.run("ask", "hi", "--model", "ok", "--auth", "google", env={"GOOGLE_CLOUD_QUOTA_PROJECT": "from-env", "GEMVAULT_QUOTA_PROJECT": "from-setting"},
                   passphrase=False).code == 0
    assert bearer_calls(google)[-1]["user_project"] == "from-setting"


def test_no_key_but_a_google_credential_offers_auth_google(env, google):
    keyless(env, google)
    result = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert result.code == 5, result
    assert "--auth google" in result.err


# -- CI jobs without a credential file ------------------------------------------------------

PROVIDER = POOL + "/providers/github"


def ci_job(env, google):
    federation(env, google)
    del env.vars["GEMVAULT_KEY_SECRET"]
    env.vars.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    env.vars.update({"GEMVAULT_AUTH": "google", "GEMVAULT_WIF_PROVIDER": PROVIDER, "GEMVAULT_SERVICE_ACCOUNT": CI_ACCOUNT,
                     "GEMVAULT_STS_ENDPOINT": google.url, "GEMVAULT_IAMCREDENTIALS_ENDPOINT": google.url})


def test_a_github_actions_job_asks_github_for_its_token_itself(env, google):
    ci_job(env, google)
    google.control(set={"github_request_token": "gh-job-request-token", "github_claims": {"sub": "repo:%s:ref:refs/heads/main" % REPOSITORY,
                                                                                          "repository": REPOSITORY}})
    env.vars.update({"ACTIONS_ID_TOKEN_REQUEST_URL": google.url + "/oidc/gha", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "gh-job-request-token"})
    shown = env.run("key", "which", passphrase=False)
    assert shown.code == 0 and "GitHub OIDC → sts → " + CI_ACCOUNT in shown.out, shown
    result = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert result.code == 0, result
    assert bearer_calls(google)[-1]["identity"] == CI_ACCOUNT
    assert google.state()["sts_calls"][-1]["audience"] == "//iam.googleapis.com/" + PROVIDER
    assert "gh-job-request-token" not in result.err + result.out


def test_a_job_without_id_token_permission_is_told_what_to_grant(env, google):
    ci_job(env, google)
    result = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert result.code != 0
    assert "id-token: write" in result.err


def test_a_gitlab_job_takes_its_token_from_the_named_variable(env, google):
    ci_job(env, google)
    env.vars.update({"GEMVAULT_OIDC_TOKEN_ENV": "GCP_ID_TOKEN", "GCP_ID_TOKEN": oidc(google)})
    result = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert result.code == 0, result
    assert bearer_calls(google)[-1]["identity"] == CI_ACCOUNT


def test_a_malformed_provider_name_says_how_to_print_the_right_one(env, google):
    ci_job(env, google)
    env.vars.update({"GEMVAULT_WIF_PROVIDER": "ci-pool/github", "GEMVAULT_OIDC_TOKEN_ENV": "GCP_ID_TOKEN", "GCP_ID_TOKEN": oidc(google)})
    result = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert result.code == 1 and "providers describe" in result.err


# -- tokens are secrets, kept only in the session -------------------------------------------

def test_an_unlocked_session_keeps_the_token_for_the_next_commands(env, google):
    keyless(env, google)
    env.init()
    assert env.run("unlock").code == 0
    try:
        first = env.run("ask", "one", "--model", "ok", "--auth", "google", passphrase=False)
        second = env.run("ask", "two", "--model", "ok", "--auth", "google", passphrase=False)
        assert first.code == 0 and second.code == 0, (first, second)
        state = google.state()
        # One exchange served both commands; the second took the session's token.
        assert len(state["sts_calls"]) == 1 and len(state["iam_calls"]) == 1
        assert len(bearer_calls(google)) == 2
        for folder, _, files in os.walk(env.root):
            for name in files:
                path = os.path.join(folder, name)
                # The fake's own log is not gemvault's.
                if os.path.isfile(path) and name != "google.log":
                    with open(path, "rb") as handle:
                        content = handle.read()
                    for token in state["tokens"]:
                        assert token.encode() not in content, path
    finally:
        env.run("lock", passphrase=False)


def test_a_keyless_command_brings_no_vault_key_from_the_session(env, google):
    """With --auth google the vault's key is never asked for: not brought into the process,
    its use not recorded."""
    keyless(env, google)
    env.init()
    assert env.run("key", "set", input=FLEET_KEY + "\n").code == 0
    assert env.run("unlock").code == 0
    try:
        result = env.run("ask", "one", "--model", "ok", "--auth", "google", passphrase=False)
        assert result.code == 0, result
    finally:
        env.run("lock", passphrase=False)
    # The session writes the uses it recorded when it locks.
    listed = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert listed and all("last_used" in key and not key["last_used"] for key in listed), listed


def test_a_token_near_its_expiry_is_not_kept_in_the_session(env, google):
    # Tokens of 200 s are inside the five-minute margin: each command fetches its own.
    keyless(env, google, lifetime=200)
    env.init()
    assert env.run("unlock").code == 0
    try:
        assert env.run("ask", "one", "--model", "ok", "--auth", "google", passphrase=False).code == 0
        assert env.run("ask", "two", "--model", "ok", "--auth", "google", passphrase=False).code == 0
        assert len(google.state()["iam_calls"]) == 2
    finally:
        env.run("lock", passphrase=False)


def test_the_ledger_files_keyless_usage_under_the_principal(env, google):
    keyless(env, google)
    env.init()
    assert env.run("unlock").code == 0
    try:
        assert env.run("ask", "one", "--model", "ok", "--auth", "google", passphrase=False).code == 0
        usage = env.run("key", "usage", passphrase=False)
        assert usage.code == 0, usage
        assert "google:" + CI_ACCOUNT in usage.out
    finally:
        env.run("lock", passphrase=False)


def test_key_budget_takes_the_identitys_name_and_the_guard_applies_it(env, google):
    keyless(env, google)
    env.init()
    assert env.run("unlock").code == 0
    try:
        budget = env.run("key", "budget", "google:" + CI_ACCOUNT, "--daily", "0", passphrase=False)
        assert budget.code == 0, budget
        assert "google:%s: daily" % CI_ACCOUNT in budget.out
        refused = env.run("ask", "one", "--model", "ok", "--auth", "google", passphrase=False)
        assert refused.code == 6 and "budget" in refused.err, refused
        assert bearer_calls(google) == []
        assert env.run("key", "budget", "google:" + CI_ACCOUNT, "--daily", "none", passphrase=False).code == 0
        assert env.run("ask", "one", "--model", "ok", "--auth", "google", passphrase=False).code == 0
    finally:
        env.run("lock", passphrase=False)


def test_key_rotate_create_takes_its_token_through_workload_identity_federation(env, google):
    """Rotation asks the same chain: a rotator in CI needs no service-account key file."""
    from test_rotation import check_rotated, rotate, setup
    setup(env, google, credential="none")
    google.control(providers={AUDIENCE: {"condition": {"repository": REPOSITORY}}}, grants={CI_ACCOUNT: ["repository:" + REPOSITORY]})
    external_account(env, google, {"file": subject_file(env, oidc(google))})
    result = rotate(env, "--json")
    check_rotated(env, google, result)
    assert google.state()["iam_calls"][-1]["target"] == CI_ACCOUNT
    assert "external_account" in result.err


def test_a_refresh_refused_mid_chat_is_reported_and_the_chat_goes_on(env, google):
    keyless(env, google, lifetime=1)
    google.control(set={"iam_allow_calls": 1})
    result = env.run("chat", "--model", "echo", "--auth", "google", input="one\ntwo\n/model\n", passphrase=False)
    assert "last=one" in result.out, result
    # After the refusal the chat still takes commands and ends as a chat does at end of input.
    assert "model: echo" in result.err.split("IAM Credentials refused", 1)[1], result.err
    assert result.code == 0, result
    assert "roles/iam.workloadIdentityUser" in result.err and CI_ACCOUNT in result.err
    assert "Traceback" not in result.err and "GoogleError(" not in result.err
    no_token_in(result.out + result.err, google)


def test_auth_google_kept_in_the_vault_counts_through_the_session(env, google):
    keyless(env, google)
    env.init()
    assert env.run("config", "set", "auth", "google").code == 0
    assert env.run("unlock").code == 0
    try:
        result = env.run("ask", "hello", "--model", "ok", passphrase=False)
        assert result.code == 0, result
        assert bearer_calls(google)
        assert env.run("ask", "hello", "--model", "ok", "--auth", "key", passphrase=False).code == 5
    finally:
        env.run("lock", passphrase=False)


def test_the_metadata_server_token_works_when_it_carries_geminis_scope(env, google):
    env.vars["GEMVAULT_ENDPOINT"] = google.url
    env.vars["GCE_METADATA_HOST"] = google.url[len("http://"):]
    env.vars["HOME"] = env.home
    narrow = env.run("ask", "hello", "--model", "ok", "--auth", "google", passphrase=False)
    assert narrow.code == 6 and "generative-language" in narrow.err, narrow
    google.control(set={"metadata_token_scope": "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/generative-language.retriever"})
    result = env.run("ask", "hello", "--model", "ok", "--auth", "google", passphrase=False)
    assert result.code == 0, result
    assert bearer_calls(google)[-1]["identity"].startswith("vm@")


def github_job(env, google):
    """A GitHub Actions job's environment: its token request URL and bearer, the provider and
    the service account named by settings, the fake's STS and IAM Credentials; no file."""
    google.control(providers={AUDIENCE: {"condition": {"repository": REPOSITORY}}}, grants={CI_ACCOUNT: ["repository:" + REPOSITORY]},
                   set={"github_request_token": "gh-job-request-token",
                        "github_claims": {"sub": "repo:%s:ref:refs/heads/main" % REPOSITORY, "repository": REPOSITORY}})
    env.vars.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    env.vars.update({"GEMVAULT_WIF_PROVIDER": PROVIDER, "GEMVAULT_SERVICE_ACCOUNT": CI_ACCOUNT,
                     "GEMVAULT_STS_ENDPOINT": google.url, "GEMVAULT_IAMCREDENTIALS_ENDPOINT": google.url,
                     "ACTIONS_ID_TOKEN_REQUEST_URL": google.url + "/oidc/gha", "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "gh-job-request-token"})


def test_key_rotate_create_in_a_github_job_needs_no_credential_file(env, google):
    """The rotation's credentials come from the same settings as Gemini's: the job's own OIDC
    token, exchanged at the STS endpoint the settings name and impersonated at theirs."""
    from test_rotation import check_rotated, rotate, setup
    setup(env, google, credential="none")
    github_job(env, google)
    result = rotate(env, "--json")
    check_rotated(env, google, result)
    assert google.state()["sts_calls"][-1]["audience"] == "//iam.googleapis.com/" + PROVIDER
    assert google.state()["iam_calls"][-1]["target"] == CI_ACCOUNT
    assert "gh-job-request-token" not in result.err + result.out


def test_key_secret_in_a_github_job_needs_no_credential_file(env, google):
    """`key_secret` fetches the key from Secret Manager with the job's federated identity."""
    federation(env, google)
    github_job(env, google)
    result = env.run("ask", "hello", "--model", "ok", passphrase=False)
    assert result.code == 0, result
    assert google.state()["iam_calls"][-1]["target"] == CI_ACCOUNT
    assert google.state()["sts_calls"][-1]["audience"] == "//iam.googleapis.com/" + PROVIDER
