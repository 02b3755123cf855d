"""The third review's rotation findings (issue 25, items 1-10), each against fake_google.py:
overlapping rotations, keys gone for good, a create whose answer was lost, a run killed between
its vault write and its delete, keys restricted to some methods, the organisation policy, the
age Google counts, the session path, and the smaller ones."""
import json
import os
import signal
import subprocess
import time

import jsonschema
import pytest

from conftest import BIN, ROOT, auth_key, wait_until
from test_rotation import (ACCOUNT, OLD_KEY, OLD_NAME, PROJECT_ID, PROJECT_NUMBER, RESTRICTIONS, check_rotated, google,  # noqa: F401
                           rotate, setup, vault_keys)

ROTATE = ["key", "rotate", "--create", "--verify-timeout", "60"]


def start(env, *args, session=False):
    argv = [BIN] + list(args) + ([] if session else ["--passphrase-file", env.passfile])
    proc = subprocess.Popen(argv, env=dict(env.vars), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.set_blocking(proc.stderr.fileno(), False)
    proc.seen = b""
    return proc


def wait_for(proc, text, limit=60):
    deadline = time.time() + limit
    while text.encode() not in proc.seen and time.time() < deadline:
        proc.seen += proc.stderr.read() or b""
        if proc.poll() is not None:
            proc.seen += proc.stderr.read() or b""
            break
        time.sleep(0.02)
    assert text.encode() in proc.seen, (text, proc.seen)


def finish(proc):
    out, err = proc.communicate(timeout=180)
    return proc.returncode, out.decode(), proc.seen.decode() + (err or b"").decode()


@pytest.mark.slow
@pytest.mark.parametrize("count,session", [(2, False), (3, False), (2, True), (3, True)])
def test_overlapping_rotations_never_delete_each_others_keys(env, google, count, session):
    """Item 1: rotations of one key started while another runs wait for it (one at a time,
    across processes, with or without a session); each deletes only the key it replaced, and
    the project ends with exactly one live key: the vault's, which works."""
    setup(env, google, speedup=None)  # the first rotation must still be checking its key when the others start
    if session:
        assert env.run("unlock").code == 0
    try:
        # The new key is refused for 3 s: the first rotation is still checking it when the others start.
        google.control(set={"propagation": 3})
        first = start(env, *ROTATE, session=session)
        wait_for(first, "creating gemvault-")
        others = []
        for _ in range(count - 1):
            env.advance_clock()  # key ids carry the second
            others.append(start(env, *ROTATE, session=session))
        for other in others:
            wait_for(other, "another rotation of 'default' is running")
        results = [finish(proc) for proc in [first] + others]
    finally:
        if session:
            env.run("lock", passphrase=False)
    for code, _, err in results:
        assert code == 0, err
        assert "never stored" not in err and "deleting it" not in err, err
    keys, records = vault_keys(env)
    current_name = records["default"][0][0]
    assert set(google.live_keys()) == {current_name}
    assert google.key(current_name)["keyString"] == keys["default"]
    # Every key a rotation stored was replaced, and deleted, by the rotation after it.
    stored = [line.split("(")[1].split(")")[0] for _, _, err in results for line in err.splitlines() if "is now AQ." in line]
    assert len(stored) == count and stored[-1] == current_name or current_name in stored
    assert env.run("models").code == 0


def test_a_young_key_made_for_this_vault_elsewhere_is_left_alone_an_old_one_deleted(env, google):
    """Item 1: a key annotated for this vault's key that the vault never stored and no journal
    names is another machine's rotation while it may still run (younger than 2 hours)."""
    setup(env, google)
    first_name, _ = check_rotated(env, google, rotate(env))
    tag = google.key(first_name)["annotations"]
    google.control(keys=[{"id": "gemvault-default-elsewhere-young", "keyString": auth_key("young"), "serviceAccountEmail": ACCOUNT,
                          "annotations": tag, "age": 600},
                         {"id": "gemvault-default-elsewhere-old", "keyString": auth_key("oldleft"), "serviceAccountEmail": ACCOUNT,
                          "annotations": tag, "age": 3 * 3600}])
    young = "projects/%s/locations/global/keys/gemvault-default-elsewhere-young" % PROJECT_NUMBER
    old = "projects/%s/locations/global/keys/gemvault-default-elsewhere-old" % PROJECT_NUMBER
    result = rotate(env)
    assert result.code == 0, result
    assert young in google.live_keys() and "may still be running" in result.err and "gcloud services api-keys delete gemvault-default-elsewhere-young" in result.err
    assert google.key(old)["deleteTime"] and "made by an interrupted rotation" in result.err


def test_revoke_goes_on_past_earlier_keys_gone_for_good(env, google):
    """Item 2: an earlier Google key deleted more than 30 days ago answers 404: already gone."""
    setup(env, google)
    first_name, _ = check_rotated(env, google, rotate(env))
    google.control(purge=[OLD_NAME])
    result = env.run("key", "rm", "default", "--revoke")
    assert result.code == 0, result
    assert google.key(first_name)["deleteTime"] and vault_keys(env)[0] == {}
    assert "gone from Google" in result.err and "deleted %s" % OLD_NAME not in result.err


def test_a_create_whose_answer_was_lost_is_looked_up_not_repeated(env, google):
    """Item 3: Google made the key and the connection dropped before the answer: gemvault
    asks for the id instead of creating again, and goes on with the key Google made."""
    setup(env, google)
    google.control(set={"lose": {"create": "once"}})
    result = rotate(env)
    check_rotated(env, google, result)
    creates = [c for c in google.calls() if c[0] == "POST" and c[1].endswith("/keys")]
    assert len(creates) == 1, creates
    new_name = vault_keys(env)[1]["default"][0][0]
    assert ["GET", "/v2/" + new_name, None] in [[c[0], c[1], None] for c in google.calls()]
    assert set(google.live_keys()) == {new_name}


def test_a_create_still_pending_names_the_key_and_real_commands(env, google):
    """Item 3: an operation not done after the wait: the message names the key, gcloud
    commands that exist, and the next rotation deletes it if Google made it after all."""
    setup(env, google)
    google.control(set={"op_polls": 10_000})
    before = env.vault_bytes()
    # The wait is two minutes of gemvault's waiting clock, which runs WAIT_SPEEDUP times faster
    # here: the same polls and message in seconds. The fake's operation never finishes, and the
    # test kills nothing: it waits for gemvault to give up.
    proc = start(env, *ROTATE)
    wait_for(proc, "creating gemvault-")
    code, _, err = finish(proc)
    assert code == 7, err
    key_id = err.split("creating ")[1].split(" ")[0]
    assert "gcloud services api-keys describe %s --project %s" % (key_id, PROJECT_ID) in err or \
           "gcloud services api-keys describe %s --project %s" % (key_id, PROJECT_NUMBER) in err, err
    assert "gcloud services api-keys delete %s" % key_id in err
    assert "operations describe" not in err and "was not done after 120 s" in err, err
    assert env.vault_bytes() == before
    # Google made it after all; the next rotation deletes it.
    made = "projects/%s/locations/global/keys/%s" % (PROJECT_NUMBER, key_id)
    assert made in google.live_keys()
    google.control(set={"op_polls": 1})
    following = rotate(env)
    assert following.code == 0, following
    assert "was interrupted before it stored its new key: deleted that key, " in following.err
    assert google.key(made)["deleteTime"]


def kill_between_write_and_delete(env, google, *args):
    google.control(set={"delay": {"delete": 30}})
    deletes = len([call for call in google.calls() if call[0] == "DELETE"])
    proc = start(env, *ROTATE, *args)
    wait_for(proc, "which Gemini accepted")
    # Past the vault write: the old key's delete has reached Google (and hangs there), or with
    # --keep-old, which deletes nothing, the run has ended.
    wait_until(lambda: proc.poll() is not None or len([call for call in google.calls() if call[0] == "DELETE"]) > deletes,
               "the old key's delete")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    google.control(set={"delay": {}})
    keys, records = vault_keys(env)
    new_name = records["default"][0][0]
    assert google.key(new_name)["keyString"] == keys["default"] and "deleteTime" not in google.key(OLD_NAME)
    return new_name


@pytest.mark.parametrize("following", ["create", "undo"])
def test_a_run_killed_after_its_write_is_finished_by_the_next(env, google, following):
    """Item 4: killed after the vault holds the new key and before the old one is deleted:
    the next --create (or --undo) deletes the key the history names as replaced, and says so."""
    setup(env, google)
    new_name = kill_between_write_and_delete(env, google)
    env.advance_clock()  # key ids carry the second
    if following == "create":
        result = rotate(env)
        assert result.code == 0, result
        assert "was interrupted after the vault was written: finished it by deleting %s" % OLD_NAME in result.err
        assert google.key(OLD_NAME)["deleteTime"]
    else:
        result = env.run("key", "rotate", "--undo")
        assert result.code == 0, result
        assert "finished it by deleting %s" % OLD_NAME in result.err
        # Then the undo itself: the old key back, the newer one deleted.
        assert "deleteTime" not in google.key(OLD_NAME) and google.key(new_name)["deleteTime"]
        assert vault_keys(env)[0]["default"] == OLD_KEY


def test_keep_old_is_not_finished_by_the_next_run(env, google):
    """Item 4: --keep-old kept the old key on purpose: a kill after the write leaves it kept."""
    setup(env, google)
    kill_between_write_and_delete(env, google, "--keep-old")
    result = rotate(env, "--keep-old")
    assert result.code == 0, result
    assert "finished it" not in result.err and "deleteTime" not in google.key(OLD_NAME)


@pytest.mark.parametrize("methods,probe", [
    (["google.ai.generativelanguage.v1beta.GenerativeService.GenerateContent",
      "google.ai.generativelanguage.v1beta.GenerativeService.StreamGenerateContent"], ":generateContent"),
    (["GenerateContent", "CountTokens"], ":countTokens"),
    (["google.ai.generativelanguage.v1beta.GenerativeService.*"], ":countTokens"),
])
def test_a_key_restricted_to_some_methods_is_checked_with_one_it_allows(env, google, methods, probe):
    """Item 5: a key that may not list the models is checked with a call it may make."""
    restrictions = {"apiTargets": [{"service": "generativelanguage.googleapis.com", "methods": methods}]}
    setup(env, google, restrictions=restrictions)
    result = rotate(env)
    assert result.code == 0, result
    keys, records = vault_keys(env)
    assert google.key(records["default"][0][0])["restrictions"] == restrictions
    assert any(c[1].endswith(probe) for c in google.calls() + [[None, r] for r in paths(google)]), paths(google)
    assert google.key(OLD_NAME)["deleteTime"]


def paths(google):
    with open(google.log) as handle:
        return [json.loads(line)["path"] for line in handle if line.strip()]


def test_a_key_for_another_api_gets_advice_before_anything_is_made(env, google):
    """Item 5: a key restricted to another API cannot be checked against Gemini at all."""
    setup(env, google, restrictions={"apiTargets": [{"service": "aiplatform.googleapis.com"}]})
    before = env.vault_bytes()
    result = rotate(env)
    assert result.code == 6 and "aiplatform.googleapis.com" in result.err and "generativelanguage.googleapis.com" in result.err, result
    assert env.vault_bytes() == before and set(google.live_keys()) == {OLD_NAME}
    assert not any(c[0] == "POST" for c in google.calls())


def test_the_organisation_policy_refusal_gets_its_own_hint(env, google):
    """Item 6: bound keys forbidden, refused on the create call itself (400 FAILED_PRECONDITION)."""
    setup(env, google)
    google.control(set={"bound_keys_forbidden": "http"})
    result = rotate(env)
    assert result.code == 6, result
    assert "iam.managed.disableServiceAccountApiKeyCreation" in result.err and "organisation" in result.err
    assert "changed at Google meanwhile" not in result.err


def test_if_older_than_counts_from_googles_create_time(env, google):
    """Item 7: a key rotated into the vault today but made at Google 100 days ago is 100 days old."""
    setup(env, google)
    first_name, _ = check_rotated(env, google, rotate(env))
    # The key the vault holds was made at Google 100 days ago (as if another tool had made it).
    state = google.state()["keys"][first_name]
    google.control(keys=[{"id": first_name.split("/")[-1], "keyString": state["keyString"], "serviceAccountEmail": ACCOUNT,
                          "restrictions": RESTRICTIONS, "age": 100 * 86400}])
    result = rotate(env, "--if-older-than", "90", "--json")
    assert result.code == 0, result
    assert json.loads(result.out)["action"] == "created" and json.loads(result.out)["age_days"] == 100
    # A young key's skip follows the schema: no new key.
    skipped = rotate(env, "--if-older-than", "90", "--json")
    report = json.loads(skipped.out)
    with open(os.path.join(ROOT, "Docs", "schemas", "key-rotate.schema.json")) as handle:
        jsonschema.Draft202012Validator(json.load(handle)).validate(report)
    assert report["action"] == "skipped" and report["new_key"] is None and report["old_key"] == vault_keys(env)[1]["default"][0][0]
    assert "created at Google on" in skipped.err
    which = env.run("key", "which", "--google")
    assert "createTime" in which.out, which


@pytest.mark.slow
def test_through_a_session_the_recorded_google_name_is_used(env, google):
    """Item 9: through the session, the second rotation, --undo and rm --revoke use the Google
    name the vault records: no lookup (no key string in a URL)."""
    setup(env, google)
    assert env.run("unlock").code == 0
    try:
        first = env.run(*ROTATE, passphrase=False)
        assert first.code == 0, first
        lookups = [c for c in google.calls() if c[1] == "/v2/keys:lookupKey"]
        env.advance_clock()  # key ids carry the second
        second = env.run(*ROTATE, passphrase=False)
        assert second.code == 0, second
        undo = env.run("key", "rotate", "--undo", passphrase=False)
        assert undo.code == 0, undo
        revoke = env.run("key", "rm", "default", "--revoke", passphrase=False)
        assert revoke.code == 0, revoke
    finally:
        env.run("lock", passphrase=False)
    assert [c for c in google.calls() if c[1] == "/v2/keys:lookupKey"] == lookups and len(lookups) == 1
    assert google.live_keys() == {}


def test_a_second_rotation_with_user_credentials_bills_its_first_call(env, google):
    """Item 10: every call of a second rotation with a user's token carries x-goog-user-project."""
    setup(env, google, "token-command")
    check_rotated(env, google, rotate(env))
    assert env.run("config", "unset", "quota_project").code == 0
    calls_before = len(google.calls())
    second = rotate(env)
    assert second.code == 0, second
    assert all(call[2] == PROJECT_NUMBER or call[2] == PROJECT_ID for call in google.calls()[calls_before:]), google.calls()[calls_before:]


def test_an_insecure_apikeys_endpoint_only_stops_the_commands_that_use_it(env, google):
    """Item 10: a plain-http apikeys_endpoint off loopback refuses rotation, not chat or key list;
    doctor reports it."""
    setup(env, google)
    env.vars["GEMVAULT_APIKEYS_ENDPOINT"] = "http://apikeys.example.com"
    assert env.run("key", "list").code == 0
    assert env.run("models").code == 0
    assert rotate(env).code == 64
    doctor = env.run("doctor")
    assert "apikeys_endpoint" in doctor.out + doctor.err, doctor


def test_the_service_disabled_hint_names_the_project(env, google):
    setup(env, google)
    google.control(project={"apikeys_enabled": False})
    result = rotate(env)
    assert result.code == 6, result
    assert "gcloud services enable apikeys.googleapis.com --project %s" % PROJECT_ID in result.err


def test_an_old_key_already_deleted_is_not_said_to_be_deleted(env, google):
    setup(env, google)
    first_name, _ = check_rotated(env, google, rotate(env))
    # Someone deleted the current key's predecessor... and the current one is deleted by hand
    # after a rotation with --keep-old:
    kept = rotate(env, "--keep-old")
    assert kept.code == 0, kept
    # The kept key is deleted by hand at Google; rm --revoke then says it was already deleted.
    from test_rotation import api_keys_call
    api_keys_call(google, "DELETE", "/v2/" + first_name)
    result = env.run("key", "rm", "default", "--revoke")
    assert result.code == 0, result
    assert "%s was already deleted at Google" % first_name in result.err
    assert "deleted %s at Google" % first_name not in result.err
