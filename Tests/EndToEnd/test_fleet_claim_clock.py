"""The fleet's rotation claim against clocks that disagree (Docs/fleet.md, "Rotation through
Secret Manager", step 0): a claim's times are Google's (the Date header of Secret Manager's
answers), so no machine's own clock decides whether another machine's claim is live; and a
run confirms the claim is still its own just before it adds a version. Against fake_google.py,
whose clock (`clock_offset`) and each machine's (GEMVAULT_TEST_CLOCK_OFFSET) are set apart."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BIN
from test_fleet_rotation import annotation, machine, other_machine, rotate, secret_exists, set_claim, versions
from test_rotation import google, speed_up_waits  # noqa: F401 (fixture)


def google_now(google):
    return int(time.time()) + google.state()["config"].get("clock_offset", 0)


def start_rotation(member, *args):
    """A rotation in the background, in real time, once it has claimed the secret."""
    member.advance_clock()
    argv = [BIN, "key", "rotate", "--create", "lab", "--verify-timeout", "60", "--grace", "0s", "--passphrase-file", member.passfile, *args]
    proc = subprocess.Popen(argv, env=dict(member.vars), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    os.set_blocking(proc.stderr.fileno(), False)
    err = b""
    deadline = time.time() + 60
    while b"claimed the rotation" not in err and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
        err += proc.stderr.read() or b""
    assert b"claimed the rotation" in err, err
    return proc, err


def finish(proc, err):
    try:
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    os.set_blocking(proc.stderr.fileno(), True)
    return proc.returncode, (err + proc.stderr.read()).decode()


@pytest.mark.parametrize("google_ahead,machine_ahead", [(0, 200), (0, -400), (600, 0)])
def test_a_live_claim_is_live_whatever_this_machines_clock_says(env, google, google_ahead, machine_ahead):
    """The holder renewed its claim 5 s ago by Google's clock; this machine's clock runs 200 s
    ahead, 400 s behind, or Google's 10 minutes ahead of it: the claim is still live."""
    google.control(set={"clock_offset": google_ahead})
    now = google_now(google)
    secret_exists(google, annotations={"gemvault-rotation": "claimed host=elsewhere pid=4242 since=%d time=%d" % (now - 40, now - 5)})
    machine(env, google)
    env.advance_clock(machine_ahead)
    refused = rotate(env, "--grace", "0s")
    assert refused.code == 1, refused
    assert re.search(r"claimed by elsewhere \(process 4242\), claimed 4\d seconds ago and renewed [4-7] seconds ago", refused.err), refused.err
    assert "taking over" not in refused.err and len(versions(google)) == 1
    # Once it stops renewing for 3 minutes of Google's time, it is taken over.
    set_claim(google, "claimed host=elsewhere pid=4242 since=%d time=%d" % (now - 400, now - 200))
    taken = rotate(env, "--grace", "0s")
    assert taken.code == 0 and "stopped renewing it 3 minutes ago" in taken.err, taken.err
    # The result is recorded in Google's time too.
    recorded = int(annotation(google).split("time=")[1])
    assert annotation(google).startswith("rotated version=2 ") and abs(recorded - google_now(google)) <= 30, (annotation(google), google_now(google))


def test_a_holder_whose_clock_runs_ahead_keeps_its_claim_and_the_secret_gets_one_version(env, google, tmp_path):
    """The holder's clock runs 320 s ahead: its claim's times are still Google's, so another
    machine finds the claim live instead of 'with no readable time', and only one run adds."""
    secret_exists(google)
    holder = machine(env, google)
    other = other_machine(tmp_path, google, "other")
    for member in (holder, other):
        speed_up_waits(member, google, None)  # real time: the other machine runs while the holder checks
    google.control(set={"propagation": 8})
    holder.advance_clock(320)
    proc, err = start_rotation(holder)
    refused = rotate(other, "--grace", "0s")
    code, err = finish(proc, err)
    assert refused.code == 1 and "claimed by " in refused.err and "nothing was rotated" in refused.err, refused.err
    assert code == 0, err
    assert len(versions(google)) == 2 and annotation(google).startswith("rotated version=2 "), versions(google)


def test_a_claim_taken_over_between_renewals_stops_the_run_before_it_adds(env, google):
    """Another rotator takes the claim over after this run's last renewal: the run reads the
    claim again just before adding, finds it is not its own, adds nothing and deletes its key."""
    secret_exists(google)
    machine(env, google)
    speed_up_waits(env, google, None)  # real time: no renewal falls within the check's 8 s
    google.control(set={"propagation": 8})
    proc, err = start_rotation(env)
    now = google_now(google)
    set_claim(google, "claimed host=taker pid=77 since=%d time=%d" % (now, now))
    code, err = finish(proc, err)
    assert code == 1, err
    assert "taker (process 77) took over the claim" in err and "nothing was added" in err, err
    assert "adding the new key" not in err and "deleted the new key" in err, err
    assert len(versions(google)) == 1 and annotation(google).startswith("claimed host=taker "), (versions(google), annotation(google))
