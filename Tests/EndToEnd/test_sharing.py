"""Sharing a key (Docs/sharing.md): identities, `key share` to real age and ssh keys, `key import`
with sender pinning, all against Debian's real `age`, `age-keygen` and `ssh-keygen`."""
import base64
import json
import os
import shutil
import subprocess

import pytest

from conftest import GOOD_KEY, PASSPHRASE, Env, auth_key

AGE = shutil.which("age")
pytestmark = pytest.mark.skipif(AGE is None, reason="Debian's age is not installed (./test installs it as root)")


def vault_with_key(env, name="lab", key=GOOD_KEY):
    env.init()
    assert env.run("key", "set", name, input=key).code == 0
    return env


def identity(env, **kw):
    result = env.run("identity", "--json", **kw)
    assert result.code == 0, result
    return json.loads(result.out)


def age_identity(folder):
    path = os.path.join(folder, "age-id.txt")
    counter = 1
    while os.path.exists(path):  # another identity in the same folder
        counter += 1
        path = os.path.join(folder, "age-id-%d.txt" % counter)
    subprocess.run(["age-keygen", "-o", path], check=True, capture_output=True)
    recipient = subprocess.run(["age-keygen", "-y", path], check=True, capture_output=True, text=True).stdout.strip()
    return path, recipient


def age_decrypt(identity_path, data):
    result = subprocess.run([AGE, "-d", "-i", identity_path], input=data, capture_output=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def second(tmp_path, name):
    other = Env(tmp_path / name)
    other.init()
    return other


def alice_shares_lab_with_bob(env, tmp_path):
    """Alice's vault with the key 'lab', bob's vault, and the share alice wrote for bob."""
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    shared = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", identity(bob)["recipient"], "-o", shared).code == 0
    return alice, bob, shared


def test_the_identity_is_made_once_and_age_accepts_its_recipient(env):
    env.init()
    first = identity(env)
    assert first["recipient"].startswith("age1") and first["fingerprint"].startswith("SHA256:")
    assert first["label"] == "%s@%s" % (os.environ.get("USER") or __import__("pwd").getpwuid(os.geteuid()).pw_name, os.uname().nodename)
    assert identity(env) == first
    # Real age encrypts to it.
    made = subprocess.run([AGE, "-r", first["recipient"]], input=b"x", capture_output=True)
    assert made.returncode == 0, made.stderr
    text = env.run("identity")
    assert first["recipient"] in text.out and first["fingerprint"] in text.out
    relabelled = env.run("identity", "--label", "alice@lab", "--json")
    assert relabelled.code == 0 and json.loads(relabelled.out)["label"] == "alice@lab"
    assert identity(env)["recipient"] == first["recipient"]
    bad = env.run("identity", "--label", "two\nlines")
    assert bad.code == 64 and "control characters" in bad.err


def test_a_share_is_a_signed_age_file_real_age_reads(env, tmp_path):
    vault_with_key(env)
    me = identity(env)
    id_path, recipient = age_identity(str(tmp_path))
    out = os.path.join(str(tmp_path), "lab.age")
    shared = env.run("key", "share", "lab", "--to", recipient, "-o", out)
    assert shared.code == 0, shared
    assert GOOD_KEY not in shared.out + shared.err
    assert os.stat(out).st_mode & 0o777 == 0o644
    with open(out, "rb") as handle:
        data = handle.read()
    assert data.startswith(b"age-encryption.org/v1\n") and GOOD_KEY.encode() not in data
    document = json.loads(age_decrypt(id_path, data))
    assert document["gemvault_share"] == 2 and document["name"] == "lab" and document["key"] == GOOD_KEY
    assert document["recipients"] == [recipient]
    assert document["kind"] == "auth" and document["google_key"] is None and document["serial"] == 1
    assert document["from"] == {"label": me["label"], "signing_key": me["signing_key"]}
    assert len(base64.b64decode(document["signature"])) == 64
    # Nothing over an existing file without --force; --mode 600 keeps it private.
    again = env.run("key", "share", "lab", "--to", recipient, "-o", out)
    assert again.code == 1 and "--force" in again.err
    forced = env.run("key", "share", "lab", "--to", recipient, "-o", out, "--force", "--mode", "600")
    assert forced.code == 0, forced
    assert os.stat(out).st_mode & 0o777 == 0o600
    with open(out, "rb") as handle:
        assert json.loads(age_decrypt(id_path, handle.read()))["serial"] == 2


def test_a_share_to_an_ssh_key_is_read_by_age_with_that_key_and_armor_goes_to_stdout(env, tmp_path):
    vault_with_key(env)
    key_path = os.path.join(str(tmp_path), "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bob@laptop", "-f", key_path], check=True)
    shared = env.run("key", "share", "lab", "--to", key_path + ".pub", "--armor")
    assert shared.code == 0, shared
    assert shared.out.startswith("-----BEGIN AGE ENCRYPTED FILE-----\n")
    assert json.loads(age_decrypt(key_path, shared.out.encode()))["key"] == GOOD_KEY
    listed = json.loads(env.run("key", "share", "lab", "--list", "--json").out)
    assert listed["serial"] == 1 and len(listed["recipients"]) == 1
    entry = listed["recipients"][0]
    assert entry["recipient"].startswith("ssh-ed25519 ") and entry["label"] == "bob@laptop" and entry["path"] is None


def test_bad_recipients_are_refused_before_anything_is_written(env, tmp_path):
    vault_with_key(env)
    out = os.path.join(str(tmp_path), "never.age")
    bad = env.run("key", "share", "lab", "--to", "age1notarecipient", "-o", out)
    assert bad.code == 64 and "--to" in bad.err and not os.path.exists(out)
    recipients = os.path.join(str(tmp_path), "team.txt")
    _, good = age_identity(str(tmp_path))
    with open(recipients, "w") as handle:
        handle.write("# the lab\n%s\n\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ bob\n" % good)
    refused = env.run("key", "share", "lab", "-R", recipients, "-o", out)
    assert refused.code == 64 and "team.txt line 4" in refused.err and "ssh-rsa" in refused.err
    assert not os.path.exists(out)
    assert json.loads(env.run("key", "share", "lab", "--list", "--json").out)["recipients"] == []


def test_a_share_is_never_written_over_a_link(env, tmp_path):
    vault_with_key(env)
    _, recipient = age_identity(str(tmp_path))
    target = os.path.join(str(tmp_path), "precious")
    with open(target, "w") as handle:
        handle.write("keep me\n")
    link = os.path.join(str(tmp_path), "share.age")
    os.symlink(target, link)
    result = env.run("key", "share", "lab", "--to", recipient, "-o", link, "--force")
    assert result.code == 1 and "link" in result.err
    with open(target) as handle:
        assert handle.read() == "keep me\n"


def test_import_between_two_vaults_with_pinning_and_replay(env, tmp_path):
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    bob_id = identity(bob)
    share1 = os.path.join(str(tmp_path), "lab-1.age")
    assert alice.run("key", "share", "lab", "--to", bob_id["recipient"], "-o", share1).code == 0
    without_yes = bob.run("key", "import", share1, "--no-verify")
    assert without_yes.code == 64 and "--yes" in without_yes.err
    imported = bob.run("key", "import", share1, "--yes", "--no-verify", "--json")
    assert imported.code == 0, imported
    report = json.loads(imported.out)
    alice_id = identity(alice)
    assert report["name"] == "lab" and report["signed"] and report["fingerprint"] == alice_id["fingerprint"] and report["serial"] == 1
    assert alice_id["fingerprint"] in imported.err and "AQ.A" in imported.err and GOOD_KEY not in imported.err
    assert bob.run("key", "get", "lab").out == GOOD_KEY + "\n"

    # A newer share from alice is taken; the older one replayed afterwards is refused. (The
    # second share rewrites the first file too, which its reader may follow: the old bytes are kept aside.)
    old_copy = os.path.join(str(tmp_path), "lab-1-old.age")
    shutil.copyfile(share1, old_copy)
    share2 = os.path.join(str(tmp_path), "lab-2.age")
    assert alice.run("key", "share", "lab", "--to", bob_id["recipient"], "-o", share2).code == 0
    assert bob.run("key", "import", share2, "--yes", "--no-verify").code == 0
    replayed = bob.run("key", "import", old_copy, "--yes", "--no-verify")
    assert replayed.code == 4 and "replayed" in replayed.err

    # Mallory, who knows bob's recipient, sends a "lab" key of her own: refused, both fingerprints named.
    mallory = second(tmp_path, "mallory")
    assert mallory.run("key", "set", "lab", input=auth_key("mallory")).code == 0
    forged = os.path.join(str(tmp_path), "forged.age")
    assert mallory.run("key", "share", "lab", "--to", bob_id["recipient"], "-o", forged).code == 0
    refused = bob.run("key", "import", forged, "--yes", "--no-verify")
    assert refused.code == 4 and alice_id["fingerprint"] in refused.err and identity(mallory)["fingerprint"] in refused.err
    assert bob.run("key", "get", "lab").out == GOOD_KEY + "\n"
    # An unsigned file for the pinned name is refused too.
    plain = subprocess.run([AGE, "-r", bob_id["recipient"]], input=(auth_key("plain") + "\n").encode(), capture_output=True).stdout
    plain_path = os.path.join(str(tmp_path), "plain.age")
    with open(plain_path, "wb") as handle:
        handle.write(plain)
    unsigned = bob.run("key", "import", plain_path, "lab", "--yes", "--no-verify")
    assert unsigned.code == 4 and "unsigned" in unsigned.err
    accepted = bob.run("key", "import", forged, "--yes", "--no-verify", "--accept-new-sender")
    assert accepted.code == 0 and bob.run("key", "get", "lab").out == auth_key("mallory") + "\n"


def test_a_plain_age_file_is_imported_as_unsigned_and_needs_a_name(env, tmp_path):
    env.init()
    me = identity(env)
    key = auth_key("plainfile")
    data = subprocess.run([AGE, "-r", me["recipient"], "-a"], input=(key + "\n").encode(), capture_output=True, check=True).stdout
    path = os.path.join(str(tmp_path), "plain.age")
    with open(path, "wb") as handle:
        handle.write(data)
    nameless = env.run("key", "import", path, "--yes", "--no-verify")
    assert nameless.code == 64 and "NAME" in nameless.err
    stored = env.run("key", "import", path, "work", "--yes", "--no-verify")
    assert stored.code == 0 and "unsigned" in stored.err
    assert env.run("key", "get", "work").out == key + "\n"


def test_import_with_an_ssh_key_or_an_age_identity_file(env, tmp_path):
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    key_path = os.path.join(str(tmp_path), "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key_path], check=True)
    id_path, recipient = age_identity(str(tmp_path))
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", key_path + ".pub", "--to", recipient, "-o", out).code == 0
    assert bob.run("key", "import", out, "--yes", "--no-verify", "-i", key_path).code == 0
    assert bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path).code == 0
    # Not to bob's own identity: said so, nothing stored.
    other = second(tmp_path, "carol")
    missed = other.run("key", "import", out, "--yes", "--no-verify")
    assert missed.code == 1 and "not encrypted to this vault" in missed.err
    assert other.run("key", "get", "lab").code != 0


def test_a_passphrase_protected_ssh_key_asks_its_passphrase_on_the_terminal(env, tmp_path):
    """ssh-keygen's default encryption (bcrypt_pbkdf, AES-256-CTR): the passphrase is asked on
    the terminal with echo off, three tries, then exit 3; without a terminal, exit 1."""
    from conftest import BIN
    from ptyrun import PtySession
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    key_path = os.path.join(str(tmp_path), "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "ssh key phrase", "-f", key_path], check=True)
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", key_path + ".pub", "-o", out).code == 0

    headless = bob.run("key", "import", out, "--yes", "--no-verify", "-i", key_path)
    assert headless.code == 1 and "protected by a passphrase" in headless.err and "no terminal" in headless.err
    assert bob.run("key", "get", "lab").code != 0
    # Another key type is refused before a passphrase could be asked; a damaged key is named as such.
    rsa_path = os.path.join(str(tmp_path), "id_rsa")
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "phrase", "-f", rsa_path], check=True)
    rsa = bob.run("key", "import", out, "--yes", "--no-verify", "-i", rsa_path)
    assert rsa.code == 1 and "only ssh-ed25519 keys" in rsa.err and "protected by a passphrase" not in rsa.err
    broken_path = os.path.join(str(tmp_path), "id_broken")
    with open(key_path) as source, open(broken_path, "w") as target:
        lines = source.read().splitlines()
        target.write("\n".join(lines[:3] + lines[-1:]) + "\n")
    os.chmod(broken_path, 0o600)
    broken = bob.run("key", "import", out, "--yes", "--no-verify", "-i", broken_path)
    assert broken.code == 4 and "the ssh key " + broken_path + " is damaged" in broken.err

    def typed(answers):
        s = PtySession([BIN, "key", "import", out, "--yes", "--no-verify", "-i", key_path, "--passphrase-file", bob.passfile], bob.vars)
        seen = ""
        try:
            for answer in answers:
                s.expect(r"Passphrase for the ssh key [^\n]*: ")
                seen += s.text()
                s.mark()
                s.line(answer)
            code = s.wait(timeout=30)
            return code, seen + s.text()
        finally:
            s.close()

    code, screen = typed(["not it", "no", "nope"])
    assert code == 3 and "wrong passphrase for the ssh key" in screen and "nothing was stored" in screen
    assert screen.count("try again") == 2 and "not it" not in screen
    assert bob.run("key", "get", "lab").code != 0
    code, screen = typed(["wrong once", "ssh key phrase"])
    assert code == 0, screen
    assert "ssh key phrase" not in screen
    assert bob.run("key", "get", "lab").out == GOOD_KEY + "\n"


def test_a_damaged_share_is_refused_with_exit_4_and_nothing_stored(env, tmp_path):
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", identity(bob)["recipient"], "-o", out).code == 0
    with open(out, "rb") as handle:
        data = bytearray(handle.read())
    mac = data.index(b"\n--- ") + 6
    for offset in (len(data) - 5, mac):
        damaged = bytearray(data)
        damaged[offset] ^= 0x01
        path = os.path.join(str(tmp_path), "damaged.age")
        with open(path, "wb") as handle:
            handle.write(damaged)
        result = bob.run("key", "import", path, "--yes", "--no-verify")
        assert result.code == 4, result
        assert "nothing was stored" in result.err and len(result.err.strip().splitlines()) == 1
    truncated = os.path.join(str(tmp_path), "short.age")
    with open(truncated, "wb") as handle:
        handle.write(bytes(data[:-20]))
    assert bob.run("key", "import", truncated, "--yes", "--no-verify").code == 4
    assert bob.run("key", "get", "lab").code != 0


def test_import_checks_the_key_with_gemini_unless_no_verify(api, tmp_path):
    alice = vault_with_key(api, key=auth_key("BAD-revoked"))
    bob = second(tmp_path, "bob")
    bob.vars["GEMVAULT_ENDPOINT"] = api.vars["GEMVAULT_ENDPOINT"]
    out = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", identity(bob)["recipient"], "-o", out).code == 0
    refused = bob.run("key", "import", out, "--yes")
    assert refused.code == 6 and bob.run("key", "get", "lab").code != 0
    assert any("/models" in r["path"] for r in api.server.requests())


def test_sharing_through_a_session_needs_no_passphrase(env, tmp_path):
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    assert alice.run("unlock").code == 0
    assert bob.run("unlock").code == 0
    try:
        recipient = identity(bob, passphrase=False)["recipient"]
        out = os.path.join(str(tmp_path), "lab.age")
        shared = alice.run("key", "share", "lab", "--to", recipient, "-o", out, passphrase=False)
        assert shared.code == 0, shared
        imported = bob.run("key", "import", out, "--yes", "--no-verify", passphrase=False)
        assert imported.code == 0, imported
        assert bob.run("key", "get", "lab", passphrase=False).out == GOOD_KEY + "\n"
    finally:
        alice.run("lock", passphrase=False)
        bob.run("lock", passphrase=False)


def key_seen_by_exec(env):
    result = env.run("--passphrase-file", env.passfile, "exec", "--", "printenv", "GEMINI_API_KEY", passphrase=False)
    assert result.code == 0, result
    return result.out.strip(), result.err


def test_a_followed_share_brings_the_next_key_and_a_swapped_or_old_file_is_refused(env, tmp_path):
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    bob_id = identity(bob)
    shared = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", bob_id["recipient"], "-o", shared).code == 0
    first = os.path.join(str(tmp_path), "lab-serial-1.age")
    shutil.copyfile(shared, first)
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    assert bob.run("config", "set", "key", "lab").code == 0
    assert key_seen_by_exec(bob)[0] == GOOD_KEY

    # Alice changes the key and shares again to everyone recorded (no --to): bob's next use takes it, saying so once.
    new_key = auth_key("second-value")
    assert alice.run("key", "set", "lab", input=new_key).code == 0
    again = alice.run("key", "share", "lab")
    assert again.code == 0 and shared in again.err, again
    seen, said = key_seen_by_exec(bob)
    assert seen == new_key and "took serial 2 of 'lab'" in said
    seen, said = key_seen_by_exec(bob)
    assert seen == new_key and "took serial" not in said
    assert bob.run("key", "get", "lab").out == new_key + "\n"

    # Mallory, who can write the shared folder, swaps in her own share: warned once, the key stays.
    mallory = second(tmp_path, "mallory")
    assert mallory.run("key", "set", "lab", input=auth_key("mallory")).code == 0
    swapped = os.path.join(str(tmp_path), "swap.age")
    assert mallory.run("key", "share", "lab", "--to", bob_id["recipient"], "-o", swapped).code == 0
    os.replace(swapped, shared)
    seen, said = key_seen_by_exec(bob)
    assert seen == new_key and "not taken" in said and "pinned sender" in said
    # An old share of alice's put back is a replay: key sync reports it, exit 4.
    shutil.copyfile(first, shared)
    synced = bob.run("key", "sync")
    assert synced.code == 4 and "lab: not taken" in synced.out and "replay" in synced.out
    assert key_seen_by_exec(bob)[0] == new_key
    unchanged = bob.run("key", "sync", "lab")
    assert unchanged.code == 0 and "lab: unchanged" in unchanged.out


def test_follow_needs_a_signed_share_from_a_file(env, tmp_path):
    env.init()
    me = identity(env)
    data = subprocess.run([AGE, "-r", me["recipient"]], input=(auth_key("plain") + "\n").encode(), capture_output=True, check=True).stdout
    path = os.path.join(str(tmp_path), "plain.age")
    with open(path, "wb") as handle:
        handle.write(data)
    refused = env.run("key", "import", path, "work", "--yes", "--no-verify", "--follow")
    assert refused.code == 64 and "signed" in refused.err
    assert env.run("key", "sync").code == 0


def test_a_rotation_by_hand_shares_the_new_value_to_every_recorded_file(env, tmp_path):
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    assert bob.run("config", "set", "key", "lab").code == 0
    new_key = auth_key("rotated-by-hand")
    rotated = alice.run("key", "rotate", "lab", "--no-verify", input=new_key)
    assert rotated.code == 0 and "serial 2" in rotated.err and shared in rotated.err, rotated
    assert key_seen_by_exec(bob)[0] == new_key


def test_a_share_file_that_cannot_be_rewritten_during_a_rotation_is_warned_about(env, tmp_path):
    """A second file for the same recipient is recorded beside the first (its reader may follow
    either); one replaced by a link is not followed, and says so; the other still gets the new
    key, and the rotation itself succeeds."""
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    second_copy = os.path.join(str(tmp_path), "lab-copy.age")
    assert alice.run("key", "share", "lab", "--to", identity(bob)["recipient"], "-o", second_copy).code == 0
    listed = json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"]
    assert sorted(entry["path"] for entry in listed) == sorted([shared, second_copy])
    assert "1 recipient" in alice.run("key", "which", "lab").out + alice.run("key", "list").out
    decoy = os.path.join(str(tmp_path), "decoy")
    with open(decoy, "w") as handle:
        handle.write("not a share\n")
    os.unlink(shared)
    os.symlink(decoy, shared)
    new_key = auth_key("rotated-past-a-link")
    rotated = alice.run("key", "rotate", "lab", "--no-verify", input=new_key)
    assert rotated.code == 0, rotated
    assert shared + ", where 'lab' was shared before, is not a regular file now; it was not rewritten" in rotated.err
    assert "wrote " + second_copy in rotated.err
    assert open(decoy).read() == "not a share\n" and os.path.islink(shared)
    assert bob.run("key", "import", second_copy, "--yes", "--no-verify").code == 0
    assert bob.run("key", "get", "lab").out == new_key + "\n"


def test_rotate_create_shares_the_new_key_before_it_deletes_the_old_one(env, tmp_path):
    from test_rotation import FakeGoogle, rotate, setup, vault_keys
    google = FakeGoogle(str(tmp_path))
    try:
        alice = setup(env, google, "metadata")
        bob = second(tmp_path, "bob")
        shared = os.path.join(str(tmp_path), "default.age")
        assert alice.run("key", "share", "default", "--to", identity(bob)["recipient"], "-o", shared).code == 0
        assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
        result = rotate(alice)
        assert result.code == 0, result
        assert result.err.index("shared the new value of 'default' (serial 2)") < result.err.index("deleted the old key")
        assert shared in result.err
        new_key = vault_keys(alice)[0]["default"]
        assert key_seen_by_exec(bob)[0] == new_key
        # The share names the key at Google; the importer shows it but keeps none of it, so its
        # own rotation would look the key up rather than delete what a sender named.
        assert json.loads(bob.run("key", "list", "--json").out)["keys"][0]["google_key"] is None
        # --undo brings the old key back, and it too goes to the recipients first.
        undone = alice.run("key", "rotate", "--undo")
        assert undone.code == 0 and "shared the new value of 'default' (serial 3)" in undone.err, undone
        assert key_seen_by_exec(bob)[0] == vault_keys(alice)[0]["default"] != new_key
    finally:
        google.stop()


def test_revoking_rotates_the_key_shares_it_with_the_others_and_not_with_the_revoked(env, tmp_path):
    from test_rotation import FakeGoogle, OLD_NAME, setup, vault_keys
    google = FakeGoogle(str(tmp_path))
    try:
        alice = setup(env, google, "metadata")
        bob, carol = second(tmp_path, "bob"), second(tmp_path, "carol")
        bob_file, carol_file = os.path.join(str(tmp_path), "bob.age"), os.path.join(str(tmp_path), "carol.age")
        bob_recipient = identity(bob)["recipient"]
        assert alice.run("key", "share", "default", "--to", bob_recipient, "-o", bob_file).code == 0
        assert alice.run("key", "share", "default", "--to", identity(carol)["recipient"], "-o", carol_file).code == 0
        for person, path in ((bob, bob_file), (carol, carol_file)):
            assert person.run("key", "import", path, "--yes", "--no-verify", "--follow").code == 0
        with open(bob_file, "rb") as handle:
            bob_before = handle.read()

        alice.advance_clock()
        revoked = alice.run("key", "share", "default", "--revoke", bob_recipient)
        assert revoked.code == 0, revoked
        assert "25 minutes" in revoked.err and "no longer receives" in revoked.err
        new_key = vault_keys(alice)[0]["default"]
        assert google.key(OLD_NAME)["deleteTime"]
        # Carol follows her file to the new key; bob's file is not rewritten for him: it is removed.
        assert key_seen_by_exec(carol)[0] == new_key
        assert not os.path.exists(bob_file) and "removed " + bob_file in revoked.err
        assert key_seen_by_exec(bob)[0] != new_key
        # Carol passing her file on to bob, where he follows it, gives him nothing: it names her.
        with open(carol_file, "rb") as handle:
            carol_share = handle.read()
        assert bob_before != carol_share
        recipients = json.loads(alice.run("key", "share", "default", "--list", "--json").out)["recipients"]
        assert [r["recipient"] for r in recipients] == [identity(carol)["recipient"]]
    finally:
        google.stop()


def test_revoking_without_google_refuses_unless_no_rotate(env, tmp_path):
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    recipient = identity(bob)["recipient"]
    assert alice.run("key", "share", "lab", "--to", recipient, "-o", os.path.join(str(tmp_path), "lab.age")).code == 0
    # No Google credential here: the key cannot be rotated, so nothing changes.
    refused = alice.run("key", "share", "lab", "--revoke", recipient, env={"GCE_METADATA_HOST": "127.0.0.1:9"})
    assert refused.code == 1 and "no Google credentials" in refused.err and "--no-rotate" in refused.err, refused
    assert len(json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"]) == 1
    dropped = alice.run("key", "share", "lab", "--revoke", recipient, "--no-rotate")
    assert dropped.code == 0 and "still works" in dropped.err
    assert json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"] == []
    unknown = alice.run("key", "share", "lab", "--revoke", recipient, "--no-rotate")
    assert unknown.code == 1 and "not a recipient" in unknown.err


def test_key_list_and_key_which_say_who_a_key_went_to_and_came_from(env, tmp_path):
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    listed = json.loads(alice.run("key", "list", "--json").out)["keys"][0]
    assert listed["recipients"] == 1 and listed["shared_by"] is None
    assert "shared with 1 recipient" in alice.run("key", "list").out
    assert bob.run("key", "import", shared, "--yes", "--no-verify").code == 0
    fingerprint = identity(alice)["fingerprint"]
    got = json.loads(bob.run("key", "list", "--json").out)["keys"][0]
    assert got["recipients"] == 0 and fingerprint in got["shared_by"]
    which = bob.run("key", "which", "--key", "lab", "--json")
    assert which.code == 0 and fingerprint in json.loads(which.out)["sharing"]
    assert ("from " in bob.run("key", "which", "--key", "lab").out) and fingerprint in bob.run("key", "which", "--key", "lab").out


def test_init_makes_the_identity_and_stores_its_secret_in_the_payload(env):
    import test_vault_format as fmt
    env.init()
    with open(env.vault, "rb") as handle:
        vault = fmt.parse(handle.read())
    data_key = fmt.unwrap(fmt.slot_of(vault, (fmt.PASSPHRASE_SLOT,)), PASSPHRASE.encode())
    sharing = {}
    fmt.decode_payload(fmt.unpad(fmt.decrypt(vault, data_key)), sharing=sharing)
    assert sharing["identity"] is not None and len(sharing["identity"][0]) == 32
    # The recipient printed is the X25519 public key of the stored secret.
    import nacl.bindings
    public = nacl.bindings.crypto_scalarmult_base(sharing["identity"][0])
    me = identity(env)
    assert me["label"] == sharing["identity"][2]
    assert bech32_data(me["recipient"]) == public


def bech32_data(text):
    alphabet = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
    values = [alphabet.index(c) for c in text[text.rindex("1") + 1:-6]]
    bits, acc, out = 0, 0, []
    for value in values:
        acc = (acc << 5) | value
        bits += 5
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xff)
    return bytes(out)


def test_on_a_terminal_import_shows_the_share_and_asks(env, tmp_path):
    from conftest import BIN
    from ptyrun import PtySession
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    fingerprint = identity(alice)["fingerprint"]

    def answer(word):
        s = PtySession([BIN, "key", "import", shared, "--no-verify", "--passphrase-file", bob.passfile], bob.vars)
        try:
            s.expect(r"Store it as 'lab'\? \[y/N\]")
            s.line(word)
            if word == "y":
                # Bob's first key, not called 'default': offered as the default (test_newcomer.py).
                s.expect(r"Make 'lab' the key commands use by default\? \[Y/n\]")
                s.line("n")
            return s.wait(), s.text()
        finally:
            s.close()

    code, screen = answer("n")
    assert code == 1 and "nothing was stored" in screen and fingerprint in screen and "AQ.A" in screen and GOOD_KEY not in screen
    assert bob.run("key", "get", "lab").code != 0
    code, screen = answer("y")
    assert code == 0 and bob.run("key", "get", "lab").out == GOOD_KEY + "\n"


def test_the_import_screen_fits_a_60_column_window(env, tmp_path):
    from conftest import BIN
    from ptyrun import PtySession
    from vt import widest_line
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    s = PtySession([BIN, "key", "import", shared, "--no-verify", "--passphrase-file", bob.passfile], bob.vars, columns=60)
    try:
        s.expect(r"Store it as 'lab'\? \[y/N\]")
        s.line("n")
        assert s.wait() == 1
        assert widest_line(s.raw()) <= 60, s.raw()
        # The fingerprint is wider than the room beside its label: it alone is cut, at the edge.
        assert "signingkey" + identity(alice)["fingerprint"] in "".join(s.text().split())
    finally:
        s.close()


def signed_share(document, seed):
    """A share document signed as Docs/sharing.md says: the context line, then each field
    length-prefixed (u32 big-endian), signed with Ed25519 (PyNaCl)."""
    import struct
    import nacl.bindings
    public, secret = nacl.bindings.crypto_sign_seed_keypair(seed)
    document = dict(document, **{"from": dict(document["from"], signing_key=base64.b64encode(public).decode())})
    google = document["google_key"] or {"resource": "", "service_account": ""}
    fields = [document["name"], document["key"], document["kind"], google["resource"], google["service_account"],
              str(document["serial"]), str(document["created"]), document["from"]["label"]]
    recipients = document.get("recipients")
    prefix = b"gemvault-share-v%d\n" % document["gemvault_share"]
    signed = prefix + b"".join(struct.pack(">I", len(f.encode())) + f.encode() for f in fields)
    signed += struct.pack(">I", 32) + public
    if recipients is not None:
        # Format 2: the recipients' count in decimal, then each, length-prefixed like the rest.
        signed += b"".join(struct.pack(">I", len(f.encode())) + f.encode() for f in [str(len(recipients))] + recipients)
    signature = nacl.bindings.crypto_sign(signed, secret)[:64]
    return dict(document, signature=base64.b64encode(signature).decode())


def test_the_documented_signature_is_what_gemvault_checks(env, tmp_path):
    """A share made outside gemvault from Docs/sharing.md alone (PyNaCl, real age) is taken;
    one whose sender label holds terminal controls is refused as not what a writer makes."""
    env.init()
    me = identity(env)
    document = {"gemvault_share": 1, "name": "outside", "key": auth_key("outside"), "kind": "auth", "google_key": None,
                "serial": 1, "created": 1764900000, "from": {"label": "made@outside"}}

    def import_document(doc, name, *args):
        data = subprocess.run([AGE, "-r", me["recipient"]], input=json.dumps(doc).encode(), capture_output=True, check=True).stdout
        path = os.path.join(str(tmp_path), name + ".age")
        with open(path, "wb") as handle:
            handle.write(data)
        return env.run("key", "import", path, "--yes", "--no-verify", *args)

    # Format 1 says not whom it was for: a new name of it is taken only with --accept-unlisted.
    taken = import_document(signed_share(document, b"\x01" * 32), "good", "--accept-unlisted")
    assert taken.code == 0 and "made@outside" in taken.err, taken
    assert env.run("key", "get", "outside").out == auth_key("outside") + "\n"
    tampered = signed_share(document, b"\x01" * 32)
    tampered["serial"] = 2
    refused = import_document(tampered, "tampered")
    assert refused.code == 4 and "signature does not verify" in refused.err
    hostile = dict(document, **{"from": {"label": "alice\u009b31m\u202emal"}})
    controls = import_document(signed_share(hostile, b"\x02" * 32), "controls")
    assert controls.code == 4 and "\u009b" not in controls.err and "\u202e" not in controls.err
    # Format 2 signs its recipients: one naming this vault is taken; one naming only someone
    # else was passed on, and is refused.
    second_format = dict(document, gemvault_share=2, name="outside2", recipients=[me["recipient"]], **{"from": {"label": "made@elsewhere"}})
    listed = import_document(signed_share(second_format, b"\x03" * 32), "listed")
    assert listed.code == 0, listed
    elsewhere = dict(second_format, name="outside3", recipients=[age_identity(str(tmp_path))[1]])
    unlisted = import_document(signed_share(elsewhere, b"\x03" * 32), "unlisted")
    assert unlisted.code == 4 and "passed it on" in unlisted.err and "--accept-unlisted" in unlisted.err
    swapped = signed_share(second_format, b"\x03" * 32)
    swapped["recipients"] = [age_identity(str(tmp_path))[1], me["recipient"]]
    assert import_document(swapped, "swapped").code == 4


def test_a_label_with_terminal_controls_is_refused(env):
    env.init()
    for label in ("alice\u009b31m", "mal\u202elam", "two\nlines"):
        refused = env.run("identity", "--label", label)
        assert refused.code == 64 and "control characters" in refused.err


def test_a_followed_share_is_taken_through_a_session_too(env, tmp_path):
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    assert bob.run("config", "set", "key", "lab").code == 0
    assert bob.run("unlock").code == 0
    try:
        new_key = auth_key("through-session")
        assert alice.run("key", "set", "lab", input=new_key).code == 0
        assert alice.run("key", "share", "lab").code == 0
        ran = bob.run("exec", "--", "printenv", "GEMINI_API_KEY", passphrase=False)
        assert ran.code == 0 and ran.out.strip() == new_key and "took serial 2" in ran.err, ran
        assert bob.run("key", "get", "lab", passphrase=False).out == new_key + "\n"
    finally:
        bob.run("lock", passphrase=False)


def test_a_followed_file_takes_only_a_share_of_its_own_name(env, tmp_path):
    """Someone who can write the shared folder copies another share of the same sender over the
    followed file: it is refused, and the key stays (found by an attacker's review)."""
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    assert alice.run("key", "set", "prod", input=auth_key("prod-value")).code == 0
    prod = os.path.join(str(tmp_path), "prod.age")
    assert alice.run("key", "share", "prod", "--to", identity(bob)["recipient"], "-o", prod).code == 0
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    shutil.copyfile(prod, shared)
    synced = bob.run("key", "sync", "lab")
    assert synced.code == 4 and "of 'prod', not of 'lab'" in synced.out, synced
    assert bob.run("key", "get", "lab").out == GOOD_KEY + "\n"
    # Following keeps the share's own name, and needs a file, not a descriptor.
    renamed = bob.run("key", "import", prod, "other", "--yes", "--no-verify", "--follow")
    assert renamed.code == 64 and "own name" in renamed.err
    with open(prod, "rb") as handle:
        piped = bob.run("key", "import", "/dev/stdin", "--yes", "--no-verify", "--follow", input=handle.read().decode("latin-1"))
    assert piped.code == 64 and "descriptor" in piped.err


def test_sharing_an_imported_key_on_does_not_move_the_senders_serial(env, tmp_path):
    """Bob passes alice's key on to carol; alice's next share still reaches bob (found by an
    attacker's review: one counter served both roles)."""
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    carol = second(tmp_path, "carol")
    onward = os.path.join(str(tmp_path), "onward.age")
    for _ in range(3):
        assert bob.run("key", "share", "lab", "--to", identity(carol)["recipient"], "-o", onward, "--force").code == 0
    new_key = auth_key("after-onward")
    assert alice.run("key", "set", "lab", input=new_key).code == 0
    assert alice.run("key", "share", "lab").code == 0
    synced = bob.run("key", "sync", "lab")
    assert synced.code == 0 and "took serial 2" in synced.out, synced
    assert bob.run("key", "get", "lab").out == new_key + "\n"
    assert json.loads(bob.run("key", "share", "lab", "--list", "--json").out)["serial"] == 3


def test_naming_a_private_key_as_a_recipient_is_refused_without_showing_it(env, tmp_path):
    vault_with_key(env)
    key_path = os.path.join(str(tmp_path), "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key_path], check=True)
    refused = env.run("key", "share", "lab", "--to", key_path, "-o", os.path.join(str(tmp_path), "x.age"))
    assert refused.code == 64 and "private key" in refused.err and "OPENSSH" not in refused.err
    assert not os.path.exists(os.path.join(str(tmp_path), "x.age"))


def test_a_binary_share_is_not_written_to_a_terminal(env, tmp_path):
    from conftest import BIN
    from ptyrun import PtySession
    vault_with_key(env)
    _, recipient = age_identity(str(tmp_path))
    s = PtySession([BIN, "key", "share", "lab", "--to", recipient, "--passphrase-file", env.passfile], env.vars)
    try:
        code = s.wait()
        screen = s.text()
    finally:
        s.close()
    assert code == 64 and "refusing to write a binary age file to the terminal" in screen and "age-encryption.org" not in screen
    assert json.loads(env.run("key", "share", "lab", "--list", "--json").out)["recipients"] == []


def passphrase_pipe():
    """A pipe holding the passphrase once, as a script hands it over: a second read finds nothing."""
    read_end, write_end = os.pipe()
    os.write(write_end, (PASSPHRASE + "\n").encode())
    os.close(write_end)
    return read_end


def test_revoking_from_a_script_reads_the_passphrase_once_and_rotates(env, tmp_path):
    from test_rotation import FakeGoogle, OLD_NAME, setup, vault_keys
    google = FakeGoogle(str(tmp_path))
    try:
        alice = setup(env, google, "metadata")
        bob, carol = second(tmp_path, "bob"), second(tmp_path, "carol")
        bob_recipient = identity(bob)["recipient"]
        assert alice.run("key", "share", "default", "--to", bob_recipient, "-o", os.path.join(str(tmp_path), "bob.age")).code == 0
        assert alice.run("key", "share", "default", "--to", identity(carol)["recipient"], "-o", os.path.join(str(tmp_path), "carol.age")).code == 0
        alice.advance_clock()
        read_end = passphrase_pipe()
        revoked = alice.run("key", "share", "default", "--revoke", bob_recipient, "--passphrase-fd", str(read_end),
                            pass_fds=(read_end,), passphrase=False)
        os.close(read_end)
        assert revoked.code == 0, revoked
        assert google.key(OLD_NAME)["deleteTime"] and vault_keys(alice)[0]["default"] != google.key(OLD_NAME)["keyString"]
        recipients = json.loads(alice.run("key", "share", "default", "--list", "--json").out)["recipients"]
        assert [r["recipient"] for r in recipients] == [identity(carol)["recipient"]]
    finally:
        google.stop()


def test_a_revocation_whose_rotation_fails_puts_the_recipient_back(env, tmp_path):
    from test_rotation import FakeGoogle, setup
    google = FakeGoogle(str(tmp_path))
    try:
        alice = setup(env, google, "metadata")
        bob = second(tmp_path, "bob")
        bob_recipient = identity(bob)["recipient"]
        assert alice.run("key", "share", "default", "--to", bob_recipient, "-o", os.path.join(str(tmp_path), "bob.age")).code == 0
        google.control(set={"fail": {"create": "permission"}})
        read_end = passphrase_pipe()
        failed = alice.run("key", "share", "default", "--revoke", bob_recipient, "--passphrase-fd", str(read_end),
                           pass_fds=(read_end,), passphrase=False)
        os.close(read_end)
        assert failed.code == 6 and "stays a recipient" in failed.err, failed
        recipients = json.loads(alice.run("key", "share", "default", "--list", "--json").out)["recipients"]
        assert [r["recipient"] for r in recipients] == [bob_recipient]
    finally:
        google.stop()


def test_revoking_a_key_google_never_made_exits_1_and_changes_nothing(env, tmp_path):
    from test_rotation import FakeGoogle, setup
    google = FakeGoogle(str(tmp_path))
    try:
        alice = setup(env, google, "metadata")
        assert alice.run("key", "set", "mine", input=auth_key("made-by-hand")).code == 0
        bob = second(tmp_path, "bob")
        bob_recipient = identity(bob)["recipient"]
        assert alice.run("key", "share", "mine", "--to", bob_recipient, "-o", os.path.join(str(tmp_path), "bob.age")).code == 0
        refused = alice.run("key", "share", "mine", "--revoke", bob_recipient)
        assert refused.code == 1 and "--no-rotate" in refused.err, refused
        recipients = json.loads(alice.run("key", "share", "mine", "--list", "--json").out)["recipients"]
        assert [r["recipient"] for r in recipients] == [bob_recipient]
    finally:
        google.stop()


def agent_fields(body):
    """An agent answer's fields by tag (the first of each)."""
    import struct
    fields, offset = {}, 0
    while offset < len(body):
        tag, length = body[offset], struct.unpack("<I", body[offset + 1:offset + 5])[0]
        fields.setdefault(tag, body[offset + 5:offset + 5 + length])
        offset += 5 + length
    return fields


def test_the_agent_signs_only_the_next_share_of_a_key_its_vault_holds(env, tmp_path):
    """Any process of the user can reach an unlocked session: it may have the next share of a key
    the vault holds made, never bytes of its own signed, nor a serial of its choosing."""
    import struct
    from test_agent_robust import ask
    from test_session import frame
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    bob_recipient = identity(bob)["recipient"]
    signing_key = identity(alice)["signing_key"]
    assert alice.run("unlock").code == 0
    alice.runtime = alice.vars["XDG_RUNTIME_DIR"]
    try:
        chosen = {"gemvault_share": 1, "name": "lab", "key": auth_key("chosen"), "kind": "auth", "google_key": None,
                  "serial": 2 ** 53 - 1, "created": 1, "from": {"label": "x", "signing_key": signing_key}}
        signed_bytes = b"gemvault-share-v1\n" + json.dumps(chosen).encode()
        code, body = ask(alice, frame(16, [(45, signed_bytes)]))
        assert code == 1 and 46 not in agent_fields(body)
        code, body = ask(alice, frame(16, [(6, b"lab"), (61, bob_recipient.encode())]))
        assert code == 0
        fields = agent_fields(body)
        assert struct.unpack("<q", fields[62])[0] == 1
        document = json.loads(fields[63][4:])
        assert document["key"] == GOOD_KEY and document["serial"] == 1 and document["recipients"] == [bob_recipient]
        # The agent kept the serial: the next share gemvault writes is serial 2.
        out = os.path.join(str(tmp_path), "lab.age")
        shared = alice.run("key", "share", "lab", "--to", bob_recipient, "-o", out, passphrase=False)
        assert shared.code == 0 and "(serial 2)" in shared.err, shared
        code, _ = ask(alice, frame(16, [(6, b"missing"), (61, bob_recipient.encode())]))
        assert code == 1
    finally:
        alice.run("lock", passphrase=False)


def test_an_importer_may_reset_a_pinned_serial_on_purpose(env, tmp_path):
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    first = os.path.join(str(tmp_path), "lab-serial-1.age")
    shutil.copyfile(shared, first)
    assert alice.run("key", "share", "lab").code == 0
    assert bob.run("key", "import", shared, "--yes", "--no-verify").code == 0
    replayed = bob.run("key", "import", first, "--yes", "--no-verify")
    assert replayed.code == 4 and "--reset-serial" in replayed.err
    unasked = bob.run("key", "import", first, "--no-verify", "--reset-serial")
    assert unasked.code == 64 and "--yes" in unasked.err
    reset = bob.run("key", "import", first, "--yes", "--no-verify", "--reset-serial")
    assert reset.code == 0, reset
    listed = bob.run("key", "list").out
    assert "serial 1, reset on" in listed, listed


def test_a_share_passed_on_by_a_recipient_is_refused_even_where_it_is_followed(env, tmp_path):
    """Carol re-encrypts her share to bob: it names carol, not bob, so neither bob's import nor
    the file bob follows takes it, though alice signed it."""
    alice = vault_with_key(env)
    bob = second(tmp_path, "bob")
    bob_recipient = identity(bob)["recipient"]
    carol_id, carol_recipient = age_identity(str(tmp_path))
    bob_file, carol_file = os.path.join(str(tmp_path), "bob.age"), os.path.join(str(tmp_path), "carol.age")
    assert alice.run("key", "share", "lab", "--to", bob_recipient, "-o", bob_file).code == 0
    assert alice.run("key", "share", "lab", "--to", carol_recipient, "-o", carol_file).code == 0
    assert bob.run("key", "import", bob_file, "--yes", "--no-verify", "--follow").code == 0
    assert alice.run("key", "set", "lab", input=auth_key("newer")).code == 0
    assert alice.run("key", "share", "lab").code == 0
    with open(carol_file, "rb") as handle:
        plaintext = age_decrypt(carol_id, handle.read())
    assert json.loads(plaintext)["recipients"] == [carol_recipient]
    forwarded = subprocess.run([AGE, "-r", bob_recipient], input=plaintext, capture_output=True, check=True).stdout
    passed_on = os.path.join(str(tmp_path), "passed-on.age")
    with open(passed_on, "wb") as handle:
        handle.write(forwarded)
    refused = bob.run("key", "import", passed_on, "--yes", "--no-verify")
    assert refused.code == 4 and "passed it on" in refused.err and carol_recipient in refused.err
    assert bob.run("key", "get", "lab").out == GOOD_KEY + "\n"
    assert bob.run("key", "import", passed_on, "--yes", "--no-verify", "--follow", "--accept-unlisted").code == 64
    # Where bob follows a file, the forward is not taken either.
    with open(bob_file, "wb") as handle:
        handle.write(forwarded)
    synced = bob.run("key", "sync")
    assert synced.code == 4 and "passed it on" in synced.out
    assert bob.run("key", "get", "lab").out == GOOD_KEY + "\n"
    accepted = bob.run("key", "import", passed_on, "--yes", "--no-verify", "--accept-unlisted")
    assert accepted.code == 0 and "passed it on" in accepted.err and "--accept-unlisted" in accepted.err
    assert bob.run("key", "get", "lab").out == auth_key("newer") + "\n"


def test_a_folder_or_a_pattern_writes_one_file_per_recipient_and_a_single_file_says_it_is_for_all(env, tmp_path):
    alice = vault_with_key(env)
    bob_id, bob_recipient = age_identity(str(tmp_path))
    carol_id, carol_recipient = age_identity(str(tmp_path))
    folder = os.path.join(str(tmp_path), "shares")
    os.mkdir(folder)
    written = alice.run("key", "share", "lab", "--to", bob_recipient + "=bob", "--to", carol_recipient + "=carol", "-o", folder + "/")
    assert written.code == 0, written
    bob_file, carol_file = os.path.join(folder, "lab-bob.age"), os.path.join(folder, "lab-carol.age")
    with open(bob_file, "rb") as handle:
        bob_data = handle.read()
    assert json.loads(age_decrypt(bob_id, bob_data))["recipients"] == [bob_recipient]
    assert subprocess.run([AGE, "-d", "-i", carol_id], input=bob_data, capture_output=True).returncode != 0
    with open(carol_file, "rb") as handle:
        assert json.loads(age_decrypt(carol_id, handle.read()))["recipients"] == [carol_recipient]
    listed = json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"]
    assert sorted((r["label"], r["path"]) for r in listed) == [("bob", bob_file), ("carol", carol_file)]
    # A pattern names each file by label; one file for several says plainly that it is for all of them.
    dave_id, dave_recipient = age_identity(str(tmp_path))
    pattern = alice.run("key", "share", "lab", "--to", dave_recipient + "=dave", "-o", os.path.join(folder, "x-{label}.age"))
    assert pattern.code == 0 and os.path.exists(os.path.join(folder, "x-dave.age")), pattern
    together = os.path.join(folder, "team.age")
    both = alice.run("key", "share", "lab", "--to", bob_recipient, "--to", carol_recipient, "-o", together)
    assert both.code == 0 and "is for all 2 of them" in both.err, both
    # --revoke takes the label --list shows, and removes the files only the revoked had.
    revoked = alice.run("key", "share", "lab", "--revoke", "dave", "--no-rotate")
    assert revoked.code == 0 and not os.path.exists(os.path.join(folder, "x-dave.age")), revoked
    revoked = alice.run("key", "share", "lab", "--revoke", "carol", "--no-rotate")
    assert revoked.code == 0 and not os.path.exists(carol_file) and os.path.exists(together)
    # The file bob and carol shared is now for bob alone.
    assert alice.run("key", "share", "lab").code == 0
    with open(together, "rb") as handle:
        assert json.loads(age_decrypt(bob_id, handle.read()))["recipients"] == [bob_recipient]


def test_a_look_alike_sender_of_a_new_name_is_warned_about_and_asked(env, tmp_path):
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    assert bob.run("key", "import", shared, "--yes", "--no-verify").code == 0
    mallory = second(tmp_path, "mallory")
    assert mallory.run("identity", "--label", identity(alice)["label"]).code == 0
    assert mallory.run("key", "set", "payroll", input=auth_key("mallory")).code == 0
    bait = os.path.join(str(tmp_path), "payroll.age")
    assert mallory.run("key", "share", "payroll", "--to", identity(bob)["recipient"], "-o", bait).code == 0
    refused = bob.run("key", "import", bait, "--yes", "--no-verify")
    assert refused.code == 4 and "belongs to another signing key" in refused.err and identity(alice)["fingerprint"] in refused.err
    assert bob.run("key", "get", "payroll").code != 0
    accepted = bob.run("key", "import", bait, "--yes", "--no-verify", "--accept-new-sender")
    assert accepted.code == 0 and "belongs to another signing key" in accepted.err


def test_a_file_with_too_many_stanzas_is_refused_before_any_agreement(env, tmp_path):
    env.init()
    stanzas = b"".join(b"-> X25519 " + base64.b64encode(os.urandom(32)).rstrip(b"=") + b"\n"
                       + base64.b64encode(os.urandom(32)).rstrip(b"=") + b"\n" for _ in range(10000))
    data = b"age-encryption.org/v1\n" + stanzas + b"--- " + base64.b64encode(os.urandom(32)).rstrip(b"=") + b"\n" + os.urandom(64)
    path = os.path.join(str(tmp_path), "many.age")
    with open(path, "wb") as handle:
        handle.write(data)
    refused = env.run("key", "import", path, "x", "--yes", "--no-verify")
    assert refused.code == 1 and "at most 256" in refused.err, refused


def test_a_bad_recipient_among_several_is_named(env, tmp_path):
    vault_with_key(env)
    good = age_identity(str(tmp_path))[1]
    bad = good[:-1] + ("q" if good[-1] != "q" else "p")
    refused = env.run("key", "share", "lab", "--to", good, "--to", bad, "-o", os.path.join(str(tmp_path), "x.age"))
    assert refused.code == 64 and bad in refused.err, refused


def test_key_import_reads_a_share_from_a_pipe(env, tmp_path):
    """cli.md's own example: `age -r … | gemvault key import - work --yes` (stdin is a pipe)."""
    env.init()
    bob = second(tmp_path, "bob")
    data = subprocess.run([AGE, "-r", identity(bob)["recipient"], "--armor"], input=(GOOD_KEY + "\n").encode(), capture_output=True, check=True).stdout
    piped = bob.run("key", "import", "-", "work", "--yes", "--no-verify", input=data.decode())
    assert piped.code == 0, piped
    assert bob.run("key", "get", "work").out == GOOD_KEY + "\n"
    huge = bob.run("key", "import", "-", "work", "--yes", "--no-verify", input="x" * ((1 << 20) + 1))
    assert huge.code == 1 and "more than" in huge.err


def import_crafted(env, tmp_path, document, seed, file_name, *args):
    """A share document made outside gemvault (signed_share), encrypted with real age to env's vault, imported."""
    data = subprocess.run([AGE, "-r", identity(env)["recipient"]], input=json.dumps(signed_share(document, seed)).encode(),
                          capture_output=True, check=True).stdout
    path = os.path.join(str(tmp_path), file_name)
    with open(path, "wb") as handle:
        handle.write(data)
    return env.run("key", "import", path, "--no-verify", *args), path


def alice_at_lab_shares_with_bob(env, tmp_path):
    """As alice_shares_lab_with_bob, alice labelled alice@lab (not the user@host every vault here has)."""
    alice = vault_with_key(env)
    assert alice.run("identity", "--label", "alice@lab").code == 0
    bob = second(tmp_path, "bob")
    shared = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", identity(bob)["recipient"], "-o", shared).code == 0
    return alice, bob, shared


def test_a_label_that_only_looks_like_a_trusted_senders_is_caught_and_no_new_label_may_be_one(env, tmp_path):
    """Review finding 1: a trailing space, a no-break space, a Cyrillic а, an invisible Hangul
    filler, a line separator or a capital I for an l make a label look like alice's on screen;
    each is warned about (what hides in it written out) and refused without a terminal."""
    alice, bob, shared = alice_at_lab_shares_with_bob(env, tmp_path)
    assert bob.run("key", "import", shared, "--yes", "--no-verify").code == 0
    alice_id, bob_recipient = identity(alice), identity(bob)["recipient"]
    # What a vault made by an older gemvault could still send: its label was taken then.
    for index, label in enumerate([alice_id["label"] + " ", alice_id["label"] + "\u00a0", "\u0430" + alice_id["label"][1:],
                                   alice_id["label"] + "\u3164", alice_id["label"] + "\u2028", alice_id["label"].upper()]):
        name = "payroll%d" % index
        document = {"gemvault_share": 2, "name": name, "key": auth_key("m%d" % index), "kind": "auth", "google_key": None, "serial": 1,
                    "created": 1764900000, "from": {"label": label}, "recipients": [bob_recipient]}
        refused, path = import_crafted(bob, tmp_path, document, bytes([0x40 + index]) * 32, name + ".age", "--yes")
        assert refused.code == 4 and "looks like it" in refused.err and alice_id["fingerprint"] in refused.err, (label, refused)
        if label != alice_id["label"].upper():
            assert "has characters a label made now may not have" in refused.err and ("\\u{" in refused.err) == (not label.isascii()), (label, refused)
        assert bob.run("key", "get", name).code != 0
    # A plain ASCII look-alike from a real vault: a capital I for the l.
    mallory = second(tmp_path, "mallory")
    assert mallory.run("identity", "--label", "aIice@lab").code == 0
    assert mallory.run("key", "set", "prod", input=auth_key("mallory")).code == 0
    bait = os.path.join(str(tmp_path), "prod.age")
    assert mallory.run("key", "share", "prod", "--to", bob_recipient, "-o", bait).code == 0
    refused = bob.run("key", "import", bait, "--yes", "--no-verify")
    assert refused.code == 4 and "looks like it" in refused.err, refused
    accepted = bob.run("key", "import", bait, "--yes", "--no-verify", "--accept-new-sender")
    assert accepted.code == 0 and bob.run("key", "get", "prod").out == auth_key("mallory") + "\n"
    # A new label is printable ASCII with no space at an end (or two in a row); the old one stays.
    for odd in ["alice@lab ", " alice@lab", "alice  lab", "alice@lab\u00a0", "\u0430lice@lab", "alice@lab\u3164", "Zo\u00eb"]:
        refused = mallory.run("identity", "--label", odd)
        assert refused.code == 64 and "printable ASCII" in refused.err, (odd, refused)
        assert all(ord(c) < 0x7f for c in refused.err) and ("\\u{" in refused.err) == (not odd.isascii()), (odd, refused)
    assert identity(mallory)["label"] == "aIice@lab"
    assert mallory.run("identity", "--label", "Ada, lab 3").code == 0


def test_replacing_a_key_no_sender_is_pinned_for_is_checked_and_asked(env, tmp_path):
    """Review finding 2: bob shared his own 'prod2' on, so it has a sharing record with no
    sender; a share of 'prod2' under alice's exact label, from another key, is still a
    look-alike, and replacing bob's own key needs a terminal or --replace."""
    alice, bob, shared = alice_at_lab_shares_with_bob(env, tmp_path)
    assert bob.run("key", "import", shared, "--yes", "--no-verify").code == 0
    assert bob.run("key", "set", "prod2", input=auth_key("bob-own")).code == 0
    _, carol_recipient = age_identity(str(tmp_path))
    assert bob.run("key", "share", "prod2", "--to", carol_recipient, "-o", os.path.join(str(tmp_path), "carol.age")).code == 0
    mallory = second(tmp_path, "mallory")
    assert mallory.run("identity", "--label", identity(alice)["label"]).code == 0
    assert mallory.run("key", "set", "prod2", input=auth_key("mallory")).code == 0
    bait = os.path.join(str(tmp_path), "m-prod2.age")
    assert mallory.run("key", "share", "prod2", "--to", identity(bob)["recipient"], "-o", bait).code == 0
    refused = bob.run("key", "import", bait, "--yes", "--no-verify")
    assert refused.code == 4 and "belongs to another signing key you trust" in refused.err, refused
    unasked = bob.run("key", "import", bait, "--yes", "--no-verify", "--accept-new-sender")
    assert unasked.code == 64 and "--replace" in unasked.err and "came from no pinned sender" in unasked.err, unasked
    assert bob.run("key", "get", "prod2").out == auth_key("bob-own") + "\n"
    # A key with no record at all, and one imported unsigned, are replaced only when asked for too.
    other = second(tmp_path, "other")
    assert other.run("key", "set", "solo", input=auth_key("other")).code == 0
    solo = os.path.join(str(tmp_path), "solo.age")
    assert other.run("key", "share", "solo", "--to", identity(bob)["recipient"], "-o", solo).code == 0
    assert bob.run("key", "set", "solo", input=auth_key("bob-solo")).code == 0
    assert bob.run("key", "import", solo, "--yes", "--no-verify").code == 64
    plain = os.path.join(str(tmp_path), "plain.age")
    with open(plain, "wb") as handle:
        handle.write(subprocess.run([AGE, "-r", identity(bob)["recipient"]], input=(auth_key("plain") + "\n").encode(), capture_output=True).stdout)
    assert bob.run("key", "import", plain, "loose", "--yes", "--no-verify").code == 0
    assert bob.run("key", "import", plain, "loose", "--yes", "--no-verify").code == 64
    assert bob.run("key", "get", "solo").out == auth_key("bob-solo") + "\n"
    replaced = bob.run("key", "import", bait, "--yes", "--no-verify", "--accept-new-sender", "--replace")
    assert replaced.code == 0 and "replaces" in replaced.err and bob.run("key", "get", "prod2").out == auth_key("mallory") + "\n"
    assert bob.run("key", "import", solo, "--yes", "--no-verify", "--replace").code == 0


def test_replacing_a_key_of_your_own_is_asked_on_a_terminal_even_with_yes(env, tmp_path):
    from conftest import BIN
    from ptyrun import PtySession
    alice, bob, shared = alice_shares_lab_with_bob(env, tmp_path)
    assert bob.run("key", "set", "lab", input=auth_key("bob-own")).code == 0
    s = PtySession([BIN, "key", "import", shared, "--yes", "--no-verify", "--passphrase-file", bob.passfile], bob.vars)
    try:
        s.expect(r"Replace your key 'lab' with this one\? \[y/N\]")
        s.line("n")
        assert s.wait() == 1 and "nothing was stored" in s.text()
    finally:
        s.close()
    assert bob.run("key", "get", "lab").out == auth_key("bob-own") + "\n"


def test_a_format_1_share_is_taken_only_for_a_name_pinned_to_its_signer(env, tmp_path):
    """Review finding 5: a format 1 share does not say whom it was for, so one of a new name
    (which anyone it was written for could have passed on) needs --accept-unlisted and cannot
    be followed; once that sender is pinned for the name, its next format 1 shares are taken,
    by hand and in a followed file, until it sends format 2 (an older one is then a replay)."""
    env.init()
    me = identity(env)["recipient"]
    seed = b"\x05" * 32

    def document(serial, name="old", version=1):
        doc = {"gemvault_share": version, "name": name, "key": auth_key("old%d" % serial), "kind": "auth", "google_key": None,
               "serial": serial, "created": 1764900000 + serial, "from": {"label": "old@gemvault"}}
        return dict(doc, recipients=[me]) if version == 2 else doc

    refused, first = import_crafted(env, tmp_path, document(1), seed, "old-1.age", "--yes")
    assert refused.code == 4 and "format 1" in refused.err and "--accept-unlisted" in refused.err, refused
    followed, _ = import_crafted(env, tmp_path, document(1), seed, "old-1.age", "--yes", "--follow")
    assert followed.code == 4 and env.run("key", "get", "old").code != 0
    accepted = env.run("key", "import", first, "--yes", "--no-verify", "--accept-unlisted")
    assert accepted.code == 0 and "format 1" in accepted.err, accepted
    # Pinned now: the sender's next format 1 share is taken as before, and may be followed.
    taken, path = import_crafted(env, tmp_path, document(2), seed, "old-2.age", "--yes", "--follow")
    assert taken.code == 0 and env.run("key", "get", "old").out == auth_key("old2") + "\n", taken
    later = signed_share(document(3), seed)
    with open(path, "wb") as handle:
        handle.write(subprocess.run([AGE, "-r", me], input=json.dumps(later).encode(), capture_output=True, check=True).stdout)
    synced = env.run("key", "sync")
    assert synced.code == 0 and "took serial 3" in synced.out, synced
    # The same sender's format 1 share of a name not pinned to it is refused; so is its share
    # of this name from another signer, whatever format.
    other_name, _ = import_crafted(env, tmp_path, document(1, name="other"), seed, "other.age", "--yes")
    assert other_name.code == 4 and "format 1" in other_name.err
    stranger, _ = import_crafted(env, tmp_path, document(4), b"\x06" * 32, "stranger.age", "--yes")
    assert stranger.code == 4 and env.run("key", "get", "old").out == auth_key("old3") + "\n"
