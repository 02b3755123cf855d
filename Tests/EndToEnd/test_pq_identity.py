"""The vault's own identity goes post-quantum (issue 45, Docs/sharing.md): a hybrid identity
(ML-KEM-768 + X25519, `age1pq1…`) by default, `--classic`, `identity --upgrade` re-sharing the
shares that named the vault's classic recipient, a mixed share's warning and `--pq-only`, and
shares to the hybrid recipient opened through a session and without one. The post-quantum
identity files and recipients here are made from the spec (hpke-pq.md's expandKey) with kyber-py,
not by gemvault."""
import hashlib
import json
import os
import shutil

import pytest

from conftest import GOOD_KEY, Env

AGE = shutil.which("age")

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32_encode(hrp, data):
    """Bech32 (BIP 173) without its length limit, as age uses it."""
    def polymod(values):
        generator = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
        check = 1
        for value in values:
            top = check >> 25
            check = (check & 0x1FFFFFF) << 5 ^ value
            for index in range(5):
                check ^= generator[index] if (top >> index) & 1 else 0
        return check
    words, acc, bits = [], 0, 0
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            words.append((acc >> bits) & 31)
    if bits:
        words.append((acc << (5 - bits)) & 31)
    low = hrp.lower()
    expanded = [ord(c) >> 5 for c in low] + [0] + [ord(c) & 31 for c in low]
    mod = polymod(expanded + words + [0] * 6) ^ 1
    checksum = [(mod >> 5 * (5 - index)) & 31 for index in range(6)]
    text = low + "1" + "".join(CHARSET[w] for w in words + checksum)
    return text.upper() if hrp.isupper() else text


def hybrid_public_key(seed):
    """PrivateKeyToPublicKey of MLKEM768-X25519 (hpke-pq.md): SHAKE256(seed, 96) gives ML-KEM's
    d || z and the X25519 scalar; the key is ML-KEM's encapsulation key, then the X25519 point."""
    from kyber_py.ml_kem import ML_KEM_768
    import nacl.bindings
    full = hashlib.shake_256(seed).digest(96)
    encapsulation_key, _ = ML_KEM_768.key_derive(full[:64])
    return encapsulation_key + nacl.bindings.crypto_scalarmult_base(full[64:96])


def pq_identity_file(folder, name="pq-id.txt"):
    """An `AGE-SECRET-KEY-PQ-1…` identity file as age-keygen -pq writes it, and its recipient."""
    seed = os.urandom(32)
    recipient = bech32_encode("age1pq", hybrid_public_key(seed))
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write("# public key: %s\n%s\n" % (recipient, bech32_encode("AGE-SECRET-KEY-PQ-", seed)))
    os.chmod(path, 0o600)
    return path, recipient


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
    assert bech32_encode("age1pq", hybrid_public_key(sharing["hybrid_seed"])) == me["pq_recipient"]
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
