"""The age slot opened through an age plugin (age-plugin.md): the test plugin
age-plugin-gvtest (Tests/EndToEnd/age_plugin_gvtest.py) stands in for age-plugin-yubikey, its
GVTEST_DEVICE file for the token. Needs the plugin client and the test plugin (issue 45 item 3)."""
import os
import subprocess
import sys

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE
from ptyrun import PtySession

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.join(HERE, "age_plugin_gvtest.py")
NO_HANG = 40

pytestmark = pytest.mark.skipif(not os.path.exists(PLUGIN), reason="the test age plugin (age_plugin_gvtest.py, from the age plugin client's branch) is not in this tree")


@pytest.fixture
def vault(env, tmp_path):
    env.init()
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
    session.expect("age slot is passed over")
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
    device = os.path.join(str(tmp_path), "device")
    with open(device, "wb") as handle:
        handle.write(os.urandom(32))
    env.vars["GVTEST_DEVICE"] = device
    recipient = subprocess.run([sys.executable, PLUGIN, "--device-recipient"], env=env.vars, check=True, capture_output=True, text=True).stdout.strip()
    assert env.run("slot", "add", "age", recipient, timeout=NO_HANG).code == 0
    opened = env.run("key", "get", passphrase=False, timeout=NO_HANG)
    assert opened.code == 0 and opened.out == GOOD_KEY + "\n", opened.err
    # The device unplugged: the plugin finds no key, and without a terminal nothing else opens it.
    os.remove(device)
    unplugged = env.run("key", "get", passphrase=False, timeout=NO_HANG)
    assert unplugged.code != 0 and "age" in unplugged.err, unplugged.err
    # A passphrase given on purpose never starts the plugin.
    log = env.vars.get("GVTEST_LOG") or os.path.join(str(tmp_path), "plugin.log")
    env.vars["GVTEST_LOG"] = log
    assert env.run("key", "get", timeout=NO_HANG).out == GOOD_KEY + "\n"
    assert not os.path.exists(log)
