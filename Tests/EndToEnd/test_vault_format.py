"""Decrypts the committed test vectors with PyNaCl, following only Docs/vault-format.md.

This is the proof that the document is complete: another libsodium binding, no gemvault code.
Every vector is checked: format 2 (what gemvault writes), format 3 (format 2 with an ssh-agent
slot, opened here by signing with PyNaCl as the ssh-agent would) and format 1 (still read);
and a format 2 vault with payload version 8, every section filled (sharing identity and
records, a Secret Manager link and its rotation, Google keys, last use).
"""
import base64
import hashlib
import json
import os
import re
import struct

import pytest

import nacl.bindings as nacl  # pinned in requirements.txt; ./test installs it
from nacl.exceptions import CryptoError  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "VaultCoreTests", "Fixtures")
DOCUMENT = os.path.join(HERE, "..", "..", "Docs", "vault-format.md")
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
VECTORS = ["v1", "v2", "v3"]

PASSPHRASE_SLOT, LEGACY_RECOVERY_SLOT, RECOVERY_SLOT, SSH_AGENT_SLOT, AGE_SLOT = 1, 2, 3, 4, 5
SLOT_SIZES = {PASSPHRASE_SLOT: 102, LEGACY_RECOVERY_SLOT: 102, RECOVERY_SLOT: 142, SSH_AGENT_SLOT: 186}
SLOT_AD_PREFIX = b"gemvault slot\x00" + b"GEMVAULT" + b"\x01\x00"
NAME = re.compile(rb"[A-Za-z0-9._-]{1,128}")


def load(vector):
    with open(os.path.join(FIXTURES, "vector-%s.vault" % vector), "rb") as handle:
        data = handle.read()
    with open(os.path.join(FIXTURES, "vector-%s.json" % vector)) as handle:
        expected = json.load(handle)
    return data, expected


def parse(data):
    """The byte layout of the document: header, slots by kind, payload, checksum."""
    body, checksum = data[:-32], data[-32:]
    assert hashlib.blake2b(body, digest_size=32).digest() == checksum
    assert body[:8] == b"GEMVAULT"
    (version,) = struct.unpack_from("<H", body, 8)
    assert version in (1, 2, 3)
    offset = 10
    vault_id = None
    if version >= 2:
        vault_id = body[offset:offset + 16]
        offset += 16
    generation, count = struct.unpack_from("<QB", body, offset)
    offset += 9
    assert 1 <= count <= (10 if version == 3 else 2)
    slots = []
    for index in range(count):
        kind = body[offset]
        if kind == SSH_AGENT_SLOT:
            assert version == 3 and index >= 1
            raw = body[offset:offset + 186]
            (added,) = struct.unpack_from("<Q", raw, 34)
            slots.append(dict(kind=kind, algorithm=raw[1], fingerprint=raw[2:34], added=added, challenge=raw[42:74],
                              public_key=raw[74:106], sealed=raw[106:186], raw=raw, offset=offset))
            offset += 186
            continue
        if kind == AGE_SLOT:
            # 13 + R + F bytes: added, the recipient's text, an age file whose payload is the data key.
            assert version == 3 and index >= 1
            (added, recipient_length) = struct.unpack_from("<QH", body, offset + 1)
            assert 1 <= recipient_length <= 4096
            recipient = body[offset + 11:offset + 11 + recipient_length]
            assert all(0x20 <= c <= 0x7E for c in recipient)
            (file_length,) = struct.unpack_from("<H", body, offset + 11 + recipient_length)
            assert 1 <= file_length <= 8192
            start = offset + 13 + recipient_length
            sealed = body[start:start + file_length]
            assert sealed.startswith(b"age-encryption.org/v1\n")
            slots.append(dict(kind=kind, added=added, recipient=recipient.decode(), sealed=sealed, raw=body[offset:start + file_length], offset=offset))
            offset = start + file_length
            continue
        kind, algorithm, ops, mem = struct.unpack_from("<BBIQ", body, offset)
        if index == 0:
            assert kind == PASSPHRASE_SLOT
        else:
            assert index == 1 and (kind == LEGACY_RECOVERY_SLOT or (kind == RECOVERY_SLOT and version >= 2))
        assert algorithm == 2
        size = SLOT_SIZES[kind]
        raw = body[offset:offset + size]
        slot = dict(kind=kind, ops=ops, mem=mem, params=raw[:30], salt=raw[14:30], raw=raw, offset=offset)
        if kind == RECOVERY_SLOT:
            slot.update(public_key=raw[30:62], sealed=raw[62:142])
        else:
            slot.update(nonce=raw[30:54], wrapped=raw[54:102])
        slots.append(slot)
        offset += size
    payload_nonce = body[offset:offset + 24]
    (length,) = struct.unpack_from("<I", body, offset + 24)
    header = body[:offset + 28]
    ciphertext = body[offset + 28:]
    assert len(ciphertext) == length
    return dict(version=version, vault_id=vault_id, generation=generation, slots=slots, nonce=payload_nonce,
                header=header, ciphertext=ciphertext)


def argon2id(secret, slot):
    return nacl.crypto_pwhash_alg(32, secret, slot["salt"], slot["ops"], slot["mem"], nacl.crypto_pwhash_ALG_ARGON2ID13)


def unwrap(slot, secret):
    """Kinds 1 and 2: the data key wrapped under the Argon2id KEK."""
    assert slot["kind"] in (PASSPHRASE_SLOT, LEGACY_RECOVERY_SLOT)
    kek = argon2id(secret, slot)
    return nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(slot["wrapped"], SLOT_AD_PREFIX + slot["params"], slot["nonce"], kek)


def open_recovery(slot, canonical):
    """Kind 2 like a passphrase slot; kind 3 through the key pair derived from the code."""
    if slot["kind"] == LEGACY_RECOVERY_SLOT:
        return unwrap(slot, canonical)
    public_key, secret_key = nacl.crypto_box_seed_keypair(argon2id(canonical, slot))
    if public_key != slot["public_key"]:
        return None
    return nacl.crypto_box_seal_open(slot["sealed"], public_key, secret_key)


def canonical_code(typed):
    canonical = typed.replace("-", "").replace(" ", "").upper().replace("O", "0").replace("I", "1").replace("L", "1")
    assert len(canonical) == 32 and all(c in ALPHABET for c in canonical)
    return canonical.encode()


def slot_of(vault, kinds):
    return [s for s in vault["slots"] if s["kind"] in kinds][0]


def decrypt(vault, data_key):
    return nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(vault["ciphertext"], vault["header"], vault["nonce"], data_key)


def unpad(padded):
    # ISO/IEC 7816-4 padding to 512-byte blocks: strip trailing zeros, then the 0x80 marker.
    assert len(padded) % 512 == 0
    unpadded = padded.rstrip(b"\x00")
    assert unpadded[-1] == 0x80 and len(padded) - len(unpadded) < 512
    return unpadded[:-1]


def decode_payload(payload, conversation_keys=None, google=None, sharing=None, links=None, last_used=None, secrets=None):
    """The payload of the document, with the writer rules a reader enforces. When given a list,
    `conversation_keys` receives the conversation keys, current first. When given a dict,
    `google` receives for each key name the Google keys of its values (payload version 5), the
    current value's first: (resource name, service account) or None. When given a dict,
    `sharing` receives the version 6 section: "identity" (agreement secret, signing seed,
    label) or None, and "keys", each key's sharing record by name. `links` receives the Secret
    Manager links (decode_links), and `last_used` each key's last use (payload version 2 on).
    `secrets` receives the secrets for other tools (payload version 9, decode_secrets; version
    10 adds each one's Secret Manager link)."""
    version = payload[0]
    assert version in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    offset = 33
    if conversation_keys is not None:
        conversation_keys.append(payload[1:33])

    def field(width):
        nonlocal offset
        (n,) = struct.unpack_from("<H" if width == 2 else "<I", payload, offset)
        value = payload[offset + width:offset + width + n]
        assert len(value) == n
        offset += width + n
        return value

    def google_record():
        if version < 5:
            return None
        resource, account = field(2), field(2)
        if not resource and not account:
            return None
        assert re.fullmatch(rb"projects/[^/\s]+/locations/[^/\s]+/keys/[^/\s]+", resource), resource
        assert len(resource) <= 512 and len(account) <= 512
        return resource.decode(), account.decode()

    (key_count,) = struct.unpack_from("<H", payload, offset)
    offset += 2
    keys, names = {}, []
    for _ in range(key_count):
        name = field(2)
        assert NAME.fullmatch(name) and not name.startswith(b"-")
        assert not names or names[-1] < name
        names.append(name)
        secret = field(2)
        assert 1 <= len(secret) <= 4096
        if version >= 2:
            created, updated, used = struct.unpack_from("<qqq", payload, offset)
            offset += 24
            assert used >= 0
            if last_used is not None:
                last_used[name.decode()] = used
        else:
            created, updated = struct.unpack_from("<qq", payload, offset)
            offset += 16
        # Version 5: the current value's Google key comes before the count of earlier values.
        records = [google_record()]
        (previous,) = struct.unpack_from("<B", payload, offset)
        offset += 1
        assert previous <= 5 and created <= updated
        for _ in range(previous):
            assert 1 <= len(field(2)) <= 4096
            if version >= 4:
                retired, set_at = struct.unpack_from("<qq", payload, offset)
                offset += 16
                assert created <= set_at <= retired
            else:
                offset += 8
            records.append(google_record())
        keys[name.decode()] = secret.decode()
        if google is not None:
            google[name.decode()] = records
    (setting_count,) = struct.unpack_from("<H", payload, offset)
    offset += 2
    settings, names = {}, []
    for _ in range(setting_count):
        name = field(2)
        assert NAME.fullmatch(name) and not name.startswith(b"-")
        assert not names or names[-1] < name
        names.append(name)
        value = field(4)
        assert len(value) <= 65536
        settings[name.decode()] = value.decode()
    if version >= 3:
        (earlier,) = struct.unpack_from("<H", payload, offset)
        offset += 2
        assert earlier <= 1000
        for _ in range(earlier):
            if conversation_keys is not None:
                conversation_keys.append(payload[offset:offset + 32])
            offset += 32
    if version >= 6:
        offset = decode_sharing(payload, offset, set(keys), {} if sharing is None else sharing, version)
    if version >= 7:
        offset = decode_links(payload, offset, set(keys), {} if links is None else links, version)
    if version >= 9:
        offset = decode_secrets(payload, offset, {} if secrets is None else secrets, version)
    assert offset == len(payload)
    return keys, settings


def decode_sharing(payload, offset, key_names, out, payload_version=6):
    """Payload version 6's sharing section (Docs/vault-format.md); returns the offset after it.
    From version 11 the identity's marker 2 adds its hybrid post-quantum seed (out["hybrid_seed"])."""
    def take(n):
        nonlocal offset
        value = payload[offset:offset + n]
        assert len(value) == n
        offset += n
        return value

    def number(fmt):
        return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

    def text():
        return take(number("<H")).decode()

    marker = number("<B")
    assert marker in ((0, 1, 2) if payload_version >= 11 else (0, 1))
    agreement, signing = (take(32), take(32)) if marker else (None, None)
    out["hybrid_seed"] = take(32) if marker == 2 else None
    out["identity"] = (agreement, signing, text()) if marker else None
    if out["identity"]:
        assert 1 <= len(out["identity"][2].encode()) <= 256
    out["keys"], last = {}, None
    for _ in range(number("<H")):
        name = text()
        assert name in key_names and (last is None or last.encode() < name.encode())
        last = name
        record = {"serial": number("<Q"), "sent_serial": number("<Q")}
        origin = number("<B")
        assert origin in (0, 1, 2)
        record["origin"] = None if origin == 0 else "unsigned" if origin == 1 else (take(32), text())
        path = text()
        record["follow"] = (path,) + struct.unpack("<QQQq", take(32)) if path else None
        record["recipients"] = [(text(), text(), number("<q"), text()) for _ in range(number("<H"))]
        assert len(record["recipients"]) <= 256
        out["keys"][name] = record
    return offset


def decode_links(payload, offset, key_names, out, payload_version=7):
    """Payload version 7's Secret Manager links (Docs/vault-format.md): name -> (reference,
    version, fetched), and from version 8 a fourth item, the rotation (previous version, key to
    retire, finish after) or None; returns the offset after them."""
    (count,) = struct.unpack_from("<H", payload, offset)
    offset += 2
    last = None
    for _ in range(count):
        (length,) = struct.unpack_from("<H", payload, offset)
        name = payload[offset + 2:offset + 2 + length].decode()
        offset += 2 + length
        assert name in key_names and (last is None or last.encode() < name.encode())
        last = name
        (length,) = struct.unpack_from("<H", payload, offset)
        reference = payload[offset + 2:offset + 2 + length].decode("ascii")
        offset += 2 + length
        assert reference.startswith("gsm://") and len(reference) <= 1024
        version, fetched = struct.unpack_from("<Qq", payload, offset)
        offset += 16
        assert version >= 1
        if payload_version < 8:
            out[name] = (reference, version, fetched)
            continue
        marker = payload[offset]
        offset += 1
        assert marker in (0, 1)
        rotation = None
        if marker == 1:
            (previous,) = struct.unpack_from("<Q", payload, offset)
            (length,) = struct.unpack_from("<H", payload, offset + 8)
            retire = payload[offset + 10:offset + 10 + length].decode("ascii")
            offset += 10 + length
            (finish_after,) = struct.unpack_from("<q", payload, offset)
            offset += 8
            assert previous >= 1 and finish_after >= 0
            rotation = (previous, retire, finish_after)
        out[name] = (reference, version, fetched, rotation)
    return offset


def decode_secrets(payload, offset, out, payload_version=9):
    """Payload version 9's secrets for other tools (Docs/vault-format.md): name -> dict of the
    value, dates, note of the tools using it and earlier values (value, replaced, set), and from
    version 10 its Secret Manager link (reference, version, fetched) or None, the serial of its
    last share sent, and the sender pinned by an import (label, signing key, serial) or None;
    returns the offset after them."""
    def take(n):
        nonlocal offset
        value = payload[offset:offset + n]
        assert len(value) == n
        offset += n
        return value

    def number(fmt):
        return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

    def printable(value):
        text = value.decode()
        assert 1 <= len(value) <= 65536 and all(ch in "\n\t" or (ord(ch) >= 0x20 and ord(ch) != 0x7f) for ch in text)
        return text

    last = None
    for _ in range(number("<H")):
        name = take(number("<H"))
        assert NAME.fullmatch(name) and not name.startswith(b"-") and (last is None or last < name)
        last = name
        entry = {"value": printable(take(number("<I")))}
        entry["created"], entry["updated"], entry["last_used"] = number("<q"), number("<q"), number("<q")
        entry["used_by"] = take(number("<H")).decode()
        assert len(entry["used_by"].encode()) <= 1024
        count = number("<B")
        assert count <= 5
        entry["earlier"] = [(printable(take(number("<I"))), number("<q"), number("<q")) for _ in range(count)]
        entry["link"] = None
        if payload_version >= 10:
            marker = number("<B")
            assert marker in (0, 1)
            if marker:
                reference = take(number("<H")).decode("ascii")
                assert reference.startswith("gsm://") and len(reference) <= 1024 and all(0x20 < ord(ch) < 0x7f for ch in reference)
                entry["link"] = (reference, number("<Q"), number("<q"))
                assert entry["link"][1] >= 1
            entry["sent_serial"] = number("<Q")
            entry["sender"] = None
            marker = number("<B")
            assert marker in (0, 1) and entry["sent_serial"] < 2 ** 53
            if marker:
                label = take(number("<H")).decode("ascii")
                entry["sender"] = (label, take(32), number("<Q"))
                assert 1 <= len(label) <= 256 and entry["sender"][2] < 2 ** 53
        out[name.decode()] = entry
    return offset


def document_dumps(vector):
    """The hex dumps of the document's test vector section for `vector`, as bytes."""
    with open(DOCUMENT) as handle:
        text = handle.read()
    title = "## Test vector (format %s)\n" % vector[1]
    assert title in text
    section = text.split(title, 1)[1].split("\n## ", 1)[0]
    dumps = []
    for block in re.findall(r"```\n(.*?)```", section, re.S):
        data = b""
        for line in block.splitlines():
            match = re.match(r"^([0-9a-f]{8}): ((?:[0-9a-f]{2,4} ?)+)", line)
            assert match, line
            assert int(match.group(1), 16) == len(data)
            data += bytes.fromhex(match.group(2).replace(" ", ""))
        dumps.append(data)
    return dumps


@pytest.mark.parametrize("vector", VECTORS)
def test_vector_decrypts_with_the_passphrase_from_the_document_alone(vector):
    data, expected = load(vector)
    vault = parse(data)
    assert vault["version"] == int(vector[1])
    assert vault["generation"] == expected["generation"]
    assert (vault["vault_id"] is not None) == (vault["version"] >= 2)
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    keys, settings = decode_payload(unpad(decrypt(vault, data_key)))
    assert keys == expected["keys"] and settings == expected["settings"]


@pytest.mark.parametrize("vector, kind", [("v1", LEGACY_RECOVERY_SLOT), ("v2", RECOVERY_SLOT), ("v3", RECOVERY_SLOT)])
def test_vector_decrypts_with_the_recovery_code(vector, kind):
    data, expected = load(vector)
    vault = parse(data)
    recovery_slot = slot_of(vault, [LEGACY_RECOVERY_SLOT, RECOVERY_SLOT])
    assert recovery_slot["kind"] == kind
    data_key = open_recovery(recovery_slot, canonical_code(expected["recovery_code"]))
    assert data_key is not None and len(data_key) == 32
    assert data_key == unwrap(slot_of(vault, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    keys, settings = decode_payload(unpad(decrypt(vault, data_key)))
    assert keys == expected["keys"] and settings == expected["settings"]


def test_a_wrong_recovery_code_derives_another_public_key():
    data, expected = load("v2")
    recovery_slot = slot_of(parse(data), [RECOVERY_SLOT])
    wrong = canonical_code(load("v1")[1]["recovery_code"])
    assert wrong != canonical_code(expected["recovery_code"])
    assert open_recovery(recovery_slot, wrong) is None


def test_the_vault_id_is_part_of_the_payload_additional_data():
    data, expected = load("v2")
    vault = parse(data)
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    assert vault["header"][10:26] == vault["vault_id"]
    edited = vault["header"][:10] + bytes([vault["header"][10] ^ 1]) + vault["header"][11:]
    with pytest.raises(CryptoError):
        nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(vault["ciphertext"], edited, vault["nonce"], data_key)


@pytest.mark.parametrize("vector, slots_offset, header_fixed", [("v1", 19, 47), ("v2", 35, 63), ("v3", 35, 63)])
def test_documented_offsets_match_the_vector(vector, slots_offset, header_fixed):
    data, _ = load(vector)
    vault = parse(data)
    assert vault["slots"][0]["offset"] == slots_offset
    s = sum(len(slot["raw"]) for slot in vault["slots"])
    assert len(vault["header"]) == header_fixed + s
    assert len(data) == header_fixed + s + len(vault["ciphertext"]) + 32


@pytest.mark.parametrize("vector", VECTORS)
def test_hex_dumps_in_the_document_are_the_vector_and_its_payload(vector):
    data, expected = load(vector)
    file_dump, payload_dump = document_dumps(vector)
    assert file_dump == data
    vault = parse(data)
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    assert payload_dump == unpad(decrypt(vault, data_key))


def install(env, data, passphrase):
    os.makedirs(os.path.dirname(env.vault), mode=0o700)
    with open(env.vault, "wb") as handle:
        handle.write(data)
    os.chmod(env.vault, 0o600)
    env.write_private(env.passfile, passphrase + "\n")


@pytest.mark.parametrize("vector", VECTORS)
def test_vector_opens_with_the_cli(env, vector):
    data, expected = load(vector)
    install(env, data, expected["passphrase"])
    result = env.run("key", "get")
    assert result.code == 0, result
    assert result.out == expected["keys"]["default"] + "\n"


def test_a_format_1_vault_is_rewritten_as_format_2_with_its_slots_unchanged(env):
    data, expected = load("v1")
    old = parse(data)
    install(env, data, expected["passphrase"])
    result = env.run("key", "set", "second", input="AIzaSySecondKey-0123456789abcdefghijklm\n")
    assert result.code == 0, result
    new = parse(env.vault_bytes())
    assert new["version"] == 2 and len(new["vault_id"]) == 16
    assert new["generation"] == expected["generation"] + 1
    assert [s["raw"] for s in new["slots"]] == [s["raw"] for s in old["slots"]]
    data_key = open_recovery(slot_of(new, [LEGACY_RECOVERY_SLOT]), canonical_code(expected["recovery_code"]))
    keys, _ = decode_payload(unpad(decrypt(new, data_key)))
    assert keys == dict(expected["keys"], second="AIzaSySecondKey-0123456789abcdefghijklm")


def test_rekey_reseals_the_recovery_slot_to_the_same_public_key(env):
    data, expected = load("v2")
    old = parse(data)
    old_key = unwrap(slot_of(old, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    install(env, data, expected["passphrase"])
    result = env.run("rekey")
    assert result.code == 0, result
    new = parse(env.vault_bytes())
    assert new["vault_id"] == old["vault_id"] and new["generation"] == expected["generation"] + 1
    old_recovery, new_recovery = slot_of(old, [RECOVERY_SLOT]), slot_of(new, [RECOVERY_SLOT])
    assert new_recovery["params"] == old_recovery["params"] and new_recovery["public_key"] == old_recovery["public_key"]
    assert new_recovery["sealed"] != old_recovery["sealed"]
    assert slot_of(new, [PASSPHRASE_SLOT])["params"] == slot_of(old, [PASSPHRASE_SLOT])["params"]
    new_key = open_recovery(new_recovery, canonical_code(expected["recovery_code"]))
    assert new_key is not None and new_key != old_key
    assert new_key == unwrap(slot_of(new, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    with pytest.raises(CryptoError):
        decrypt(new, old_key)
    assert decode_payload(unpad(decrypt(new, new_key)))[0] == expected["keys"]
    with open(env.vault + ".bak", "rb") as handle:
        assert handle.read() == env.vault_bytes()


def hkdf_sha256(ikm, salt, info, length):
    """RFC 5869 with the standard library's HMAC: no gemvault code."""
    import hmac
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def open_ssh_slot(slot, ed25519_seed):
    """Kind 4, as the document says: the agent's Ed25519 signature of the context and the
    challenge, HKDF-SHA-256 into a seed, its X25519 key pair, the sealed box."""
    public, secret = nacl.crypto_sign_seed_keypair(ed25519_seed)
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + public
    assert hashlib.sha256(blob).digest() == slot["fingerprint"]
    signature = nacl.crypto_sign(b"gemvault ssh slot v1\n" + slot["challenge"], secret)[:64]
    seed = hkdf_sha256(signature, slot["challenge"], b"gemvault ssh slot v1" + bytes([slot["algorithm"]]) + slot["fingerprint"], 32)
    public_key, secret_key = nacl.crypto_box_seed_keypair(seed)
    if public_key != slot["public_key"]:
        return None
    return nacl.crypto_box_seal_open(slot["sealed"], public_key, secret_key)


def test_rfc5869_cases_hold_for_the_readers_hkdf():
    okm = hkdf_sha256(b"\x0b" * 22, bytes(range(13)), bytes(range(0xf0, 0xfa)), 42)
    assert okm.hex() == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"


def test_the_format_3_vector_opens_through_its_ssh_agent_slot():
    data, expected = load("v3")
    vault = parse(data)
    assert vault["version"] == 3
    [slot] = [s for s in vault["slots"] if s["kind"] == SSH_AGENT_SLOT]
    assert slot["algorithm"] == 1
    assert "SHA256:" + base64.b64encode(slot["fingerprint"]).decode().rstrip("=") == expected["ssh_fingerprint"]
    data_key = open_ssh_slot(slot, bytes.fromhex(expected["ssh_ed25519_seed"]))
    assert data_key == unwrap(slot_of(vault, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    keys, settings = decode_payload(unpad(decrypt(vault, data_key)))
    assert keys == expected["keys"] and settings == expected["settings"]
    # Any other signature derives another key pair, which the slot does not hold.
    other = hkdf_sha256(os.urandom(64), slot["challenge"], b"gemvault ssh slot v1" + bytes([1]) + slot["fingerprint"], 32)
    assert nacl.crypto_box_seed_keypair(other)[0] != slot["public_key"]


def document_payload_dump(title):
    """The one hex dump under a section title of the document, as bytes."""
    with open(DOCUMENT) as handle:
        text = handle.read()
    assert title in text
    section = text.split(title, 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```\n(.*?)```", section, re.S)
    data = b""
    for line in block.splitlines():
        match = re.match(r"^([0-9a-f]{8}): ((?:[0-9a-f]{2,4} ?)+)", line)
        assert match, line
        assert int(match.group(1), 16) == len(data)
        data += bytes.fromhex(match.group(2).replace(" ", ""))
    return data


def test_the_payload_version_8_vector_opens_with_every_section_filled():
    """Issue 40 item 20: a reader following the document opens a vault written today, its
    sharing identity and records, Secret Manager link and rotation record filled."""
    data, expected = load("p8")
    vault = parse(data)
    assert vault["version"] == 2 and vault["generation"] == expected["generation"]
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), expected["passphrase"].encode())
    assert data_key == open_recovery(slot_of(vault, [RECOVERY_SLOT]), canonical_code(expected["recovery_code"]))
    payload = unpad(decrypt(vault, data_key))
    assert payload[0] == expected["payload_version"] == 8
    google, sharing, links, last_used = {}, {}, {}, {}
    keys, settings = decode_payload(payload, google=google, sharing=sharing, links=links, last_used=last_used)
    assert keys == expected["keys"] and settings == expected["settings"] and last_used == expected["last_used"]
    assert google == {name: [tuple(record) if record else None for record in records] for name, records in expected["google"].items()}
    agreement, seed, label = sharing["identity"]
    identity = expected["identity"]
    assert (agreement.hex(), seed.hex(), label) == (identity["agreement_secret"], identity["signing_seed"], identity["label"])
    # The identity's public halves follow from the secrets as the document says.
    assert nacl.crypto_scalarmult_base(agreement).hex() == identity["agreement_public"]
    assert nacl.crypto_sign_seed_keypair(seed)[0].hex() == identity["signing_public"]
    [(name, record)] = sharing["keys"].items()
    wanted = expected["sharing"][name]
    assert (record["serial"], record["sent_serial"]) == (wanted["serial"], wanted["sent_serial"])
    assert record["origin"] == (bytes.fromhex(wanted["sender"]["signing_key"]), wanted["sender"]["label"])
    assert record["follow"] == tuple(wanted["follow"]) and record["recipients"] == [tuple(r) for r in wanted["recipients"]]
    link = expected["links"]["fleet"]
    rotation = link["rotation"]
    assert links == {"fleet": (link["reference"], link["version"], link["fetched"],
                               (rotation["previous_version"], rotation["retire_key"], rotation["finish_after"]))}
    assert document_payload_dump("## Test vector (payload version 8)\n") == payload


def test_the_payload_version_8_vector_opens_with_the_cli(env):
    data, expected = load("p8")
    install(env, data, expected["passphrase"])
    # `fleet` is a linked copy past secret_max_stale: `key get` would refresh it from Google.
    for name in ("default", "shared"):
        result = env.run("key", "get", name)
        assert result.code == 0 and result.out == expected["keys"][name] + "\n", (name, result)
    listed = env.run("key", "list", "--json")
    assert listed.code == 0, listed
    assert expected["links"]["fleet"]["reference"] in listed.out and "fleet" in listed.out


def test_secrets_for_other_tools_are_read_from_payload_version_10_as_documented(env):
    """Issue 43: a vault written today (payload version 11) opens with the document alone, and
    its secrets for other tools are where the document puts them, history and all (a linked
    secret's link: test_secret_manager_secrets.py)."""
    from conftest import PASSPHRASE
    env.init()
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    for name, value, extra in (("github", "ghp_first0123456789abcdefghijklmnopqrstu", ()),
                               ("github", "ghp_second123456789abcdefghijklmnopqrst", ()), ("tls", pem, ("--multiline",))):
        result = env.run("secret", "set", name, *extra, input=value + "\n")
        assert result.code == 0, result
    vault = parse(env.vault_bytes())
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), PASSPHRASE.encode())
    payload = unpad(decrypt(vault, data_key))
    assert payload[0] == 11
    secrets = {}
    decode_payload(payload, secrets=secrets)
    assert sorted(secrets) == ["github", "tls"]
    assert secrets["github"]["value"] == "ghp_second123456789abcdefghijklmnopqrst"
    [(old, replaced, set_at)] = secrets["github"]["earlier"]
    assert old == "ghp_first0123456789abcdefghijklmnopqrstu" and set_at <= replaced
    assert secrets["tls"]["value"] == pem and secrets["tls"]["earlier"] == []
    assert secrets["github"]["link"] is None and secrets["tls"]["link"] is None


def test_an_age_slot_opens_with_debians_age_as_the_document_says(env):
    """Kind 5 read from the layout alone: the age file in it is one Debian's age opens to the
    data key, which decrypts the payload."""
    import subprocess
    env.init()
    assert env.run("key", "set", input="AIzaSyAgeSlotKey-0123456789abcdefghijklm\n").code == 0
    identity = os.path.join(env.root, "identity.txt")
    subprocess.run(["age-keygen", "-o", identity], check=True, capture_output=True)
    recipient = subprocess.run(["age-keygen", "-y", identity], check=True, capture_output=True, text=True).stdout.strip()
    assert env.run("slot", "add", "age", recipient).code == 0
    vault = parse(env.vault_bytes())
    assert vault["version"] == 3 and [s["kind"] for s in vault["slots"]] == [PASSPHRASE_SLOT, RECOVERY_SLOT, AGE_SLOT]
    slot = slot_of(vault, [AGE_SLOT])
    assert slot["recipient"] == recipient and len(slot["raw"]) == 13 + len(recipient) + len(slot["sealed"])
    data_key = subprocess.run(["age", "-d", "-i", identity], input=slot["sealed"], check=True, capture_output=True).stdout
    from conftest import PASSPHRASE
    assert data_key == unwrap(slot_of(vault, [PASSPHRASE_SLOT]), PASSPHRASE.encode())
    keys, _ = decode_payload(unpad(decrypt(vault, data_key)))
    assert keys["default"] == "AIzaSyAgeSlotKey-0123456789abcdefghijklm"
