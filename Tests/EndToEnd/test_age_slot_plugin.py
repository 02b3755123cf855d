"""The age slot opened through an age plugin (age-plugin.md): the test plugin
age-plugin-gvtest (Tests/EndToEnd/age_plugin_gvtest.py) stands in for age-plugin-yubikey, its
GVTEST_DEVICE file for the token. Needs the plugin client and the test plugin (issue 45 item 3)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE
from ptyrun import PtySession

from test_age_plugins import NO_HANG, PLUGIN, device_slot


@pytest.fixture
def vault(env, tmp_path):
    env.recovery_code = env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    folder = os.path.join(str(tmp_path), "plugins")
    os.makedirs(folder)
    path = os.path.join(folder, "age-plugin-gvtest")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (sys.executable, PLUGIN))
    os.chmod(path, 0o755)
    env.vars["PATH"] = folder + ":" + env.vars["PATH"]
    made = subprocess.run([sys.executable, PLUGIN, "--generate"], check=True, capture_output=True, text=True).stdout
    env.identity = os.path.join(str(tmp_path), "gvtest-id.txt")
    env.write_private(env.identity, made)
    env.recipient = made.split("Recipient: ")[1].split("\n")[0]
    yield env
    env.run("lock", passphrase=False)


def test_a_plugin_recipients_slot_opens_with_its_identity_file_and_no_terminal(vault):
    env = vault
    added = env.run("slot", "add", "age", env.recipient, timeout=NO_HANG)
    assert added.code == 0 and "plugin gvtest" in added.err, added.err
    opened = env.run("key", "get", passphrase=False, env={"GEMVAULT_AGE_IDENTITY": env.identity}, timeout=NO_HANG)
    assert opened.code == 0 and opened.out == GOOD_KEY + "\n", opened.err
    # passwd runs the plugin's recipient-v1 again for the new data key: the slot keeps working.
    assert env.run("passwd", "--new-passphrase-file", env.passfile, timeout=NO_HANG).code == 0
    assert env.run("key", "get", passphrase=False, env={"GEMVAULT_AGE_IDENTITY": env.identity}, timeout=NO_HANG).out == GOOD_KEY + "\n"


def test_a_plugin_that_fails_falls_back_to_the_passphrase_with_its_reason(vault):
    env = vault
    assert env.run("slot", "add", "age", env.recipient, timeout=NO_HANG).code == 0
    session = PtySession([BIN, "key", "get"], dict(env.vars, GEMVAULT_AGE_IDENTITY=env.identity, GVTEST_MODE="error"))
    session.expect(r"key slot 3 \(age, plugin gvtest [^)]*\) is\s+passed over: plugin failure: .*\s+token is locked")
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0
    assert GOOD_KEY in session.text()


def test_the_plugins_pin_is_asked_through_the_hidden_prompt(vault):
    env = vault
    assert env.run("slot", "add", "age", env.recipient, timeout=NO_HANG).code == 0
    session = PtySession([BIN, "key", "get"], dict(env.vars, GEMVAULT_AGE_IDENTITY=env.identity, GVTEST_MODE="pin"))
    try:
        session.expect(r"Plug in the gvtest token \[y = Use the token, n = Skip\] ", timeout=NO_HANG)
        session.line("y")
        session.expect(r"Serial of the gvtest token: ", timeout=NO_HANG)
        session.line("65227134")
        session.expect(r"PIN for the gvtest token: ", timeout=NO_HANG)
        assert not session.echo_enabled()
        session.line("123456")
        assert session.wait(timeout=NO_HANG) == 0, session.text()
        assert GOOD_KEY in session.text() and "123456" not in session.text() and "Passphrase" not in session.text()
    finally:
        session.close()


def test_a_slot_sealed_to_the_plugins_device_opens_with_the_device_present_and_no_identity_file(vault, tmp_path):
    """age's `-j NAME`: the plugin's default identity finds the key on the device (GVTEST_DEVICE
    stands in for a YubiKey), so no identity file is named at all."""
    env = vault
    device = device_slot(env, tmp_path)
    opened = env.run("key", "get", passphrase=False, timeout=NO_HANG)
    assert opened.code == 0 and opened.out == GOOD_KEY + "\n", opened.err
    # The device unplugged: the plugin finds no key, and without a terminal nothing else opens it.
    os.remove(device)
    unplugged = env.run("key", "get", passphrase=False, timeout=NO_HANG)
    assert unplugged.code != 0 and "age" in unplugged.err, unplugged.err
    # A passphrase given on purpose (a file, a descriptor) never starts the plugin.
    log = env.vars.get("GVTEST_LOG") or os.path.join(str(tmp_path), "plugin.log")
    env.vars["GVTEST_LOG"] = log
    assert env.run("key", "get", timeout=NO_HANG).out == GOOD_KEY + "\n"
    read, write = os.pipe()
    os.write(write, (PASSPHRASE + "\n").encode())
    os.close(write)
    try:
        by_fd = env.run("key", "get", "--passphrase-fd", str(read), pass_fds=(read,), timeout=NO_HANG)
    finally:
        os.close(read)
    assert by_fd.code == 0 and by_fd.out == GOOD_KEY + "\n", by_fd.err
    assert not os.path.exists(log)


def age_keygen(folder):
    path = os.path.join(folder, "x25519.txt")
    subprocess.run(["age-keygen", "-o", path], check=True, capture_output=True)
    os.chmod(path, 0o600)
    return path, subprocess.run(["age-keygen", "-y", path], check=True, capture_output=True, text=True).stdout.strip()


def test_a_failing_plugin_slot_never_stops_an_identity_file_that_opens_another_slot(vault, tmp_path):
    """Two age slots, the plugin's first: the file identity goes over every slot before any
    plugin runs, so a plugin that fails (its device gone, or itself gone) changes nothing, and
    with the file's slot opened the plugin is never started (no unasked touch or PIN)."""
    env = vault
    device_slot(env, tmp_path)
    identity, x25519 = age_keygen(str(tmp_path))
    assert env.run("slot", "add", "age", x25519, timeout=NO_HANG).code == 0
    del env.vars["GVTEST_DEVICE"]
    log = os.path.join(str(tmp_path), "plugin.log")
    env.vars["GVTEST_LOG"] = log
    unlocked = env.run("unlock", "-i", identity, passphrase=False, timeout=NO_HANG)
    assert unlocked.code == 0, unlocked.err
    assert "passed over" not in unlocked.err and not os.path.exists(log), unlocked.err
    assert env.run("lock", passphrase=False).code == 0
    # The same through the setting, with the plugin gone from PATH altogether.
    env.vars["PATH"] = env.vars["PATH"].split(":", 1)[1]
    opened = env.run("key", "get", passphrase=False, env={"GEMVAULT_AGE_IDENTITY": identity}, timeout=NO_HANG)
    assert opened.code == 0 and opened.out == GOOD_KEY + "\n", opened.err
    # With no identity file, the plugin's failure is the note, named by its slot.
    failed = env.run("key", "get", passphrase=False, timeout=NO_HANG)
    assert failed.code != 0 and "key slot 3 (age, plugin gvtest" in failed.err and "age-plugin-gvtest" in failed.err, failed.err


def test_a_wrong_file_key_from_the_plugin_passes_the_slot_over_and_asks_the_passphrase(vault):
    """The vault is intact: a plugin's wrong key fails the slot's MAC, which is the slot's
    failure to open, never damaged key slots or restore-backup."""
    env = vault
    assert env.run("slot", "add", "age", env.recipient, timeout=NO_HANG).code == 0
    session = PtySession([BIN, "key", "get"], dict(env.vars, GEMVAULT_AGE_IDENTITY=env.identity, GVTEST_MODE="wrong-key"))
    try:
        session.expect(r"key slot 3 \(age, plugin gvtest [^)]*\) is\s+passed over: HMAC failure", timeout=NO_HANG)
        session.expect("Passphrase for ", timeout=NO_HANG)
        session.line(PASSPHRASE)
        assert session.wait(timeout=NO_HANG) == 0, session.text()
        assert GOOD_KEY in session.text() and "restore-backup" not in session.text() and "damaged" not in session.text()
    finally:
        session.close()


def test_a_rekey_drops_a_slot_whose_plugin_is_missing_with_a_warning_and_the_recovery_code_still_works(vault, tmp_path):
    """Sealing the new data key to a plugin recipient runs the plugin: where it is missing, the
    rekey drops that slot, says so loudly and how to add it again, and never fails; recover
    least of all (the recovery code works on its own)."""
    env = vault
    with_plugin = env.vars["PATH"]
    without_plugin = with_plugin.split(":", 1)[1]
    identity, x25519 = age_keygen(str(tmp_path))

    def slot_kinds():
        return [s["kind"] for s in json.loads(env.run("slot", "list", "--json", passphrase=False).out)["slots"]]

    def dropped(result):
        assert result.code == 0, result.err
        assert "gemvault: warning: the age slot for plugin gvtest " in result.err and " is dropped: " in result.err, result.err
        assert "age-plugin-gvtest was not found" in result.err and "gemvault slot add age " + env.recipient in result.err, result.err
        assert slot_kinds() == ["passphrase", "recovery"]

    for command in (["recover", "--new-passphrase-file", env.passfile], ["passwd", "--new-passphrase-file", env.passfile], ["rekey"], ["slot", "rm", x25519]):
        env.vars["PATH"] = with_plugin
        assert env.run("slot", "add", "age", env.recipient, timeout=NO_HANG).code == 0
        if command[0] == "slot":
            assert env.run("slot", "add", "age", x25519, timeout=NO_HANG).code == 0
        env.vars["PATH"] = without_plugin
        result = env.run(*command, input=env.recovery_code + "\n" if command[0] == "recover" else None, timeout=NO_HANG)
        dropped(result)
        assert env.run("key", "get", timeout=NO_HANG).out == GOOD_KEY + "\n"
    # A rekey through the session: the agent drops the slot, and the command says so in the same
    # words (with the command that adds it again), and names the slot it kept.
    env.vars["PATH"] = with_plugin
    assert env.run("slot", "add", "age", env.recipient, timeout=NO_HANG).code == 0
    assert env.run("slot", "add", "age", x25519, timeout=NO_HANG).code == 0
    assert env.run("unlock", timeout=NO_HANG).code == 0
    plugin = os.path.join(with_plugin.split(":", 1)[0], "age-plugin-gvtest")
    os.rename(plugin, plugin + ".away")
    through_session = env.run("rekey", passphrase=False, timeout=NO_HANG)
    assert "gemvault: the vault's age slot holds the new data key and keeps working" in through_session.err, through_session.err
    assert through_session.err.count(" is dropped: ") == 1, through_session.err
    assert slot_kinds() == ["passphrase", "recovery", "age"]
    assert env.run("slot", "rm", x25519, timeout=NO_HANG).code == 0
    dropped(through_session)
