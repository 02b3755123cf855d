"""age slots (Docs/quick-unlock.md): the vault's data key sealed in a small age file to an age
recipient, opened by its identity file (`unlock -i FILE`, the age_identity setting) with no
terminal; identities made by Debian's age-keygen, the slot's age file read back by Debian's age."""
import json
import os
import struct
import subprocess

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE
from ptyrun import PtySession

AGE_SLOT = 5


def age_keygen(folder, name="identity.txt"):
    path = os.path.join(folder, name)
    subprocess.run(["age-keygen", "-o", path], check=True, capture_output=True)
    os.chmod(path, 0o600)
    recipient = subprocess.run(["age-keygen", "-y", path], check=True, capture_output=True, text=True).stdout.strip()
    return path, recipient


@pytest.fixture
def vault(env):
    env.recovery_code = env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    env.age_folder = os.path.join(env.root, "age")
    os.mkdir(env.age_folder, 0o700)
    yield env
    env.run("lock", passphrase=False)


def no_passphrase(user, *args, **kwargs):
    """A command with nothing to type and no passphrase flag: only a slot can open the vault."""
    return user.run(*args, passphrase=False, **kwargs)


def set_age_identity(env, path):
    config = os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault", "config.json")
    env.write_private(config, json.dumps({"age_identity": path}))


def age_slots(env):
    """The age slots of the vault file, read as Docs/vault-format.md lays them out."""
    data = env.vault_bytes()
    offset = 8 + 2 + 16 + 8
    count = data[offset]
    offset += 1
    found = []
    for _ in range(count):
        kind = data[offset]
        if kind == AGE_SLOT:
            start = offset
            (added, length) = struct.unpack_from("<QH", data, offset + 1)
            recipient = data[offset + 11:offset + 11 + length].decode()
            offset += 11 + length
            (file_length,) = struct.unpack_from("<H", data, offset)
            sealed = data[offset + 2:offset + 2 + file_length]
            offset += 2 + file_length
            found.append(dict(added=added, recipient=recipient, sealed=sealed, start=start, end=offset))
        else:
            offset += {1: 102, 2: 102, 3: 142, 4: 186}[kind]
    return found


def test_an_x25519_slot_opens_the_vault_with_i_and_with_the_setting_and_no_terminal(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    added = env.run("slot", "add", "age", recipient)
    assert added.code == 0, added.err
    assert "added an age slot for X25519 " + recipient in added.err
    # No passphrase and no terminal: only the identity can open the vault.
    assert no_passphrase(env, "key", "get").code != 0
    opened = no_passphrase(env, "key", "get", env={"GEMVAULT_AGE_IDENTITY": identity})
    assert opened.code == 0 and opened.out == GOOD_KEY + "\n", opened.err
    set_age_identity(env, identity)
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"
    os.remove(os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault", "config.json"))
    unlocked = no_passphrase(env, "unlock", "-i", identity)
    assert unlocked.code == 0, unlocked.err
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"


def test_the_slot_is_a_real_age_file_that_debians_age_opens_to_the_data_key(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    [slot] = age_slots(env)
    assert slot["recipient"] == recipient
    opened = subprocess.run(["age", "-d", "-i", identity], input=slot["sealed"], capture_output=True, check=True)
    assert len(opened.stdout) == 32


def test_an_identity_that_matches_no_slot_falls_back_to_the_passphrase_and_says_why(vault):
    env = vault
    _, recipient = age_keygen(env.age_folder)
    other, _ = age_keygen(env.age_folder, "other.txt")
    assert env.run("slot", "add", "age", recipient).code == 0
    # -i is tried even beside --passphrase-file, which then opens the vault.
    with_passphrase = env.run("unlock", "-i", other)
    assert with_passphrase.code == 0, with_passphrase.err
    assert "the age identity in %s opens none of the vault's age slots" % other in with_passphrase.err
    assert env.run("lock", passphrase=False).code == 0
    # The setting, on a terminal: the note, then the passphrase prompt.
    session = PtySession([BIN, "key", "get"], dict(env.vars, GEMVAULT_AGE_IDENTITY=other))
    session.expect("opens none of the vault's age slots")
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0
    assert GOOD_KEY in session.text()
    without = no_passphrase(env, "key", "get", env={"GEMVAULT_AGE_IDENTITY": other})
    assert without.code != 0 and "opens none of the vault's age slots" in without.err


def test_a_damaged_or_open_identity_file_is_refused_and_nothing_changes(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    before = env.vault_bytes()
    garbage = os.path.join(env.age_folder, "garbage.txt")
    env.write_private(garbage, "AGE-SECRET-KEY-1NOTAKEY\n")
    damaged = no_passphrase(env, "unlock", "-i", garbage)
    assert damaged.code == 64 and "is neither an age identity file" in damaged.err, damaged.err
    os.chmod(identity, 0o644)
    readable = no_passphrase(env, "unlock", "-i", identity)
    assert readable.code == 1 and "readable or writable by group or others" in readable.err and "chmod 600" in readable.err, readable.err
    missing = no_passphrase(env, "key", "get", env={"GEMVAULT_AGE_IDENTITY": identity + ".gone"})
    assert missing.code == 1 and "does not exist" in missing.err
    assert env.vault_bytes() == before
    assert json.loads(env.run("status", "--json", passphrase=False).out)["unlocked"] is False


def test_passwd_and_rekey_keep_the_slot_working(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    first = age_slots(env)[0]["sealed"]
    use = {"GEMVAULT_AGE_IDENTITY": identity}
    result = env.run("passwd", "--new-passphrase-file", env.passfile)
    assert result.code == 0 and "age slot holds the new data key" in result.err, result.err
    assert no_passphrase(env, "key", "get", env=use).out == GOOD_KEY + "\n"
    rekeyed = env.run("rekey")
    assert rekeyed.code == 0 and "age slot holds the new data key" in rekeyed.err, rekeyed.err
    assert no_passphrase(env, "key", "get", env=use).out == GOOD_KEY + "\n"
    assert age_slots(env)[0]["sealed"] != first
    recovered = env.run("recover", "--new-passphrase-file", env.passfile, input=env.recovery_code + "\n")
    assert recovered.code == 0, recovered.err
    assert no_passphrase(env, "key", "get", env=use).out == GOOD_KEY + "\n"


def test_slot_list_inspect_and_rm(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    again = env.run("slot", "add", "age", recipient)
    assert again.code == 1 and "already has an age slot for " + recipient in again.err
    listed = json.loads(no_passphrase(env, "slot", "list", "--json").out)
    assert listed["formatVersion"] == 3
    [slot] = [s for s in listed["slots"] if s["kind"] == "age"]
    assert slot["keyType"] == "X25519" and slot["fingerprint"] == recipient and slot["added"]
    table = no_passphrase(env, "slot", "list").out
    assert "age" in table and "X25519 " + recipient in table
    inspected = no_passphrase(env, "inspect").out
    assert "age file to X25519 " + recipient in inspected
    removed = env.run("slot", "rm", recipient)
    assert removed.code == 0, removed.err
    assert [s["kind"] for s in json.loads(no_passphrase(env, "slot", "list", "--json").out)["slots"]] == ["passphrase", "recovery"]
    locked_out = no_passphrase(env, "key", "get", env={"GEMVAULT_AGE_IDENTITY": identity})
    assert locked_out.code != 0


def test_a_recipient_that_is_not_one_is_a_usage_error(vault):
    env = vault
    before = env.vault_bytes()
    result = env.run("slot", "add", "age", "age1notarecipient")
    assert result.code == 64 and "not a valid age recipient" in result.err, result.err
    missing = env.run("slot", "add", "age")
    assert missing.code == 64
    assert env.vault_bytes() == before


def rewrite(env, data):
    """The vault with `data` as its body, its checksum made again (the damage is past it)."""
    import hashlib
    body = data[:-32]
    with open(env.vault, "wb") as handle:
        handle.write(body + hashlib.blake2b(body, digest_size=32).digest())


def test_a_slot_that_does_not_verify_is_passed_over_and_one_that_does_not_parse_is_damaged(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    [slot] = age_slots(env)
    original = env.vault_bytes()
    data = bytearray(original)
    # The last byte of the slot's age file: its payload's tag. The slot is passed over with its
    # reason, as any slot its identity does not open; the passphrase then finds the change,
    # since the payload authenticates every slot's bytes.
    data[slot["end"] - 1] ^= 1
    rewrite(env, bytes(data))
    passed = env.run("unlock", "-i", identity)
    assert "key slot 3 (age, X25519 %s) is passed over: payload failure" % recipient in passed.err, passed.err
    assert passed.code == 4 and "modified after it was written" in passed.err, passed.err
    # A stanza that is not base64 is an age file that does not parse: damaged key slots (exit 4).
    data = bytearray(original)
    data[slot["start"] + 11 + len(recipient) + 2 + len("age-encryption.org/v1\n-> X25519 ") + 5] = ord("!")
    rewrite(env, bytes(data))
    result = no_passphrase(env, "key", "get", env={"GEMVAULT_AGE_IDENTITY": identity})
    assert result.code == 4 and "key slot 3 (age" in result.err and "does not parse" in result.err, result.err
    # A recipient length past the file is damage at parse time, for any command.
    data = bytearray(original)
    struct.pack_into("<H", data, slot["start"] + 9, 5000)
    rewrite(env, bytes(data))
    listed = no_passphrase(env, "slot", "list")
    assert listed.code == 4 and "key slot 3" in listed.err, listed.err


def test_unlock_i_on_a_vault_without_an_age_slot_says_the_identity_opens_nothing(vault):
    env = vault
    identity, _ = age_keygen(env.age_folder)
    result = env.run("unlock", "-i", identity)
    assert result.code == 0, result.err
    assert "the vault has no age slot, so the age identity in %s opens nothing" % identity in result.err, result.err
    assert "slot add age" in result.err


def test_age_identity_is_kept_in_config_json_never_in_the_vault(vault):
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    refused = env.run("config", "set", "age_identity", identity)
    assert refused.code == 64 and "read before the vault opens" in refused.err and "config set --file age_identity" in refused.err, refused.err
    assert env.run("config", "set", "--file", "age_identity", identity, passphrase=False).code == 0
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"


def test_the_age_identity_setting_is_silent_and_unread_on_a_vault_without_an_age_slot(vault):
    """No age slot: nothing for the setting to open, so its file (missing, or readable by the
    group) is never read nor reported; the same setting on a vault with a slot is refused."""
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    os.chmod(identity, 0o640)
    set_age_identity(env, identity)
    missing = {"GEMVAULT_AGE_IDENTITY": os.path.join(env.age_folder, "missing.txt")}
    for extra in ({}, missing):
        session = PtySession([BIN, "key", "get"], dict(env.vars, **extra))
        session.expect("Passphrase for ")
        session.line(PASSPHRASE)
        assert session.wait() == 0, session.text()
        text = session.text()
        assert GOOD_KEY in text and "identity" not in text and "warning" not in text and "error" not in text, text
    assert env.run("slot", "add", "age", recipient).code == 0
    refused = no_passphrase(env, "key", "get")
    assert refused.code == 1 and "readable or writable by group or others" in refused.err, refused.err
    gone = no_passphrase(env, "key", "get", env=missing)
    assert gone.code == 1 and "does not exist" in gone.err, gone.err


def test_a_passphrase_given_on_purpose_never_reads_the_age_identity_setting(vault):
    """--passphrase-file and --passphrase-fd: the passphrase opens the vault, and the setting's
    file (here missing, or readable by the group) is not needed nor read."""
    env = vault
    identity, recipient = age_keygen(env.age_folder)
    assert env.run("slot", "add", "age", recipient).code == 0
    os.chmod(identity, 0o640)
    set_age_identity(env, identity)
    missing = {"GEMVAULT_AGE_IDENTITY": os.path.join(env.age_folder, "missing.txt")}
    for extra in ({}, missing):
        by_file = env.run("key", "get", env=extra)
        assert by_file.code == 0 and by_file.out == GOOD_KEY + "\n" and by_file.err == "", by_file.err
        read, write = os.pipe()
        os.write(write, (PASSPHRASE + "\n").encode())
        os.close(write)
        try:
            by_fd = env.run("key", "get", "--passphrase-fd", str(read), env=extra, pass_fds=(read,))
        finally:
            os.close(read)
        assert by_fd.code == 0 and by_fd.out == GOOD_KEY + "\n" and by_fd.err == "", by_fd.err
