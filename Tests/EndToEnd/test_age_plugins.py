"""age plugins (Docs/sharing.md, age-plugin.md): `key share --to age1gvtest1…` and `key import -i`
with `AGE-PLUGIN-GVTEST-1…` identities through a real plugin process (age_plugin_gvtest.py, on a
temporary PATH), its requests answered on a real terminal, and every way a plugin can misbehave
ending in `gemvault: error:` naming it, exit 1, never a hang (each run has a subprocess timeout)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BIN, GOOD_KEY, wait_until
from test_sharing import AGE, age_decrypt, age_identity, identity, second, vault_with_key

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.join(HERE, "age_plugin_gvtest.py")
# A broken plugin must end the command long before this.
NO_HANG = 40


def install_plugin(env, tmp_path):
    """age-plugin-gvtest in a folder of its own, first on this user's PATH."""
    folder = os.path.join(str(tmp_path), "plugins")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "age-plugin-gvtest")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (sys.executable, PLUGIN))
    os.chmod(path, 0o755)
    env.vars["PATH"] = folder + ":" + env.vars["PATH"]
    env.vars["GVTEST_LOG"] = os.path.join(str(tmp_path), "plugin.log")
    return folder


def device_slot(env, tmp_path):
    """An age slot sealed to the plugin's device recipient (GVTEST_DEVICE stands in for a
    YubiKey, present): the device's path, for a test to unplug it."""
    device = os.path.join(str(tmp_path), "device")
    with open(device, "wb") as handle:
        handle.write(os.urandom(32))
    env.vars["GVTEST_DEVICE"] = device
    recipient = subprocess.run([sys.executable, PLUGIN, "--device-recipient"], env=env.vars, check=True, capture_output=True, text=True).stdout.strip()
    assert env.run("slot", "add", "age", recipient, timeout=NO_HANG).code == 0
    return device


def plugin_identity(env, tmp_path, name="gvtest-id.txt"):
    """A gvtest identity file (as the plugins write one: a `# Recipient:` comment above the
    identity) and its recipient."""
    made = subprocess.run([sys.executable, PLUGIN, "--generate"], check=True, capture_output=True, text=True).stdout
    path = os.path.join(str(tmp_path), name)
    env.write_private(path, made)
    return path, made.split("Recipient: ")[1].split("\n")[0]


def plugin_log(env):
    with open(env.vars["GVTEST_LOG"]) as handle:
        return handle.read().splitlines()


@pytest.fixture
def shared(env, tmp_path):
    """Alice's vault with 'lab', bob's vault, the plugin installed for both, and bob's gvtest identity."""
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    install_plugin(alice, tmp_path)
    bob.vars["PATH"], bob.vars["GVTEST_LOG"] = alice.vars["PATH"], alice.vars["GVTEST_LOG"]
    id_path, recipient = plugin_identity(bob, tmp_path)
    return alice, bob, id_path, recipient


def test_a_share_to_a_plugin_recipient_is_imported_with_its_plugin_identity(shared, tmp_path):
    alice, bob, id_path, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    result = alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG)
    assert result.code == 0, result
    # recipient-v1 as age-plugin.md orders it: phase 1 from gemvault, then the plugin's stanza.
    assert plugin_log(alice) == ["add-recipient " + recipient, "wrap-file-key", "extension-labels", "done", "ok"]
    header = open(out, "rb").read().split(b"\n---")[0]
    assert b"\n-> gvtest " in header
    listed = json.loads(alice.run("key", "share", "lab", "--list", "--json").out)
    assert [r["recipient"] for r in listed["recipients"]] == [recipient]

    os.remove(alice.vars["GVTEST_LOG"])
    imported = bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG)
    assert imported.code == 0, imported
    assert bob.run("key", "get", "lab").out.strip() == GOOD_KEY
    log = plugin_log(bob)
    assert log[0] == "add-identity AGE-PLUGIN-…" and log[1].startswith("recipient-stanza 0 gvtest ") and log[2:] == ["done", "ok"]

    # Another gvtest identity is not it: the plugin unwraps nothing, which is no match (exit 1).
    other_path, _ = plugin_identity(bob, tmp_path, "other-id.txt")
    missed = bob.run("key", "import", out, "--yes", "--no-verify", "-i", other_path, timeout=NO_HANG)
    assert missed.code == 1 and "not encrypted to this vault's identity (or to the -i identities given)" in missed.err, missed

    # Both identities in one file, the wrong one first: one run of the plugin with both, and the
    # share is taken as written for the second one's recipient.
    both = os.path.join(str(tmp_path), "both-id.txt")
    bob.write_private(both, open(other_path).read() + open(id_path).read())
    os.remove(bob.vars["GVTEST_LOG"])
    taken = bob.run("key", "import", out, "lab3", "--yes", "--no-verify", "-i", both, timeout=NO_HANG)
    assert taken.code == 0, taken
    log = plugin_log(bob)
    assert log[:2] == ["add-identity AGE-PLUGIN-…"] * 2 and log.count("done") == 1, log


def test_plugin_and_native_recipients_share_one_file_that_age_reads(shared, tmp_path):
    alice, bob, id_path, recipient = shared
    age_path, age_recipient = age_identity(str(tmp_path))
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", recipient, "--to", age_recipient, "-o", out, timeout=NO_HANG).code == 0
    assert GOOD_KEY.encode() in age_decrypt(age_path, open(out, "rb").read())
    assert bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG).code == 0
    # One file holding both identities, the plugin's first: the native one opens the share
    # without starting the plugin (which could have asked for a touch).
    both = os.path.join(str(tmp_path), "both.txt")
    bob.write_private(both, open(id_path).read() + open(age_path).read())
    os.remove(bob.vars["GVTEST_LOG"])
    again = bob.run("key", "import", out, "lab2", "--yes", "--no-verify", "-i", both, timeout=NO_HANG)
    assert again.code == 0, again
    assert not os.path.exists(bob.vars["GVTEST_LOG"])


def test_a_secret_share_goes_to_a_plugin_recipient(shared, tmp_path):
    alice, bob, id_path, recipient = shared
    token = "ghp_sharedToken0123456789abcdefghijklmnop"
    assert alice.run("secret", "set", "gh", input=token + "\n").code == 0
    out = os.path.join(str(tmp_path), "gh.age")
    assert alice.run("secret", "share", "gh", "--to", recipient, "-o", out, timeout=NO_HANG).code == 0
    imported = bob.run("secret", "import", out, "-i", id_path, timeout=NO_HANG)
    assert imported.code == 0, imported
    assert token not in imported.out + imported.err


def test_the_default_identity_finds_its_key_with_no_identity_data(shared, tmp_path):
    """`AGE-PLUGIN-GVTEST-1` and a checksum (age's -j gvtest): the plugin finds the key itself,
    here in the file standing in for a hardware token."""
    alice, bob, _, _ = shared
    device = os.path.join(str(tmp_path), "device")
    with open(device, "wb") as handle:
        handle.write(os.urandom(32))
    bob.vars["GVTEST_DEVICE"] = alice.vars["GVTEST_DEVICE"] = device
    recipient = subprocess.run([sys.executable, PLUGIN, "--device-recipient"], env=bob.vars, check=True, capture_output=True, text=True).stdout.strip()
    sys.path.insert(0, HERE)
    from age_plugin_gvtest import bech32_encode
    default_path = os.path.join(str(tmp_path), "default-id.txt")
    bob.write_private(default_path, "# Recipient: %s\n%s\n" % (recipient, bech32_encode("AGE-PLUGIN-GVTEST-", b"").upper()))
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG).code == 0
    imported = bob.run("key", "import", out, "--yes", "--no-verify", "-i", default_path, timeout=NO_HANG)
    assert imported.code == 0, imported
    assert bob.run("key", "get", "lab").out.strip() == GOOD_KEY


def test_a_missing_plugin_or_a_bad_name_is_a_clear_error(env, tmp_path):
    vault_with_key(env)
    _, recipient = plugin_identity(env, tmp_path)
    out = os.path.join(str(tmp_path), "lab.age")
    missing = env.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG)
    assert missing.code == 1 and "gemvault: error: age-plugin-gvtest was not found on PATH" in missing.err, missing
    assert not os.path.exists(out)
    # A plugin found only through a relative PATH entry is never run.
    install_plugin(env, tmp_path)
    env.vars["PATH"] = "plugins:/usr/bin:/bin"
    relative = subprocess.run([BIN, "key", "share", "lab", "--to", recipient, "-o", out, "--passphrase-file", env.passfile],
                              env=env.vars, cwd=str(tmp_path), capture_output=True, text=True, timeout=NO_HANG)
    assert relative.returncode == 1 and "not found on PATH" in relative.stderr


MISBEHAVIOURS = [
    ("wrong-state", "sent 'file-key', which belongs to the other state machine"),
    ("huge", "sent a command body over 65536 bytes"),
    ("exit", "ended before finishing (exit status 3); it said: gvtest: the token fell off the desk"),
    ("hang", "did not answer within 1 second"),
    ("garbage", "sent a body that is not canonical base64"),
    ("error", "could not wrap to the recipients: internal: the token is locked"),
]


@pytest.mark.parametrize("mode,said", MISBEHAVIOURS)
def test_a_misbehaving_plugin_ends_the_share_with_an_error_naming_it(shared, tmp_path, mode, said):
    alice, _, _, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    result = alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG,
                       env={"GVTEST_MODE": mode, "GEMVAULT_AGE_PLUGIN_TIMEOUT": "1"})
    assert result.code == 1, result
    assert "gemvault: error: the age plugin age-plugin-gvtest " + said in result.err, result.err
    assert not os.path.exists(out)
    assert json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"] == []


@pytest.mark.parametrize("mode,said", [
    ("wrong-state", "sent 'recipient-stanza', which belongs to the other state machine"),
    ("exit", "ended before finishing (exit status 3)"),
    ("hang", "did not answer within 1 second"),
    ("error", "could not unwrap the file key: internal: the token is locked"),
])
def test_a_misbehaving_plugin_ends_the_import_with_an_error_naming_it(shared, tmp_path, mode, said):
    alice, bob, id_path, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG).code == 0
    result = bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG,
                     env={"GVTEST_MODE": mode, "GEMVAULT_AGE_PLUGIN_TIMEOUT": "1"})
    assert result.code == 1 and "gemvault: error: the age plugin age-plugin-gvtest " + said in result.err, result
    assert bob.run("key", "get", "lab").code != 0


def test_a_wrong_file_key_from_the_plugin_fails_the_header_mac(shared, tmp_path):
    alice, bob, id_path, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG).code == 0
    result = bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG, env={"GVTEST_MODE": "wrong-key"})
    assert result.code == 4 and "HMAC failure" in result.err and "nothing was stored" in result.err, result
    assert bob.run("key", "get", "lab").code != 0


def test_the_plugin_process_group_is_killed_on_the_way_out(shared, tmp_path):
    alice, _, _, recipient = shared
    pid_file = os.path.join(str(tmp_path), "child.pid")
    result = alice.run("key", "share", "lab", "--to", recipient, "-o", os.path.join(str(tmp_path), "x.age"), timeout=NO_HANG,
                       env={"GVTEST_MODE": "spawn", "GVTEST_CHILD_PID": pid_file, "GEMVAULT_AGE_PLUGIN_TIMEOUT": "1"})
    assert result.code == 1 and "did not answer within 1 second" in result.err, result
    child = int(open(pid_file).read())

    def gone():
        try:
            with open("/proc/%d/stat" % child) as stat:
                return stat.read().split(") ")[1].startswith("Z")
        except FileNotFoundError:
            return True
    wait_until(gone, "the plugin's child to be killed with its group")


def test_plugin_messages_are_neutralised_and_grease_is_answered(shared, tmp_path):
    alice, _, _, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    shown = alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG, env={"GVTEST_MODE": "escape"})
    assert shown.code == 0, shown
    assert "age-plugin-gvtest: touch the key" in shown.err and "\x1b" not in shown.err and "\x07" not in shown.err
    greased = alice.run("key", "share", "lab", "--to", recipient, "-o", out, "--force", timeout=NO_HANG, env={"GVTEST_MODE": "grease"})
    assert greased.code == 0, greased


def test_postquantum_labels_must_match_every_other_stanza(shared, tmp_path):
    alice, bob, id_path, recipient = shared
    _, age_recipient = age_identity(str(tmp_path))
    out = os.path.join(str(tmp_path), "lab.age")
    mixed = alice.run("key", "share", "lab", "--to", recipient, "--to", age_recipient, "-o", out, timeout=NO_HANG,
                      env={"GVTEST_MODE": "postquantum"})
    assert mixed.code == 1 and "cannot share one file" in mixed.err and "postquantum" in mixed.err, mixed
    assert not os.path.exists(out)
    alone = alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG, env={"GVTEST_MODE": "postquantum"})
    assert alone.code == 0, alone
    assert bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG).code == 0


def test_a_postquantum_plugin_goes_with_a_hybrid_recipient(shared, tmp_path):
    # The plugin's `postquantum` label is matched by age1pq1…'s own; a classic X25519 beside them
    # is what the label forbids (the test above), a hybrid recipient is not.
    import age_pq
    alice, bob, id_path, recipient = shared
    hybrid = age_pq.HybridIdentity()
    out = os.path.join(str(tmp_path), "lab.age")
    both = alice.run("key", "share", "lab", "--to", recipient, "--to", hybrid.recipient, "-o", out, timeout=NO_HANG,
                     env={"GVTEST_MODE": "postquantum"})
    assert both.code == 0, both
    with open(out, "rb") as f:
        data = f.read()
    assert json.loads(age_pq.decrypt(data, [hybrid]))["key"] == GOOD_KEY
    assert bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG).code == 0


def test_the_plugin_pin_is_asked_through_the_hidden_prompt_on_a_terminal(shared, tmp_path):
    from ptyrun import PtySession
    alice, _, _, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    pin_env = dict(alice.vars, GVTEST_MODE="pin")
    s = PtySession([BIN, "key", "share", "lab", "--to", recipient, "-o", out, "--passphrase-file", alice.passfile], pin_env)
    try:
        s.expect(r"Plug in the gvtest token \[y = Use the token, n = Skip\] ", timeout=NO_HANG)
        s.line("maybe")  # neither choice: asked again
        s.expect(r"Plug in the gvtest token \[y = Use the token, n = Skip\] [^\n]*\n[^\n]*Plug in the gvtest token", timeout=NO_HANG)
        s.line("y")
        s.expect(r"Serial of the gvtest token: ", timeout=NO_HANG)
        assert s.echo_enabled()
        s.line("65227134")
        s.expect(r"PIN for the gvtest token: ", timeout=NO_HANG)
        assert not s.echo_enabled()
        s.mark()
        s.line("123456")
        assert s.wait(timeout=NO_HANG) == 0, s.text()
        assert "123456" not in s.text()
    finally:
        s.close()
    assert os.path.exists(out)
    # A wrong PIN: the plugin gives up and says why.
    s = PtySession([BIN, "key", "share", "lab", "--to", recipient, "-o", out, "--force", "--passphrase-file", alice.passfile], pin_env)
    try:
        s.expect(r"\[y = Use the token, n = Skip\] ", timeout=NO_HANG)
        s.line("y")
        s.expect(r"Serial of the gvtest token: ", timeout=NO_HANG)
        s.line("65227134")
        s.expect(r"PIN for the gvtest token: ", timeout=NO_HANG)
        s.line("000000")
        assert s.wait(timeout=NO_HANG) == 1
        assert "the age plugin age-plugin-gvtest could not wrap to the recipients: internal: no PIN, or a wrong one" in s.text()
    finally:
        s.close()


def test_without_a_terminal_the_plugin_requests_fail_and_it_ends_cleanly(shared, tmp_path):
    alice, _, _, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    result = alice.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG, env={"GVTEST_MODE": "pin"})
    assert result.code == 1 and "could not wrap to the recipients: internal: the user skipped the token" in result.err, result
    assert not os.path.exists(out)


def test_a_plugin_identity_is_never_taken_as_a_recipients_file(shared, tmp_path):
    alice, _, id_path, recipient = shared
    refused = alice.run("key", "share", "lab", "-R", id_path, "-o", os.path.join(str(tmp_path), "lab.age"), timeout=NO_HANG)
    assert refused.code == 64 and "holds a private key, not a recipient" in refused.err, refused
    assert not os.path.exists(alice.vars["GVTEST_LOG"]), "the plugin was not run"
    # A recipients file of plugin recipients is read as any other (the comment labels it).
    recipients = os.path.join(str(tmp_path), "team.txt")
    with open(recipients, "w") as handle:
        handle.write("# bob's yubikey\n%s\n" % recipient)
    assert alice.run("key", "share", "lab", "-R", recipients, "-o", os.path.join(str(tmp_path), "lab.age"), timeout=NO_HANG).code == 0
    listed = json.loads(alice.run("key", "share", "lab", "--list", "--json").out)
    assert [(r["recipient"], r["label"]) for r in listed["recipients"]] == [(recipient, "bob's yubikey")]
