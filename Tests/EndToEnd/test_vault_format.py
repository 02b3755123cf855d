"""Decrypts the committed test vector with PyNaCl, following only Docs/vault-format.md.

This is the proof that the document is complete: another libsodium binding, no gemvault code.
"""
import hashlib
import json
import os
import struct

import pytest

nacl = pytest.importorskip("nacl.bindings", reason="PyNaCl is needed to check the format document independently")
from nacl import pwhash  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "VaultCoreTests", "Fixtures")
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def load():
    with open(os.path.join(FIXTURES, "vector-v1.vault"), "rb") as handle:
        data = handle.read()
    with open(os.path.join(FIXTURES, "vector-v1.json")) as handle:
        expected = json.load(handle)
    return data, expected


def parse(data):
    body, checksum = data[:-32], data[-32:]
    assert hashlib.blake2b(body, digest_size=32).digest() == checksum
    assert body[:8] == b"GEMVAULT"
    version, generation, count = struct.unpack_from("<HQB", body, 8)
    offset = 19
    slots = []
    for _ in range(count):
        kind, algorithm, ops, mem = struct.unpack_from("<BBIQ", body, offset)
        salt = body[offset + 14:offset + 30]
        nonce = body[offset + 30:offset + 54]
        wrapped = body[offset + 54:offset + 102]
        slots.append(dict(kind=kind, algorithm=algorithm, ops=ops, mem=mem, salt=salt, nonce=nonce, wrapped=wrapped,
                          params=body[offset:offset + 30]))
        offset += 102
    payload_nonce = body[offset:offset + 24]
    (length,) = struct.unpack_from("<I", body, offset + 24)
    header = body[:offset + 28]
    ciphertext = body[offset + 28:]
    assert len(ciphertext) == length
    return dict(version=version, generation=generation, slots=slots, nonce=payload_nonce, header=header, ciphertext=ciphertext)


def unwrap(slot, secret):
    kek = pwhash.argon2id.kdf(32, secret, slot["salt"], opslimit=slot["ops"], memlimit=slot["mem"])
    ad = b"gemvault slot\x00" + b"GEMVAULT" + b"\x01\x00" + slot["params"]
    return nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(slot["wrapped"], ad, slot["nonce"], kek)


def decode_payload(padded):
    # ISO/IEC 7816-4 padding: strip trailing zeros, then the 0x80 marker.
    unpadded = padded.rstrip(b"\x00")
    assert unpadded[-1] == 0x80 and len(padded) % 512 == 0
    payload = unpadded[:-1]
    assert payload[0] == 1
    offset = 33
    (key_count,) = struct.unpack_from("<H", payload, offset)
    offset += 2
    keys = {}
    for _ in range(key_count):
        (n,) = struct.unpack_from("<H", payload, offset); name = payload[offset + 2:offset + 2 + n].decode(); offset += 2 + n
        (n,) = struct.unpack_from("<H", payload, offset); secret = payload[offset + 2:offset + 2 + n].decode(); offset += 2 + n
        created, updated, previous = struct.unpack_from("<qqB", payload, offset); offset += 17
        for _ in range(previous):
            (n,) = struct.unpack_from("<H", payload, offset); offset += 2 + n + 8
        keys[name] = secret
    (setting_count,) = struct.unpack_from("<H", payload, offset)
    offset += 2
    settings = {}
    for _ in range(setting_count):
        (n,) = struct.unpack_from("<H", payload, offset); name = payload[offset + 2:offset + 2 + n].decode(); offset += 2 + n
        (n,) = struct.unpack_from("<I", payload, offset); settings[name] = payload[offset + 4:offset + 4 + n].decode(); offset += 4 + n
    assert offset == len(payload)
    return keys, settings


def test_vector_decrypts_with_the_passphrase_from_the_document_alone():
    data, expected = load()
    vault = parse(data)
    assert vault["version"] == 1 and vault["generation"] == expected["generation"]
    passphrase_slot = [s for s in vault["slots"] if s["kind"] == 1][0]
    assert passphrase_slot["algorithm"] == 2
    data_key = unwrap(passphrase_slot, expected["passphrase"].encode())
    padded = nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(vault["ciphertext"], vault["header"], vault["nonce"], data_key)
    keys, settings = decode_payload(padded)
    assert keys == expected["keys"] and settings == expected["settings"]


def test_vector_decrypts_with_the_recovery_code():
    data, expected = load()
    vault = parse(data)
    canonical = expected["recovery_code"].replace("-", "")
    assert len(canonical) == 32 and all(c in ALPHABET for c in canonical)
    recovery_slot = [s for s in vault["slots"] if s["kind"] == 2][0]
    data_key = unwrap(recovery_slot, canonical.encode())
    padded = nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(vault["ciphertext"], vault["header"], vault["nonce"], data_key)
    assert decode_payload(padded)[0] == expected["keys"]


def test_vector_opens_with_the_cli(env):
    data, expected = load()
    os.makedirs(os.path.dirname(env.vault), mode=0o700)
    with open(env.vault, "wb") as handle:
        handle.write(data)
    os.chmod(env.vault, 0o600)
    env.write_private(env.passfile, expected["passphrase"] + "\n")
    assert env.run("key", "get").out == expected["keys"]["default"] + "\n"
