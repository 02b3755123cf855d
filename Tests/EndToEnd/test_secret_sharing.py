"""Sharing a secret for another tool (Docs/sharing.md, Docs/tool-secrets.md): `secret share` and
`secret import` between two vaults, with the key share's checks (signature, recipients, pinned
sender, replay), never mixed with a key's share, read by Debian's real `age`."""
import json
import os
import shutil

import pytest

from conftest import GOOD_KEY
from test_sharing import AGE, age_decrypt, age_identity, identity, second, vault_with_key

pytestmark = pytest.mark.skipif(AGE is None, reason="Debian's age is not installed (./test installs it as root)")

TOKEN = "ghp_sharedToken0123456789abcdefghijklmnop"
NEXT = "ghp_sharedNext01234567890abcdefghijklmnop"


def alice_with_secret(env, value=TOKEN):
    alice = vault_with_key(env)
    assert alice.run("secret", "set", "gh", input=value + "\n").code == 0
    return alice


def test_a_secret_goes_to_a_second_vault_with_pinning_and_replay(env, tmp_path):
    alice = alice_with_secret(env)
    bob = second(tmp_path, "bob")
    bob_id, alice_id = identity(bob), identity(alice)
    first = os.path.join(str(tmp_path), "gh-1.age")
    shared = alice.run("secret", "share", "gh", "--to", bob_id["recipient"], "-o", first)
    assert shared.code == 0 and "serial 1" in shared.err, shared
    assert TOKEN not in shared.out + shared.err
    imported = bob.run("secret", "import", first)
    assert imported.code == 0 and alice_id["fingerprint"] in imported.err and "serial 1" in imported.err, imported
    assert TOKEN not in imported.err
    assert bob.run("secret", "get", "gh").out == TOKEN + "\n"
    # Where Docs/vault-format.md puts them (payload version 10): alice's serial, bob's pin.
    import base64
    import test_vault_format as fmt
    from conftest import PASSPHRASE
    for holder, expected in ((alice, lambda e: e["sent_serial"] == 1 and e["sender"] is None),
                             (bob, lambda e: e["sent_serial"] == 0 and e["sender"] == (alice_id["label"], base64.b64decode(alice_id["signing_key"]), 1))):
        vault = fmt.parse(holder.vault_bytes())
        payload = fmt.unpad(fmt.decrypt(vault, fmt.unwrap(fmt.slot_of(vault, [fmt.PASSPHRASE_SLOT]), PASSPHRASE.encode())))
        secrets = {}
        fmt.decode_payload(payload, secrets=secrets)
        assert expected(secrets["gh"]), secrets["gh"]
    # Its serial is its own: the key 'lab' shared meanwhile does not move it.
    assert alice.run("key", "share", "lab", "--to", bob_id["recipient"], "-o", os.path.join(str(tmp_path), "lab.age")).code == 0
    assert alice.run("secret", "set", "gh", input=NEXT + "\n").code == 0
    second_share = os.path.join(str(tmp_path), "gh-2.age")
    assert "serial 2" in alice.run("secret", "share", "gh", "--to", bob_id["recipient"], "-o", second_share).err
    assert bob.run("secret", "import", second_share).code == 0
    assert bob.run("secret", "get", "gh").out == NEXT + "\n"
    replayed = bob.run("secret", "import", first)
    assert replayed.code == 4 and "replayed" in replayed.err and "--reset-serial" in replayed.err, replayed
    assert bob.run("secret", "get", "gh").out == NEXT + "\n"
    # Mallory, who knows bob's recipient, sends a 'gh' of her own: refused until accepted.
    mallory = second(tmp_path, "mallory")
    assert mallory.run("secret", "set", "gh", input="ghp_mallory\n").code == 0
    forged = os.path.join(str(tmp_path), "forged.age")
    assert mallory.run("secret", "share", "gh", "--to", bob_id["recipient"], "-o", forged).code == 0
    refused = bob.run("secret", "import", forged)
    assert refused.code == 4 and alice_id["fingerprint"] in refused.err and identity(mallory)["fingerprint"] in refused.err, refused
    assert bob.run("secret", "get", "gh").out == NEXT + "\n"
    assert bob.run("secret", "import", forged, "--accept-new-sender").code == 0
    assert bob.run("secret", "get", "gh").out == "ghp_mallory\n"


def test_a_secret_share_is_not_a_key_and_a_key_share_is_not_a_secret(env, tmp_path):
    alice = alice_with_secret(env)
    bob = second(tmp_path, "bob")
    recipient = identity(bob)["recipient"]
    secret_file = os.path.join(str(tmp_path), "gh.age")
    key_file = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("secret", "share", "gh", "--to", recipient, "-o", secret_file).code == 0
    assert alice.run("key", "share", "lab", "--to", recipient, "-o", key_file).code == 0
    as_key = bob.run("key", "import", secret_file, "--yes", "--no-verify")
    assert as_key.code == 4 and "share of a secret" in as_key.err and TOKEN not in as_key.err, as_key
    assert "gh" not in bob.run("key", "list").out
    as_secret = bob.run("secret", "import", key_file)
    assert as_secret.code == 4 and "share of a Gemini key" in as_secret.err and GOOD_KEY not in as_secret.err, as_secret
    assert "lab" not in bob.run("secret", "list").out


def test_a_share_not_addressed_to_this_vault_is_refused_and_age_reads_it(env, tmp_path):
    alice = alice_with_secret(env)
    bob = second(tmp_path, "bob")
    carol_key, carol = age_identity(str(tmp_path))
    out = os.path.join(str(tmp_path), "gh.age")
    assert alice.run("secret", "share", "gh", "--to", carol, "-o", out).code == 0
    document = json.loads(age_decrypt(carol_key, open(out, "rb").read()))
    assert document["gemvault_secret_share"] == 1 and document["secret"] == TOKEN and document["name"] == "gh"
    assert document["recipients"] == [carol] and "key" not in document and document["serial"] == 1
    # Carol passes it on to bob (re-encrypted): it does not name him.
    passed = os.path.join(str(tmp_path), "passed.age")
    import subprocess
    plain = age_decrypt(carol_key, open(out, "rb").read())
    with open(passed, "wb") as handle:
        handle.write(subprocess.run([AGE, "-r", identity(bob)["recipient"]], input=plain, capture_output=True, check=True).stdout)
    refused = bob.run("secret", "import", passed)
    assert refused.code == 4 and "passed it on" in refused.err and TOKEN not in refused.err, refused
    assert "gh" not in bob.run("secret", "list").out
    # A tampered signature field: refused.
    tampered = plain.replace(b'"serial":1', b'"serial":2')
    with open(passed, "wb") as handle:
        handle.write(subprocess.run([AGE, "-r", identity(bob)["recipient"]], input=tampered, capture_output=True, check=True).stdout)
    assert bob.run("secret", "import", passed).code == 4


def test_secret_sharing_through_sessions_the_agent_signs(env, tmp_path):
    alice = alice_with_secret(env)
    bob = second(tmp_path, "bob")
    assert alice.run("unlock").code == 0
    assert bob.run("unlock").code == 0
    try:
        recipient = identity(bob, passphrase=False)["recipient"]
        out = os.path.join(str(tmp_path), "gh.age")
        shared = alice.run("secret", "share", "gh", "--to", recipient, "-o", out, passphrase=False)
        assert shared.code == 0 and "serial 1" in shared.err, shared
        kept = os.path.join(str(tmp_path), "gh-kept.age")
        shutil.copyfile(out, kept)
        imported = bob.run("secret", "import", out, passphrase=False)
        assert imported.code == 0, imported
        assert bob.run("secret", "get", "gh", passphrase=False).out == TOKEN + "\n"
        again = alice.run("secret", "share", "gh", "--to", recipient, "-o", out, "--force", passphrase=False)
        assert "serial 2" in again.err, again
        assert bob.run("secret", "import", out, passphrase=False).code == 0
        replayed = bob.run("secret", "import", kept, passphrase=False)
        assert replayed.code == 4 and "replayed" in replayed.err
    finally:
        alice.run("lock", passphrase=False)
        bob.run("lock", passphrase=False)


def test_a_share_never_replaces_your_own_secret_unasked(env, tmp_path):
    """Anyone who knows your recipient can send a share: over a secret you set yourself it is
    refused unless --replace."""
    bob = second(tmp_path, "bob")
    assert bob.run("secret", "set", "gh", input=TOKEN + "\n").code == 0
    bob_id = identity(bob)
    mallory = second(tmp_path, "mallory")
    assert mallory.run("secret", "set", "gh", input=NEXT + "\n").code == 0
    forged = os.path.join(str(tmp_path), "forged.age")
    assert mallory.run("secret", "share", "gh", "--to", bob_id["recipient"], "-o", forged).code == 0
    refused = bob.run("secret", "import", forged)
    assert refused.code == 4 and "your own" in refused.err and "--replace" in refused.err, refused
    assert bob.run("secret", "get", "gh").out == TOKEN + "\n"
    taken = bob.run("secret", "import", forged, "--replace")
    assert taken.code == 0, taken
    assert bob.run("secret", "get", "gh").out == NEXT + "\n"
