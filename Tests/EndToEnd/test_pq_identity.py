"""The vault's own identity goes post-quantum (issue 45, Docs/sharing.md): a hybrid identity
(ML-KEM-768 + X25519, `age1pq1…`) by default, `--classic`, `identity --upgrade` re-sharing the
shares that named the vault's classic recipient, a mixed share's warning and `--pq-only`, and
shares to the hybrid recipient opened through a session and without one. The post-quantum
identity files and recipients here are made from the spec (hpke-pq.md's expandKey) with kyber-py
not by gemvault (age_pq.py)."""
import json
import os
import subprocess

import age_pq
from conftest import GOOD_KEY, Env

def pq_identity_file(folder, name="pq-id.txt"):
    """An `AGE-SECRET-KEY-PQ-1…` identity file as age-keygen -pq writes it, its recipient, and the
    identity (age_pq's, written from the spec apart from gemvault)."""
    held = age_pq.HybridIdentity()
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write("# public key: %s\n%s\n" % (held.recipient, held.text))
    os.chmod(path, 0o600)
    return path, held.recipient, held


def identity(env, *options):
    result = env.run("identity", "--json", *options)
    assert result.code == 0, result
    return json.loads(result.out)


def payload_sharing(env):
    import test_vault_format as fmt
    vault = fmt.parse(env.vault_bytes())
    with open(env.passfile) as handle:
        passphrase = handle.read().rstrip("\n")
    payload = fmt.unpad(fmt.decrypt(vault, fmt.unwrap(fmt.slot_of(vault, [fmt.PASSPHRASE_SLOT]), passphrase.encode())))
    sharing = {}
    fmt.decode_payload(payload, sharing=sharing)
    return payload[0], sharing


def test_a_new_vault_has_a_hybrid_identity_whose_seed_the_document_describes(env):
    env.init()
    me = identity(env)
    assert me["pq_recipient"].startswith("age1pq1") and me["recipient"].startswith("age1") and not me["recipient"].startswith("age1pq1")
    assert me["recipients"] == [me["pq_recipient"], me["recipient"]]
    # Docs/vault-format.md: payload version 11, identity marker 2, the seed after the two keys;
    # the recipient printed is the one the spec derives from that seed.
    version, sharing = payload_sharing(env)
    assert version == 11 and len(sharing["hybrid_seed"]) == 32
    assert age_pq.HybridIdentity(sharing["hybrid_seed"]).recipient == me["pq_recipient"]
    text = env.run("identity").out
    assert "pq recipient " + me["pq_recipient"] in text and "recipient    " + me["recipient"] in text


def test_classic_makes_an_x25519_identity_only_and_the_json_keeps_recipient(env):
    assert env.run("init", "--kdf", "interactive", "--classic").code == 0
    me = identity(env)
    assert me["pq_recipient"] is None and me["recipients"] == [me["recipient"]]
    _, sharing = payload_sharing(env)
    assert sharing["identity"] is not None and sharing["hybrid_seed"] is None
    assert "pq recipient" not in env.run("identity").out


def older_vault(tmp_path, name):
    """A vault from before the sharing identity (the format 2 vector, payload version 1)."""
    import test_vault_format as fmt
    older = Env(tmp_path / name)
    data, expected = fmt.load("v2")
    fmt.install(older, data, expected["passphrase"])
    return older


def test_identity_classic_makes_one_only_for_a_vault_without_one(env, tmp_path):
    env.init()
    refused = env.run("identity", "--classic")
    assert refused.code == 64 and "post-quantum identity already" in refused.err, refused
    # A vault from before has no identity: --classic makes a classic one, a plain first use a hybrid one.
    classic = older_vault(tmp_path, "classic")
    made = identity(classic, "--classic")
    assert made["pq_recipient"] is None and identity(classic) == made
    assert payload_sharing(classic)[1]["hybrid_seed"] is None
    hybrid = older_vault(tmp_path, "hybrid")
    assert identity(hybrid)["pq_recipient"].startswith("age1pq1")
    assert older_vault(tmp_path, "both").run("identity", "--classic", "--upgrade").code == 64


def test_upgrade_adds_a_post_quantum_recipient_and_keeps_the_classic_one(env):
    assert env.run("init", "--kdf", "interactive", "--classic").code == 0
    before = identity(env)
    upgraded = env.run("identity", "--upgrade", "--json")
    assert upgraded.code == 0 and "added a post-quantum recipient" in upgraded.err, upgraded
    after = json.loads(upgraded.out)
    assert after["recipient"] == before["recipient"] and after["fingerprint"] == before["fingerprint"]
    assert after["pq_recipient"].startswith("age1pq1")
    again = env.run("identity", "--upgrade", "--json")
    assert again.code == 0 and "post-quantum already" in again.err and json.loads(again.out) == after


def test_identity_through_a_session_makes_and_upgrades_inside_the_agent(env):
    assert env.run("init", "--kdf", "interactive", "--classic").code == 0
    assert env.run("unlock").code == 0
    try:
        classic = identity(env)
        assert classic["pq_recipient"] is None
        upgraded = env.run("identity", "--upgrade", "--json", passphrase=False)
        assert upgraded.code == 0, upgraded
        assert json.loads(upgraded.out)["pq_recipient"].startswith("age1pq1")
    finally:
        env.run("lock", passphrase=False)
    # The agent saved it: the vault opened with the passphrase says the same.
    assert identity(env)["pq_recipient"] == json.loads(upgraded.out)["pq_recipient"]


def classic_identity_file(folder, name):
    path = os.path.join(folder, name)
    subprocess.run(["age-keygen", "-o", path], check=True, capture_output=True)
    return path, subprocess.run(["age-keygen", "-y", path], check=True, capture_output=True, text=True).stdout.strip()


def with_key(env, name="lab"):
    env.init()
    assert env.run("key", "set", name, input=GOOD_KEY).code == 0
    return env


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_a_share_to_the_hybrid_recipient_opens_with_and_without_a_session(env, tmp_path):
    alice = with_key(env)
    bob = Env(tmp_path / "bob")
    bob.init()
    bob_id = identity(bob)
    shared = os.path.join(str(tmp_path), "lab.age")
    made = alice.run("key", "share", "lab", "--to", bob_id["pq_recipient"], "-o", shared)
    assert made.code == 0 and "warning" not in made.err, made
    assert age_pq.stanza_types(read(shared)) == ["mlkem768x25519"]
    # Without a session: the vault opened with the passphrase decapsulates.
    imported = bob.run("key", "import", shared, "--yes", "--no-verify")
    assert imported.code == 0, imported
    assert bob.run("key", "get", "lab").out.strip() == GOOD_KEY
    # Through a session: the agent decapsulates (operation 32), no passphrase is read.
    assert bob.run("key", "rm", "lab").code == 0
    assert bob.run("unlock").code == 0
    try:
        again = bob.run("key", "import", shared, "--yes", "--no-verify", "--reset-serial", passphrase=False)
        assert again.code == 0, again
        assert bob.run("key", "get", "lab", passphrase=False).out.strip() == GOOD_KEY
        # A plain age file written by age_pq (not gemvault) to the hybrid recipient opens too.
        plain = os.path.join(str(tmp_path), "plain.age")
        with open(plain, "wb") as handle:
            handle.write(age_pq.encrypt_to_hybrid(GOOD_KEY.encode(), bob_id["pq_recipient"]))
        bare = bob.run("key", "import", plain, "other", "--yes", "--no-verify", passphrase=False)
        assert bare.code == 0, bare
        assert bob.run("key", "get", "other", passphrase=False).out.strip() == GOOD_KEY
    finally:
        bob.run("lock", passphrase=False)


def test_a_mixed_share_warns_once_naming_the_classic_recipients(env, tmp_path):
    alice = with_key(env)
    folder = str(tmp_path)
    _, carol = classic_identity_file(folder, "carol.txt")
    _, dave, _ = pq_identity_file(folder, "dave.txt")
    ssh = os.path.join(folder, "erin")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "erin@lab", "-f", ssh], check=True)
    os.mkdir(os.path.join(folder, "mixed"))
    mixed = alice.run("key", "share", "lab", "--to", dave, "--to", carol + "=carol", "-o", os.path.join(folder, "mixed/"))
    assert mixed.code == 0, mixed
    warnings = [line for line in mixed.err.splitlines() if line.startswith("gemvault: warning:")]
    assert len(warnings) == 1 and "carol (%s)" % carol in warnings[0] and "weak link" in warnings[0], mixed.err
    assert dave[:40] not in warnings[0]
    # Classic recipients alone (X25519 and ssh-ed25519) are not warned about. (A share of 'lab'
    # would be: it goes to dave, recorded, too.)
    assert alice.run("key", "set", "solo", input=GOOD_KEY).code == 0
    classic = alice.run("key", "share", "solo", "--to", carol, "--to", ssh + ".pub", "-o", os.path.join(folder, "classic.age"))
    assert classic.code == 0 and "warning" not in classic.err, classic
    assert alice.run("secret", "set", "gh", input="ghp_secretvalue-000000000000\n").code == 0
    secret = alice.run("secret", "share", "gh", "--to", dave, "--to", carol, "-o", os.path.join(folder, "gh.age"))
    assert secret.code == 0 and secret.err.count("gemvault: warning:") == 1 and carol in secret.err, secret


def test_pq_only_refuses_classic_recipients_and_writes_nothing(env, tmp_path):
    alice = with_key(env)
    folder = str(tmp_path)
    _, carol = classic_identity_file(folder, "carol.txt")
    dave_file, dave, dave_held = pq_identity_file(folder, "dave.txt")
    out = os.path.join(folder, "lab.age")
    refused = alice.run("key", "share", "lab", "--pq-only", "--to", dave, "--to", carol, "-o", out)
    assert refused.code == 64 and carol in refused.err and "classic" in refused.err and not os.path.exists(out), refused
    assert json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"] == []
    taken = alice.run("key", "share", "lab", "--pq-only", "--to", dave, "-o", out)
    assert taken.code == 0, taken
    assert json.loads(age_pq.decrypt(read(out), [dave_held]))["key"] == GOOD_KEY
    # A recorded classic recipient is refused too: the next share would go to it.
    assert alice.run("key", "share", "lab", "--to", carol, "-o", os.path.join(folder, "carol.age")).code == 0
    again = alice.run("key", "share", "lab", "--pq-only")
    assert again.code == 64 and carol in again.err, again
    assert alice.run("secret", "set", "gh", input="ghp_secretvalue-000000000000\n").code == 0
    secret = alice.run("secret", "share", "gh", "--pq-only", "--to", carol, "-o", os.path.join(folder, "gh.age"))
    assert secret.code == 64 and not os.path.exists(os.path.join(folder, "gh.age")), secret


def test_upgrade_reshares_a_followed_share_for_the_post_quantum_recipient(env, tmp_path):
    """Alice's classic vault shared 'lab' in one file to herself and to dave (post-quantum). The
    upgrade records her post-quantum recipient in its place and shares the file again, through the
    rotation's path: the file is post-quantum only, dave imports the new serial with his identity
    file, and alice's vault opens it with its own hybrid identity."""
    assert env.run("init", "--kdf", "interactive", "--classic").code == 0
    alice = env
    assert alice.run("key", "set", "lab", input=GOOD_KEY).code == 0
    folder = str(tmp_path)
    dave_file, dave, dave_held = pq_identity_file(folder, "dave.txt")
    me = identity(alice)
    team = os.path.join(folder, "team.age")
    first = alice.run("key", "share", "lab", "--to", me["recipient"] + "=alice", "--to", dave + "=dave", "-o", team)
    assert first.code == 0 and "alice (%s)" % me["recipient"] in first.err, first  # the mix is warned about
    assert sorted(age_pq.stanza_types(read(team))) == ["X25519", "mlkem768x25519"]
    dave_vault = Env(tmp_path / "dave")
    dave_vault.init()
    assert dave_vault.run("key", "import", team, "-i", dave_file, "--yes", "--no-verify").code == 0
    upgraded = alice.run("identity", "--upgrade", "--json")
    assert upgraded.code == 0, upgraded
    pq = json.loads(upgraded.out)["pq_recipient"]
    assert "for this vault's post-quantum recipient (serial 2)" in upgraded.err and "lab" in upgraded.err, upgraded.err
    assert age_pq.stanza_types(read(team)) == ["mlkem768x25519", "mlkem768x25519"]
    recorded = json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"]
    assert {entry["recipient"] for entry in recorded} == {pq, dave} and {entry["label"] for entry in recorded} == {"alice", "dave"}
    taken = dave_vault.run("key", "import", team, "-i", dave_file, "--yes", "--no-verify", "--json")
    assert taken.code == 0 and json.loads(taken.out)["serial"] == 2, taken
    own = age_pq.HybridIdentity(payload_sharing(alice)[1]["hybrid_seed"])
    document = json.loads(age_pq.decrypt(read(team), [own]))
    assert document["serial"] == 2 and document["recipients"] == [pq, dave]


def test_a_followed_share_to_the_hybrid_recipient_is_taken_through_a_session(env, tmp_path):
    """Following reads each new share with both of the vault's identities: here the agent's
    decapsulation, for a share written to the post-quantum recipient alone."""
    alice = with_key(env)
    bob = Env(tmp_path / "bob")
    bob.init()
    shared = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--pq-only", "--to", identity(bob)["pq_recipient"], "-o", shared).code == 0
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    assert alice.run("key", "set", "lab", input=GOOD_KEY.replace("A", "B", 1)).code == 0
    assert alice.run("key", "share", "lab").code == 0
    assert bob.run("unlock").code == 0
    try:
        synced = bob.run("key", "sync", passphrase=False)
        assert synced.code == 0 and "took serial 2" in synced.out, synced
        assert bob.run("key", "get", "lab", passphrase=False).out.strip() == GOOD_KEY.replace("A", "B", 1)
    finally:
        bob.run("lock", passphrase=False)


def test_a_file_with_more_hybrid_stanzas_than_one_request_takes_opens_through_the_session(env, tmp_path):
    """The agent decapsulates at most 64 stanzas a request: bob's stanza, the 70th, is in the second."""
    alice = with_key(env)
    bob = Env(tmp_path / "bob")
    bob.init()
    others = [age_pq.HybridIdentity().recipient for _ in range(69)]
    files = []
    for index in range(3):  # a recipients file holds at most 64 KiB: about 33 post-quantum recipients
        path = os.path.join(str(tmp_path), "team-%d.txt" % index)
        with open(path, "w") as handle:
            handle.write("".join(line + "\n" for line in others[index * 23:(index + 1) * 23]))
        files += ["-R", path]
    shared = os.path.join(str(tmp_path), "lab.age")
    made = alice.run("key", "share", "lab", *files, "--to", identity(bob)["pq_recipient"], "-o", shared)
    assert made.code == 0, made
    assert age_pq.stanza_types(read(shared)) == ["mlkem768x25519"] * 70
    assert bob.run("unlock").code == 0
    try:
        taken = bob.run("key", "import", shared, "--yes", "--no-verify", passphrase=False)
        assert taken.code == 0, taken
    finally:
        bob.run("lock", passphrase=False)


def test_a_share_to_many_post_quantum_recipients_goes_through_a_session(env, tmp_path):
    """45 post-quantum recipients are about 88 KB of text: more than a change's 80 KiB bound was,
    within a change's and a share request's 1 MiB (Docs/session.md), and a recipients file's."""
    alice = with_key(env)
    held = [age_pq.HybridIdentity() for _ in range(45)]
    # One recipients file of 88 KB: more than the 64 KiB one used to be read up to.
    team = os.path.join(str(tmp_path), "team.txt")
    with open(team, "w") as handle:
        handle.write("".join("# member %d\n%s\n" % (index, one.recipient) for index, one in enumerate(held)))
    files = ["-R", team]
    shared = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("unlock").code == 0
    try:
        made = alice.run("key", "share", "lab", *files, "-o", shared, passphrase=False)
        assert made.code == 0 and "with 45 recipients" in made.err, made
    finally:
        alice.run("lock", passphrase=False)
    document = json.loads(age_pq.decrypt(read(shared), [held[-1]]))
    assert document["key"] == GOOD_KEY and len(document["recipients"]) == 45


def test_upgrade_names_the_followed_shares_whose_senders_need_the_new_recipient(env, tmp_path):
    """gemvault cannot re-share what others sent: the upgrade names each followed key's sender."""
    alice = with_key(env)
    bob = Env(tmp_path / "bob")
    assert bob.run("init", "--kdf", "interactive", "--classic").code == 0
    shared = os.path.join(str(tmp_path), "lab.age")
    assert alice.run("key", "share", "lab", "--to", identity(bob)["recipient"], "-o", shared).code == 0
    assert bob.run("key", "import", shared, "--yes", "--no-verify", "--follow").code == 0
    upgraded = bob.run("identity", "--upgrade")
    sender = identity(alice)["label"]
    assert upgraded.code == 0 and "lab (from %s)" % sender in upgraded.err and "until their senders share to the new one" in upgraded.err, upgraded
