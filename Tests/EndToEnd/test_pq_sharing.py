"""Post-quantum and tagged age recipients (Docs/sharing.md), cross-checked with age_pq.py, a
separate reader and writer written from the specs in Python (kyber-py, hashlib, cryptography):
it decrypts what gemvault writes to `age1pq1…`, `age1tag1…` and `age1tagpq1…` recipients, and
writes hybrid files gemvault reads with `-i` and an `AGE-SECRET-KEY-PQ-1…` identity. The C2SP
`hybrid*` vectors go through `key import -i` too."""
import hashlib
import json
import os
import zlib

import pytest

import age_pq
from conftest import GOOD_KEY, auth_key
from test_sharing import identity, second, vault_with_key

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "AgeFormatTests", "Fixtures", "age-vectors")


def write(tmp_path, name, data):
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as handle:
        handle.write(data)
    return path


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_a_share_to_a_hybrid_recipient_is_read_by_an_independent_implementation(env, tmp_path):
    vault_with_key(env)
    bob = age_pq.HybridIdentity()
    out = os.path.join(str(tmp_path), "lab.age")
    shared = env.run("key", "share", "lab", "--to", bob.recipient, "-o", out)
    assert shared.code == 0, shared
    data = read(out)
    assert age_pq.stanza_types(data) == ["mlkem768x25519"]
    document = json.loads(age_pq.decrypt(data, [bob]))
    assert document["key"] == GOOD_KEY and document["recipients"] == [bob.recipient]
    # Another hybrid identity does not open it.
    with pytest.raises(AssertionError, match="no identity matches"):
        age_pq.decrypt(data, [age_pq.HybridIdentity()])


def test_tagged_recipients_get_shares_a_hardware_identity_opens(env, tmp_path):
    vault_with_key(env)
    classic, hybrid = age_pq.TagIdentity(hybrid=False), age_pq.TagIdentity(hybrid=True)
    recipients = write(tmp_path, "recipients.txt", "# yubikey\n%s\n# yubikey, post-quantum\n%s\n" % (classic.recipient, hybrid.recipient))
    out = os.path.join(str(tmp_path), "lab.age")
    shared = env.run("key", "share", "lab", "-R", recipients, "-o", out)
    assert shared.code == 0, shared
    data = read(out)
    assert age_pq.stanza_types(data) == ["p256tag", "mlkem768p256tag"]
    for holder in (classic, hybrid):
        assert json.loads(age_pq.decrypt(data, [holder]))["key"] == GOOD_KEY
    listed = json.loads(env.run("key", "share", "lab", "--list", "--json").out)
    assert [entry["recipient"] for entry in listed["recipients"]] == [classic.recipient, hybrid.recipient]
    # --to takes a tag as well, labelled.
    alone = os.path.join(str(tmp_path), "yubikey.age")
    assert env.run("key", "share", "lab", "--to", classic.recipient + "=yubikey", "-o", alone).code == 0
    assert age_pq.stanza_types(read(alone)) == ["p256tag"]
    assert json.loads(age_pq.decrypt(read(alone), [classic]))["recipients"] == [classic.recipient]


def test_a_hybrid_file_written_elsewhere_is_imported_with_a_pq_identity_file(env, tmp_path):
    env.init()
    bob = age_pq.HybridIdentity()
    identity_file = write(tmp_path, "pq-identity.txt", "# created by age_pq.py\n%s\n" % bob.text)
    os.chmod(identity_file, 0o600)
    key = auth_key("hybridfile")
    share = write(tmp_path, "plain.age", age_pq.encrypt_to_hybrid((key + "\n").encode(), bob.recipient))
    stored = env.run("key", "import", share, "work", "--yes", "--no-verify", "-i", identity_file)
    assert stored.code == 0 and "unsigned" in stored.err, stored
    assert env.run("key", "get", "work").out == key + "\n"
    # The vault's own identity is classic: without -i it is not for this vault.
    missed = env.run("key", "import", share, "other", "--yes", "--no-verify")
    assert missed.code == 1 and "not encrypted to this vault" in missed.err


def test_a_signed_share_between_vaults_through_a_pq_identity_file(env, tmp_path):
    alice = vault_with_key(env)
    assert alice.run("secret", "set", "gh", input="ghp_pqToken0123456789abcdefghijklmnopqr\n").code == 0
    bob_vault = second(tmp_path, "bob")
    bob = age_pq.HybridIdentity()
    identity_file = write(tmp_path, "bob-pq.txt", bob.text + "\n")
    os.chmod(identity_file, 0o600)
    recipients = write(tmp_path, "bob.txt", "# bob\n%s\n" % bob.recipient)
    key_share, secret_share = (os.path.join(str(tmp_path), name) for name in ("lab.age", "gh.age"))
    assert alice.run("key", "share", "lab", "-R", recipients, "-o", key_share).code == 0
    shared = alice.run("secret", "share", "gh", "--to", bob.recipient, "-o", secret_share)
    assert shared.code == 0, shared
    assert age_pq.stanza_types(read(secret_share)) == ["mlkem768x25519"]
    imported = bob_vault.run("key", "import", key_share, "--yes", "--no-verify", "-i", identity_file)
    assert imported.code == 0 and identity(alice)["fingerprint"] in imported.err, imported
    assert bob_vault.run("key", "get", "lab").out == GOOD_KEY + "\n"
    taken = bob_vault.run("secret", "import", secret_share, "-i", identity_file)
    assert taken.code == 0, taken
    assert bob_vault.run("secret", "get", "gh").out == "ghp_pqToken0123456789abcdefghijklmnopqr\n"


def test_a_mistyped_pq_recipient_is_refused_before_anything_is_written(env, tmp_path):
    vault_with_key(env)
    bob = age_pq.HybridIdentity()
    broken = bob.recipient[:-1] + ("q" if bob.recipient[-1] != "q" else "p")
    out = os.path.join(str(tmp_path), "lab.age")
    refused = env.run("key", "share", "lab", "--to", broken, "-o", out)
    assert refused.code == 64 and "not a valid age1pq1… recipient: a character is wrong or missing" in refused.err, refused
    assert not os.path.exists(out)


def vectors():
    return sorted(name for name in os.listdir(VECTORS) if "hybrid" in name)


def load_vector(name):
    head, _, body = read(os.path.join(VECTORS, name)).partition(b"\n\n")
    fields, identities = {}, []
    for line in head.decode().split("\n"):
        key, _, value = line.partition(": ")
        fields[key] = value
        if key == "identity":
            identities.append(value)
    return fields, identities, zlib.decompress(body) if fields.get("compressed") == "zlib" else body


@pytest.mark.parametrize("name", vectors())
def test_every_hybrid_age_vector_through_key_import(env, tmp_path, name):
    """The vectors hold no signed share: a success is a plain age file, stored unsigned under the
    name given (with --no-verify gemvault takes its text as the key), and its text has the
    vector's SHA-256; a failure must be the vector's, with nothing stored."""
    env.init()
    fields, identities, data = load_vector(name)
    identity_file = write(tmp_path, "identity.txt", "".join(line + "\n" for line in identities))
    os.chmod(identity_file, 0o600)
    share = write(tmp_path, name + ".age", data)
    result = env.run("key", "import", share, "vector", "--yes", "--no-verify", "-i", identity_file)
    expected = fields["expect"]
    if expected == "success":
        assert result.code == 0 and "unsigned" in result.err, result
        stored = env.run("key", "get", "vector")
        assert stored.code == 0 and hashlib.sha256(stored.out.rstrip("\n").encode()).hexdigest() == fields["payload"]
        return
    if expected == "no match":
        assert result.code == 1 and "not encrypted to this vault" in result.err, result
    else:
        assert result.code == 4 and "(%s:" % expected in result.err, result
    assert env.run("key", "get", "vector").code != 0


def test_a_session_shares_to_a_hybrid_recipient_too(env, tmp_path):
    vault_with_key(env)
    bob = age_pq.HybridIdentity()
    assert env.run("unlock").code == 0
    try:
        out = os.path.join(str(tmp_path), "lab.age")
        shared = env.run("key", "share", "lab", "--to", bob.recipient, "-o", out, passphrase=False)
        assert shared.code == 0, shared
        assert json.loads(age_pq.decrypt(read(out), [bob]))["key"] == GOOD_KEY
    finally:
        env.run("lock", passphrase=False)
