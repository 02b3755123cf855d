"""Rotation through Secret Manager (Docs/fleet.md, "Rotation through Secret Manager"): a key
linked to a secret is rotated by adding the new key as a version, checking it, storing it, and
retiring the previous version and the old key after a grace period, against fake_google.py's
API Keys service, Secret Manager and Gemini. Each machine of the fleet is a HOME of its own."""
import base64
import hashlib
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN, Env, auth_key
from test_rotation import ACCOUNT, PROJECT_ID, PROJECT_NUMBER, RESTRICTIONS, google, service_account_file, setup, speed_up_waits, vault_keys  # noqa: F401 (fixture)

FLEET_KEY = auth_key("FleetRotationFirst")
SECRET = "gsm://projects/%s/secrets/gemini-key" % PROJECT_ID
SECRET_NAME = "projects/%s/secrets/gemini-key" % PROJECT_NUMBER
FLEET_KEY_NAME = "projects/%s/locations/global/keys/fleet-key" % PROJECT_NUMBER
DAY = 86400


def secret_exists(google, age=100 * DAY, **secret):
    """The project's key, bound and restricted, as version 1 of the secret, `age` seconds old."""
    google.control(keys=[{"id": "fleet-key", "keyString": FLEET_KEY, "serviceAccountEmail": ACCOUNT, "restrictions": RESTRICTIONS}],
                   secrets=[dict({"id": "gemini-key", "versions": [FLEET_KEY], "ages": {"1": age}}, **secret)])


def machine(env, google, ttl="0", credential=None):
    """A fleet member: its own vault with 'lab' linked to the secret, the fake's endpoints, and
    the waits for Google sped up. Members share the service account (`credential`, a file)."""
    if credential is None:
        env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = service_account_file(env, google)
    else:
        with open(credential) as handle:
            env.write_private(os.path.join(env.home, "sa.json"), handle.read())
        env.vars["GOOGLE_APPLICATION_CREDENTIALS"] = os.path.join(env.home, "sa.json")
    for variable in ("GEMVAULT_ENDPOINT", "GEMVAULT_APIKEYS_ENDPOINT", "GEMVAULT_SECRETMANAGER_ENDPOINT"):
        env.vars[variable] = google.url
    env.init()
    linked = env.run("key", "set", "lab", "--from", SECRET)
    assert linked.code == 0, linked
    assert env.run("config", "set", "key", "lab").code == 0
    assert env.run("config", "set", "secret_cache_ttl", ttl).code == 0
    speed_up_waits(env, google)
    return env


def other_machine(tmp_path, google, name, ttl="0"):
    return machine(Env(tmp_path / name), google, ttl, credential=os.path.join(str(tmp_path), "home", "sa.json"))


def versions(google):
    """The secret's versions as (value, state), version 1 first."""
    return [(base64.b64decode(v["data"]).decode(), v["state"]) for v in google.state()["secrets"][SECRET_NAME]["versions"]]


def annotation(google):
    return google.state()["secrets"][SECRET_NAME].get("annotations", {}).get("gemvault-rotation", "")


def vault_state(env):
    """The vault's value of 'lab' and its link, read with the PyNaCl reader."""
    links = {}
    keys, _ = vault_keys(env, links=links)
    return keys["lab"], links["lab"]


def live_key_strings(google):
    return {key["keyString"] for key in google.state()["keys"].values() if key["deleted_at"] is None}


def rotate(env, *args, **options):
    env.advance_clock()  # key ids carry the second
    return env.run("key", "rotate", "--create", "lab", "--verify-timeout", "30", *args, **options)


def test_a_linked_key_is_rotated_through_its_secret_and_the_fleet_follows_within_the_grace(env, google, tmp_path):
    secret_exists(google)
    rotator = machine(env, google)
    reader = other_machine(tmp_path, google, "reader", ttl="60")
    assert reader.run("key", "get", "lab").out == FLEET_KEY + "\n"
    result = rotate(rotator, "--grace", "30s", "--json")
    assert result.code == 0, result
    # Each step on stderr, in order.
    steps = ["claimed the rotation of", "creating gemvault-lab-", "adding the new key to", "added version 2 to",
             "key 'lab' is now", "waiting 30s", "disabled version 1 of", "deleted the old key " + FLEET_KEY_NAME, "finished the rotation of 'lab' to version 2"]
    positions = [result.err.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), result.err
    report = json.loads(result.out)
    assert report["action"] == "created" and report["secret_version"] == 2 and report["previous_version"] == 1
    assert report["old_key"] == FLEET_KEY_NAME and report["old_key_deleted"] and report["secret"] == "projects/%s/secrets/gemini-key" % PROJECT_ID
    # The secret: version 1 disabled, version 2 the new key; the claim records version 2.
    (first, first_state), (second, second_state) = versions(google)
    assert first == FLEET_KEY and first_state == "DISABLED" and second_state == "ENABLED" and second.startswith("AQ.")
    assert annotation(google).startswith("rotated version=2 ")
    value, link = vault_state(rotator)
    assert value == second and link[1] == 2 and link[3][0] == 1 and link[3][2] == 0 and live_key_strings(google) == {second}
    assert FLEET_KEY not in result.err + result.out and second not in result.err + result.out
    # A reader within its secret_cache_ttl keeps its copy; past it, it takes version 2.
    assert reader.run("key", "get", "lab").out == FLEET_KEY + "\n"
    reader.advance_clock(61)
    followed = reader.run("ask", "hello", "--model", "ok")
    assert followed.code == 0, followed
    assert "took version 2 of 'lab'" in followed.err and reader.run("key", "get", "lab").out == second + "\n"


def test_with_no_wait_the_finish_is_recorded_and_the_next_rotate_completes_it_through_a_session(env, google):
    secret_exists(google)
    machine(env, google)
    result = rotate(env, "--no-wait", "--grace", "10m")
    assert result.code == 0, result
    assert "the finish is recorded in the vault" in result.err and "disables version 1" in result.err
    # During the grace both keys work and both versions are enabled; the vault records the finish.
    (_, first_state), (second, _) = versions(google)
    assert first_state == "ENABLED" and live_key_strings(google) == {FLEET_KEY, second}
    _, link = vault_state(env)
    assert link[3][0] == 1 and link[3][1] == FLEET_KEY_NAME and link[3][2] > 0
    assert "rotation finishes after" in env.run("key", "list").out
    assert env.run("unlock").code == 0
    try:
        listed = json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"][0]
        assert listed["rotation_finish_after"].endswith("Z") and listed["secret_manager"] == SECRET + " (version 2)"
        early = env.run("key", "rotate", "--finish", "lab", "--no-wait", passphrase=False)
        assert early.code == 0 and "runs until" in early.err and versions(google)[0][1] == "ENABLED", early
        again = env.run("key", "rotate", "--create", "lab", passphrase=False)
        assert again.code == 1 and "grace period runs until" in again.err and "--finish" in again.err, again
        # A timer's run past the grace finishes it, and does nothing else while the key is young.
        env.advance_clock(601)
        timer = env.run("key", "rotate", "--create", "lab", "--if-older-than", "30", passphrase=False)
        assert timer.code == 0, timer
        assert "disabled version 1 of" in timer.err and "deleted the old key" in timer.err and "nothing to do" in timer.err
        assert len(versions(google)) == 2 and versions(google)[0][1] == "DISABLED" and live_key_strings(google) == {second}
        assert "rotation_finish_after" not in json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"][0]
        nothing = env.run("key", "rotate", "--finish", "lab", passphrase=False)
        assert nothing.code == 0 and "no rotation of 'lab' waits" in nothing.err
    finally:
        env.run("lock", passphrase=False)
    _, link = vault_state(env)
    assert link[3][2] == 0


def test_undo_brings_the_previous_key_back_to_every_machine(env, google, tmp_path):
    secret_exists(google)
    machine(env, google)
    reader = other_machine(tmp_path, google, "reader")
    assert rotate(env, "--grace", "0s").code == 0
    second = versions(google)[1][0]
    assert reader.run("key", "get", "lab").out == second + "\n"
    undone = env.run("key", "rotate", "--undo", "lab", "--grace", "30s", "--json")
    assert undone.code == 0, undone
    report = json.loads(undone.out)
    assert report["action"] == "undone" and report["secret_version"] == 3 and report["new_key"] == FLEET_KEY_NAME and report["old_key_deleted"]
    # The previous key undeleted and added again as the newest version (a disabled newest
    # version would make `latest` fail for every machine); after the grace the newer version
    # is disabled and its key deleted. One enabled version: the vault's.
    assert versions(google) == [(FLEET_KEY, "DISABLED"), (second, "DISABLED"), (FLEET_KEY, "ENABLED")]
    assert live_key_strings(google) == {FLEET_KEY}
    steps = ["undeleting " + FLEET_KEY_NAME, "again as version 3", "key 'lab' is back", "waiting 30s", "disabled version 2", "deleted the old key"]
    positions = [undone.err.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), undone.err
    value, link = vault_state(env)
    assert value == FLEET_KEY and link[1] == 3 and link[3][0] == 2 and link[3][2] == 0
    assert reader.run("key", "get", "lab").out == FLEET_KEY + "\n"
    # An undo of the undo brings version 2's key back the same way.
    again = env.run("key", "rotate", "--undo", "lab", "--grace", "0s")
    assert again.code == 0, again
    assert versions(google)[-1] == (second, "ENABLED") and live_key_strings(google) == {second}


def test_a_finish_never_deletes_the_key_latest_serves(env, google):
    """Someone adds the old key back during the grace: the finish refuses to delete it."""
    secret_exists(google)
    machine(env, google)
    assert rotate(env, "--no-wait", "--grace", "10m").code == 0
    google.control(secrets=[{"id": "gemini-key", "versions": [FLEET_KEY]}])
    env.advance_clock(601)
    refused = env.run("key", "rotate", "--finish", "lab")
    assert refused.code == 1 and "is what version 3" in refused.err and "not deleted" in refused.err, refused
    assert FLEET_KEY in live_key_strings(google)
    assert vault_state(env)[1][3][2] > 0  # still recorded


def test_a_key_gemini_rejects_is_never_added_to_the_secret(env, google):
    """The check comes before addVersion: a reader can never take a key Gemini still rejects."""
    secret_exists(google)
    machine(env, google)
    google.control(set={"propagation": 3600})  # Google never accepts the new key in time
    failed = rotate(env, "--verify-timeout", "2s", "--grace", "0s")
    assert failed.code in (6, 7), failed
    assert "adding the new key" not in failed.err and "deleted the new key" in failed.err, failed.err
    assert versions(google) == [(FLEET_KEY, "ENABLED")] and live_key_strings(google) == {FLEET_KEY}
    assert not [call for call in google.state()["sm_calls"] if call[1].endswith(":addVersion")]
    value, link = vault_state(env)
    assert value == FLEET_KEY and link[1] == 1 and link[3] is None
    assert "claimed" not in annotation(google)


def test_a_failure_after_the_version_was_added_takes_it_back_and_latest_keeps_working(env, google):
    """The answer to addVersion is lost after Google added it: the newest version holds the
    run's key, so it is withdrawn (the vault's key added again first) and the key deleted."""
    secret_exists(google)
    machine(env, google)
    google.control(set={"lose": {"addVersion": "once"}})
    failed = rotate(env, "--grace", "0s")
    assert failed.code == 7, failed
    assert "disabled version 2 of" in failed.err and "again as version 3" in failed.err and "deleted the new key" in failed.err, failed.err
    assert versions(google)[1][1] == "DISABLED" and versions(google)[2] == (FLEET_KEY, "ENABLED")
    assert live_key_strings(google) == {FLEET_KEY}
    value, link = vault_state(env)
    assert value == FLEET_KEY and link[1] == 1 and link[3] is None
    assert "claimed" not in annotation(google)
    # The next rotation retires the old key everywhere: version 1 and its copy, version 3.
    env.advance_clock()
    assert rotate(env, "--grace", "0s").code == 0
    assert [state for _, state in versions(google)] == ["DISABLED", "DISABLED", "DISABLED", "ENABLED"], versions(google)
    assert live_key_strings(google) == {versions(google)[3][0]}


def test_a_copy_of_the_old_key_that_cannot_be_read_stops_the_finish_until_it_is_disabled(env, google):
    """Version 1 holds the old key too; reading it fails: the finish is not done in silence with
    that copy enabled. It stops (exit 7) and the next --finish, which finds version 2 disabled
    already, tells the old key by the key at Google and disables the copy."""
    secret_exists(google)
    google.control(secrets=[{"id": "gemini-key", "versions": [FLEET_KEY]}])
    machine(env, google)
    google.control(set={"fail_access_versions": [1]})
    failed = rotate(env, "--grace", "0s")
    assert failed.code == 7 and "version 1 could not be read" in failed.err and "--finish lab" in failed.err, failed
    assert [state for _, state in versions(google)] == ["ENABLED", "DISABLED", "ENABLED"] and FLEET_KEY in live_key_strings(google)
    google.control(set={"fail_access_versions": []})
    finished = env.run("key", "rotate", "--finish", "lab")
    assert finished.code == 0 and "disabled version 1 of" in finished.err and "deleted the old key" in finished.err, finished
    assert [state for _, state in versions(google)] == ["DISABLED", "DISABLED", "ENABLED"] and live_key_strings(google) == {versions(google)[2][0]}


def test_a_version_that_cannot_be_withdrawn_keeps_its_key_working(env, google):
    """The add's answer is lost and the rotator may not disable versions: the version it added
    stays, so its key is not deleted under the machines that may have taken it."""
    secret_exists(google)
    machine(env, google)
    google.control(set={"lose": {"addVersion": "once"}}, sm_deny_permission=[[ACCOUNT, "secretmanager.versions.disable"]])
    failed = rotate(env, "--grace", "0s")
    assert failed.code == 7, failed
    assert "could not withdraw version 2" in failed.err and "which is kept (not deleted at Google)" in failed.err, failed
    assert "--finish lab" in failed.err
    added = versions(google)[1][0]
    assert versions(google)[1][1] == "ENABLED" and added in live_key_strings(google)
    assert vault_state(env)[0] == FLEET_KEY


def test_keep_old_disables_the_previous_version_but_keeps_its_key(env, google):
    secret_exists(google)
    machine(env, google)
    kept = rotate(env, "--grace", "0s", "--keep-old", "--json")
    assert kept.code == 0, kept
    assert not json.loads(kept.out)["old_key_deleted"]
    second = versions(google)[1][0]
    assert versions(google) == [(FLEET_KEY, "DISABLED"), (second, "ENABLED")] and live_key_strings(google) == {FLEET_KEY, second}
    assert vault_state(env)[1][3][1] == ""  # no key to retire


def test_a_rotator_without_versions_add_is_told_which_permission_and_leaves_nothing(env, google):
    secret_exists(google)
    machine(env, google)
    google.control(sm_deny_permission=[[ACCOUNT, "secretmanager.versions.add"]])
    refused = rotate(env, "--grace", "0s")
    assert refused.code == 6, refused
    assert "secretmanager.versions.add" in refused.err and ACCOUNT in refused.err
    assert versions(google) == [(FLEET_KEY, "ENABLED")] and live_key_strings(google) == {FLEET_KEY}
    assert vault_state(env)[0] == FLEET_KEY


def test_three_rotators_with_the_same_timer_rotate_exactly_once(env, google, tmp_path):
    secret_exists(google, age=40 * DAY, rotation={"nextRotationTime": "2027-01-01T00:00:00Z", "rotationPeriod": str(30 * DAY) + "s"})
    machines = [machine(env, google)] + [other_machine(tmp_path, google, "m%d" % index) for index in (1, 2)]
    runs = []
    for member in machines:
        member.advance_clock()
        runs.append(subprocess.Popen([BIN, "key", "rotate", "--create", "lab", "--if-due", "--no-wait", "--verify-timeout", "30", "--passphrase-file", member.passfile],
                                     env=dict(member.vars), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outcomes = [(run.wait(timeout=120), run.stderr.read()) for run in runs]
    assert all(code == 0 for code, _ in outcomes), outcomes
    rotated = [err for _, err in outcomes if "added version 2 to" in err]
    elsewhere = [err for _, err in outcomes if "rotated elsewhere" in err or "nothing to do" in err]
    assert len(rotated) == 1 and len(elsewhere) == 2, outcomes
    assert len(versions(google)) == 2 and annotation(google).startswith("rotated version=2 ")
    # Not due any more for the others: the secret's newest version is young.
    loser = next(member for member, (_, err) in zip(machines, outcomes) if "added version 2 to" not in err)
    later = loser.run("key", "rotate", "--create", "lab", "--if-due")
    assert later.code == 0 and "nothing to do" in later.err and "the secret's rotation period" in later.err


def fingerprint(text):
    """Sodium.fingerprint: the first 8 bytes of BLAKE2b-256, in hex."""
    return hashlib.blake2b(text.encode(), digest_size=32).digest()[:8].hex()


def claim_here(pid, pidns=None, since=None, renewed=None):
    """A claim as a rotator on this machine, this boot and (unless `pidns`) this PID namespace writes it."""
    now = int(time.time())
    with open("/etc/machine-id") as handle:
        machine = fingerprint("".join(c for c in handle.read() if c.isalnum()))
    with open("/proc/sys/kernel/random/boot_id") as handle:
        boot = fingerprint(handle.read().strip())
    pidns = pidns or str(os.stat("/proc/self/ns/pid").st_ino)
    return "claimed host=here machine=%s boot=%s pidns=%s pid=%d since=%d time=%d" % (
        machine, boot, pidns, pid, since or now - 20, renewed or now - 5)


def set_claim(google, text):
    google.control(secrets=[{"id": "gemini-key", "annotations": {"gemvault-rotation": text}}])


def test_a_live_claim_elsewhere_is_refused_to_a_person_left_to_a_timer_and_taken_over_with_force(env, google):
    now = int(time.time())
    secret_exists(google, annotations={"gemvault-rotation": "claimed host=elsewhere pid=4242 since=%d time=%d" % (now - 40, now - 10)})
    machine(env, google)
    refused = rotate(env, "--grace", "0s")
    assert refused.code == 1, refused
    assert "claimed by elsewhere (process 4242), claimed 4" in refused.err and "nothing was rotated" in refused.err and "--force" in refused.err
    timer = rotate(env, "--if-due", "--grace", "0s", "--json")
    assert timer.code == 0 and "rotated elsewhere: elsewhere (process 4242)" in timer.err, timer
    assert json.loads(timer.out)["action"] == "elsewhere" and len(versions(google)) == 1
    forced = rotate(env, "--force", "--grace", "0s")
    assert forced.code == 0, forced
    assert "warning: --force: taking over the live claim on the rotation of" in forced.err and "elsewhere (process 4242)" in forced.err
    assert len(versions(google)) == 2 and annotation(google).startswith("rotated version=2 ")


@pytest.mark.parametrize("ages,why", [((300, 200), "stopped renewing it"), ((3 * 3600, 5), "longer ago than any run lasts"),
                                      ((2 * 3600, None), "with no readable time")])
def test_a_claim_whose_holder_stopped_renewing_or_that_is_too_old_is_taken_over(env, google, ages, why):
    """Renewal stopped for three minutes, or claimed longer ago than the claim's hour plus the
    longest run (a forged claim kept fresh), is taken over whatever else it says."""
    now = int(time.time())
    since, renewed = ages
    text = "claimed host=elsewhere pid=4242 since=%d" % (now - since) + ("" if renewed is None else " time=%d" % (now - renewed))
    secret_exists(google, annotations={"gemvault-rotation": text})
    machine(env, google)
    taken = rotate(env, "--grace", "0s")
    assert taken.code == 0, taken
    assert "taking over the rotation" in taken.err and why in taken.err, taken.err
    assert len(versions(google)) == 2 and annotation(google).startswith("rotated version=2 ")


def test_a_timer_reports_a_claim_that_has_not_advanced_the_secret_for_two_periods_as_stuck(env, google):
    now = int(time.time())
    forged = "claimed host=elsewhere pid=4242 since=%d time=%d" % (now - 60, now - 5)
    secret_exists(google, age=200 * DAY, annotations={"gemvault-rotation": forged})  # rotation_days 90: two periods passed
    machine(env, google)
    stuck = rotate(env, "--if-due", "--no-wait")
    assert stuck.code == 1, stuck
    assert "is stuck" in stuck.err and "elsewhere (process 4242)" in stuck.err and "--force" in stuck.err
    assert len(versions(google)) == 1


def test_containers_sharing_a_machine_id_do_not_take_over_each_others_live_claims(env, google):
    """Same /etc/machine-id and boot, another PID namespace: the pid says nothing here, so a
    renewed claim is live. The same claim from this namespace with its process gone is taken over."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    secret_exists(google, annotations={"gemvault-rotation": claim_here(dead.pid, pidns="4026599999")})
    machine(env, google)
    refused = rotate(env, "--grace", "0s")
    assert refused.code == 1 and "claimed by here (process %d)" % dead.pid in refused.err, refused
    assert len(versions(google)) == 1
    set_claim(google, claim_here(dead.pid))
    taken = rotate(env, "--grace", "0s")
    assert taken.code == 0 and "in a run that is gone" in taken.err, taken
    assert len(versions(google)) == 2


def test_a_rotator_renews_its_claim_while_it_holds_it(env, google):
    """The check waits out five minutes of Google's propagation (sped up): the claim is patched
    again with the last etag at least every 60 s, keeping when it was claimed."""
    secret_exists(google)
    machine(env, google)
    google.control(set={"propagation": 300})
    result = rotate(env, "--grace", "0s", "--verify-timeout", "10m")
    assert result.code == 0, result
    patches = [call for call in google.state()["sm_calls"] if call[0] == "PATCH"]
    assert len(patches) >= 3, patches  # the claim, at least one renewal, the result
    assert annotation(google).startswith("rotated version=2 ")


def test_bad_requests_are_refused_before_anything_is_made(env, google):
    secret_exists(google)
    machine(env, google)
    assert env.run("config", "set", "secret_cache_ttl", "5m").code == 0
    short = rotate(env, "--grace", "1m")
    assert short.code == 64 and "shorter than secret_cache_ttl" in short.err
    both = env.run("key", "rotate", "--create", "--finish", "lab")
    assert both.code == 64
    assert env.run("key", "set", "lab", "--from", SECRET + "/versions/1").code == 0
    pinned = rotate(env)
    assert pinned.code == 1 and "pinned to version 1" in pinned.err
    assert google.state()["calls"] == [] and versions(google) == [(FLEET_KEY, "ENABLED")]


STEPS = ["claimed the rotation", "creating gemvault-", "not accepted yet", "adding the new key", "added version 2", "key 'lab' is now", "waiting "]


@pytest.mark.parametrize("step", STEPS)
def test_kill_9_at_every_step_leaves_a_vault_and_a_secret_the_next_run_completes(env, google, step):
    """Killed at each step, the vault opens with the old or the new value; the next
    `key rotate --finish` completes or cleans up, naming what it found, and then every enabled
    version holds the vault's key, which is the only live key."""
    secret_exists(google)
    machine(env, google)
    speed_up_waits(env, google, None)  # killed at a moment it is seen at: in real time
    # The check waits past the create; the add is made at once and its answer held: a kill
    # while "adding" lands after the add at Google and before the vault's write.
    google.control(set={"op_polls": 1, "propagation": 6, "delay": {"addVersion": 5}})
    env.advance_clock()
    argv = [BIN, "key", "rotate", "--create", "lab", "--grace", "10m", "--verify-timeout", "30", "--passphrase-file", env.passfile]
    proc = subprocess.Popen(argv, env=dict(env.vars), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.set_blocking(proc.stderr.fileno(), False)
    err = b""
    deadline = time.time() + 60
    while step.encode() not in err and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
        err += proc.stderr.read() or b""
    assert step.encode() in err, err
    if step == "adding the new key":  # the note comes just before the request: killed once it reached Google
        while len(versions(google)) < 2 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    value, link = vault_state(env)
    values = [v for v, _ in versions(google)]
    assert value in values and value in {k["keyString"] for k in google.state()["keys"].values()}, step
    env.advance_clock(601)
    following = env.run("key", "rotate", "--finish", "lab")
    assert following.code == 0, (step, following)
    value, link = vault_state(env)
    enabled = {v for v, state in versions(google) if state == "ENABLED"}
    assert enabled == {value}, (step, versions(google), following.err)
    assert live_key_strings(google) == {value}, (step, following.err)
    assert versions(google)[-1][1] == "ENABLED"  # `latest` answers
    if step in ("creating gemvault-", "not accepted yet", "adding the new key"):
        assert "interrupted before it stored its new key" in following.err or "was not made" in following.err, following.err
    if step == "not accepted yet":
        assert len(versions(google)) == 1, versions(google)  # nothing added before the check passed
    if step == "adding the new key":
        assert "it had added version 2" in following.err and "disabled version 2" in following.err, following.err
    if step in ("key 'lab' is now", "waiting "):
        assert "finished the rotation of 'lab' to version 2" in following.err and value != FLEET_KEY


def test_a_key_without_a_secret_takes_if_due_as_rotation_days(env, google):
    """--if-due on a vault key that is not linked: --if-older-than rotation_days; the fleet's
    options are refused for it."""
    setup(env, google)
    young = env.run("key", "rotate", "--create", "--if-due")
    assert young.code == 0 and "younger than 90: nothing to do" in young.err, young
    assert env.run("config", "set", "rotation_days", "0").code == 0
    never = env.run("key", "rotate", "--create", "--if-due")
    assert never.code == 0 and "rotation_days is 0 (never): nothing to do" in never.err, never
    graced = env.run("key", "rotate", "--create", "--grace", "1m")
    assert graced.code == 64 and "goes with a key linked to Secret Manager" in graced.err
    # Nothing was made at Google: no POST to the API Keys service at all.
    assert [call for call in google.state()["calls"] if call[0] == "POST"] == []
