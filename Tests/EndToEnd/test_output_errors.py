"""Results that cannot be written are failures: a full device exits 1 with the reason, and a
reader that went away ends the command quietly with 141, as SIGPIPE would.

stdout here is the real /dev/full, or a real pipe whose reader is closed."""
import json
import os
import subprocess
import time

import pytest

from conftest import BIN, GOOD_KEY

FULL = "gemvault: error: cannot write to standard output: No space left on device\n"


def run_into(env, stdout, *args, passphrase=True, timeout=60):
    """gemvault with `stdout` as its standard output; returns (exit code, stderr)."""
    argv = [BIN] + list(args) + (["--passphrase-file", env.passfile] if passphrase else [])
    proc = subprocess.run(argv, env=env.vars, stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          text=True, timeout=timeout, start_new_session=True)
    return proc.returncode, proc.stderr


def into_full_device(env, *args, passphrase=True):
    with open("/dev/full", "w") as full:
        return run_into(env, full, *args, passphrase=passphrase)


@pytest.fixture
def stored(env):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY + "\n").code == 0
    return env


def test_key_get_into_a_full_device_fails_with_the_reason(stored):
    assert into_full_device(stored, "key", "get") == (1, FULL)
    # The same command with somewhere to write succeeds, so the device is what failed.
    assert stored.run("key", "get").out == GOOD_KEY + "\n"


def test_listings_into_a_full_device_fail(stored):
    for args in (["key", "list"], ["key", "list", "--json"], ["history", "list", "--json"]):
        assert into_full_device(stored, *args) == (1, FULL), args
    assert into_full_device(stored, "--version", passphrase=False) == (1, FULL)


def test_ask_into_a_full_device_fails(api):
    api.init()
    assert into_full_device(api, "ask", "--model", "ok", "hello", passphrase=False) == (1, FULL)
    assert into_full_device(api, "ask", "--no-stream", "--model", "ok", "hello", passphrase=False) == (1, FULL)
    # A reply that could not be shown is not kept as if it had been.
    listed = api.run("history", "list", "--json")
    assert listed.code == 0 and json.loads(listed.out)["conversations"] == [], listed
    # --json cannot print its object either: the message on stderr is all a script gets.
    assert into_full_device(api, "ask", "--json", "--model", "ok", "hello", passphrase=False) == (1, FULL)


def test_a_closed_pipe_ends_key_get_quietly_with_status_141(stored):
    reader, writer = os.pipe()
    os.close(reader)
    try:
        assert run_into(stored, writer, "key", "get") == (141, "")
        assert run_into(stored, writer, "key", "list", "--json") == (141, "")
    finally:
        os.close(writer)


def test_key_get_piped_into_head_is_quiet(stored):
    # head may leave before or after the key is written: 141 or 0, and never a word on stderr.
    shell = subprocess.run(["bash", "-c", 'set -o pipefail; "$0" key get --passphrase-file "$1" | head -c1', BIN, stored.passfile],
                           env=stored.vars, capture_output=True, text=True, timeout=60)
    assert shell.returncode in (0, 141), shell
    assert (shell.stdout, shell.stderr) == (GOOD_KEY[0], ""), shell


def test_a_reader_that_leaves_stops_a_streaming_ask_at_once_with_141(api):
    # slow-long streams 100 events over 10 s; head leaves after the first byte.
    started = time.monotonic()
    shell = subprocess.run(["bash", "-c", 'set -o pipefail; "$0" ask --model slow-long hello | head -c1', BIN],
                           env=api.vars, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert (shell.returncode, shell.stdout, shell.stderr) == (141, "t", ""), shell
    assert elapsed < 5, "the reply went on streaming to nobody for %.1f s" % elapsed


def test_a_closed_stdout_fails_instead_of_writing_into_another_descriptor(api):
    """With fd 1 closed, the next descriptor opened (libcurl's wake-up socket, a history file)
    would become "stdout" and take the reply."""
    api.init()
    closed = "gemvault: error: cannot write to standard output: Bad file descriptor\n"
    for args, stdin in ((["ask", "--model", "ok", "hello"], ""), (["chat", "--model", "ok"], "hello\nagain\n")):
        shell = subprocess.run(["bash", "-c", 'exec "$@" >&-', "bash", BIN] + args, env=api.vars, input=stdin,
                               capture_output=True, text=True, timeout=60)
        assert (shell.returncode, shell.stderr.splitlines()[-1] + "\n") == (1, closed), shell
    listed = api.run("history", "list", "--json")
    assert listed.code == 0 and json.loads(listed.out)["conversations"] == [], listed
