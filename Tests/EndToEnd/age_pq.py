"""A small age reader and writer for the post-quantum and tagged stanzas, written from the specs
(C2SP age.md, hpke-pq.md, RFC 9180) apart from gemvault, to cross-check it: ML-KEM-768 from
kyber-py, SHA-3 and SHAKE from hashlib, X25519, P-256, HKDF and ChaCha20-Poly1305 from
`cryptography`. It holds identities (hybrid seeds, P-256 keys standing in for hardware), decrypts
what gemvault writes to them and writes hybrid files gemvault must read."""
import base64
import hashlib
import hmac
import os

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand
from kyber_py.ml_kem import ML_KEM_768

# --- Bech32 (BIP 173, without its length limit, as age uses it) ---

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _polymod(values):
    generator = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for i in range(5):
            checksum ^= generator[i] if (top >> i) & 1 else 0
    return checksum


def _expand(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _regroup(data, source, target, pad):
    accumulator, bits, out = 0, 0, []
    for value in data:
        accumulator = accumulator << source | value
        bits += source
        while bits >= target:
            bits -= target
            out.append(accumulator >> bits & ((1 << target) - 1))
        accumulator &= (1 << bits) - 1
    if pad and bits:
        out.append(accumulator << (target - bits) & ((1 << target) - 1))
    elif not pad and (bits >= source or accumulator):
        raise ValueError("bad padding")
    return out


def bech32_encode(hrp, data, upper=False):
    values = _regroup(data, 8, 5, True)
    check = _polymod(_expand(hrp.lower()) + values + [0] * 6) ^ 1
    text = hrp.lower() + "1" + "".join(CHARSET[v] for v in values) + "".join(CHARSET[check >> 5 * (5 - i) & 31] for i in range(6))
    return text.upper() if upper else text


def bech32_decode(text):
    lowered = text.lower()
    separator = lowered.rindex("1")
    hrp, values = lowered[:separator], [CHARSET.index(c) for c in lowered[separator + 1:]]
    if _polymod(_expand(hrp) + values) != 1:
        raise ValueError("bad checksum")
    return hrp, bytes(_regroup(values[:-6], 5, 8, False))


# --- HKDF, HPKE (RFC 9180 base mode, HKDF-SHA256, ChaCha20Poly1305) ---

def hkdf_extract(salt, ikm):
    return hmac.new(salt or bytes(32), ikm, hashlib.sha256).digest()


def hkdf_expand(prk, info, length):
    return HKDFExpand(hashes.SHA256(), length, info).derive(prk)


def i2osp(value, length):
    return value.to_bytes(length, "big")


def hpke_key_schedule(kem_id, shared_secret, info):
    suite = b"HPKE" + i2osp(kem_id, 2) + i2osp(1, 2) + i2osp(3, 2)

    def extract(salt, label, ikm):
        return hkdf_extract(salt, b"HPKE-v1" + suite + label + ikm)

    def expand(prk, label, context, length):
        return hkdf_expand(prk, i2osp(length, 2) + b"HPKE-v1" + suite + label + context, length)

    context = b"\x00" + extract(b"", b"psk_id_hash", b"") + extract(b"", b"info_hash", info)
    secret = extract(shared_secret, b"secret", b"")
    return expand(secret, b"key", context, 32), expand(secret, b"base_nonce", context, 12)


def hpke_seal(kem_id, shared_secret, info, plaintext):
    key, nonce = hpke_key_schedule(kem_id, shared_secret, info)
    return ChaCha20Poly1305(key).encrypt(nonce, plaintext, b"")


def hpke_open(kem_id, shared_secret, info, ciphertext):
    key, nonce = hpke_key_schedule(kem_id, shared_secret, info)
    return ChaCha20Poly1305(key).decrypt(nonce, ciphertext, b"")


# --- the hybrid KEMs (hpke-pq.md) and DHKEM(P-256) ---

P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
XWING = {"id": 0x647A, "label": b"\\.//^\\", "nseed": 32, "nelem": 32}
MLKEM_P256 = {"id": 0x0050, "label": b"MLKEM768-P256", "nseed": 128, "nelem": 65}


def p256_scalar(seed):
    for start in range(0, len(seed), 32):
        value = int.from_bytes(seed[start:start + 32], "big")
        if 0 < value < P256_ORDER:
            return value
    raise ValueError("no scalar")


def p256_public(private):
    return private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def group_exchange(kem, scalar_bytes_or_int, point):
    if kem is XWING:
        private = x25519.X25519PrivateKey.from_private_bytes(scalar_bytes_or_int)
        return private.exchange(x25519.X25519PublicKey.from_public_bytes(point))
    private = ec.derive_private_key(scalar_bytes_or_int, ec.SECP256R1())
    return private.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point))


def expand_key(kem, seed):
    full = hashlib.shake_256(seed).digest(64 + kem["nseed"])
    ek_pq, dk_pq = ML_KEM_768._keygen_internal(full[:32], full[32:64])
    if kem is XWING:
        scalar = full[64:96]
        ek_t = x25519.X25519PrivateKey.from_private_bytes(scalar).public_key().public_bytes_raw()
    else:
        scalar = p256_scalar(full[64:])
        ek_t = p256_public(ec.derive_private_key(scalar, ec.SECP256R1()))
    return ek_pq + ek_t, dk_pq, scalar


def hybrid_decaps(kem, seed, enc):
    ek, dk_pq, scalar = expand_key(kem, seed)
    ct_pq, ct_t = enc[:1088], enc[1088:]
    ss_pq = ML_KEM_768.decaps(dk_pq, ct_pq)
    ss_t = group_exchange(kem, scalar, ct_t)
    return hashlib.sha3_256(ss_pq + ss_t + ct_t + ek[1184:] + kem["label"]).digest()


def hybrid_encaps(kem, ek):
    ss_pq, ct_pq = ML_KEM_768.encaps(ek[:1184])
    if kem is XWING:
        ephemeral = os.urandom(32)
        ct_t = x25519.X25519PrivateKey.from_private_bytes(ephemeral).public_key().public_bytes_raw()
    else:
        ephemeral = p256_scalar(os.urandom(128))
        ct_t = p256_public(ec.derive_private_key(ephemeral, ec.SECP256R1()))
    ss_t = group_exchange(kem, ephemeral, ek[1184:])
    return hashlib.sha3_256(ss_pq + ss_t + ct_t + ek[1184:] + kem["label"]).digest(), ct_pq + ct_t


def dhkem_p256_decaps(private, enc):
    suite = b"KEM" + i2osp(0x0010, 2)
    dh = group_exchange(MLKEM_P256, private.private_numbers().private_value, enc)
    prk = hkdf_extract(b"", b"HPKE-v1" + suite + b"eae_prk" + dh)
    context = enc + p256_public(private)
    return hkdf_expand(prk, i2osp(32, 2) + b"HPKE-v1" + suite + b"shared_secret" + context, 32)


def stanza_tag(enc, point, label):
    return hkdf_extract(label, enc + hashlib.sha256(point).digest()[:4])[:4]


# --- identities this module holds ---

class HybridIdentity:
    """An `AGE-SECRET-KEY-PQ-1…` identity: a 32-byte seed."""

    def __init__(self, seed=None):
        self.seed = seed or os.urandom(32)
        self.public = expand_key(XWING, self.seed)[0]

    @property
    def text(self):
        return bech32_encode("AGE-SECRET-KEY-PQ-", self.seed, upper=True)

    @property
    def recipient(self):
        return bech32_encode("age1pq", self.public)

    def unwrap(self, stanza):
        kind, args, body = stanza
        if kind != "mlkem768x25519":
            return None
        assert len(args) == 1 and len(body) == 32
        enc = b64decode(args[0])
        assert len(enc) == 1120
        try:
            return hpke_open(0x647A, hybrid_decaps(XWING, self.seed, enc), b"age-encryption.org/mlkem768x25519", body)
        except Exception:
            return None


class TagIdentity:
    """A P-256 key standing in for a YubiKey's (`age1tag1…`), or with an ML-KEM seed (`age1tagpq1…`)."""

    def __init__(self, hybrid):
        self.hybrid = hybrid
        if hybrid:
            self.seed = os.urandom(32)
            self.public = expand_key(MLKEM_P256, self.seed)[0]
        else:
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.public = self.private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)

    @property
    def recipient(self):
        return bech32_encode("age1tagpq" if self.hybrid else "age1tag", self.public)

    def unwrap(self, stanza):
        kind, args, body = stanza
        if kind != ("mlkem768p256tag" if self.hybrid else "p256tag"):
            return None
        assert len(args) == 2 and len(body) == 32
        tag, enc = b64decode(args[0]), b64decode(args[1])
        assert len(tag) == 4 and len(enc) == (1153 if self.hybrid else 65)
        if self.hybrid:
            label = b"age-encryption.org/mlkem768p256tag"
            if tag != stanza_tag(enc, self.public[1184:], label):
                return None
            return hpke_open(0x0050, hybrid_decaps(MLKEM_P256, self.seed, enc), label, body)
        label = b"age-encryption.org/p256tag"
        if tag != stanza_tag(enc, self.public, label):
            return None
        return hpke_open(0x0010, dhkem_p256_decaps(self.private, enc), label, body)


# --- the age file: header, MAC, STREAM payload ---

def b64decode(text):
    data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    assert base64.b64encode(data).decode().rstrip("=") == text, "not canonical base64"
    return data


def b64encode(data):
    return base64.b64encode(data).decode().rstrip("=")


def parse_header(data):
    lines = data.split(b"\n")
    assert lines[0] == b"age-encryption.org/v1"
    stanzas, index, position = [], 1, len(lines[0]) + 1
    while not lines[index].startswith(b"---"):
        words = lines[index].decode().split(" ")
        assert words[0] == "->"
        position += len(lines[index]) + 1
        index += 1
        body = b""
        while True:
            line = lines[index]
            position += len(line) + 1
            index += 1
            body += b64decode(line.decode())
            if len(line) < 64:
                break
        stanzas.append((words[1], words[2:], body))
    mac_line = lines[index]
    header = data[:position + 3]
    return stanzas, header, b64decode(mac_line[4:].decode()), position + len(mac_line) + 1


def decrypt(data, identities):
    """The plaintext of an age file, opened by the first identity that matches a stanza."""
    stanzas, header, mac, payload_start = parse_header(data)
    file_key = next((key for stanza in stanzas for identity in identities for key in [identity.unwrap(stanza)] if key), None)
    assert file_key is not None, "no identity matches: %s" % [s[0] for s in stanzas]
    mac_key = HKDF(hashes.SHA256(), 32, b"", b"header").derive(file_key)
    assert hmac.compare_digest(hmac.new(mac_key, header, hashlib.sha256).digest(), mac), "header MAC"
    payload = data[payload_start:]
    key = HKDF(hashes.SHA256(), 32, payload[:16], b"payload").derive(file_key)
    aead, out, counter, rest = ChaCha20Poly1305(key), b"", 0, payload[16:]
    while True:
        chunk, rest = rest[:65536 + 16], rest[65536 + 16:]
        last = not rest
        out += aead.decrypt(counter.to_bytes(11, "big") + (b"\x01" if last else b"\x00"), chunk, None)
        counter += 1
        if last:
            return out


def encrypt_to_hybrid(plaintext, recipient):
    """An age file of `plaintext` (under 64 KiB) for one `age1pq1…` recipient."""
    hrp, public = bech32_decode(recipient)
    assert hrp == "age1pq" and len(public) == 1216
    file_key = os.urandom(16)
    shared, enc = hybrid_encaps(XWING, public)
    body = hpke_seal(0x647A, shared, b"age-encryption.org/mlkem768x25519", file_key)
    encoded = b64encode(body)
    header = ("age-encryption.org/v1\n-> mlkem768x25519 %s\n%s\n---" % (b64encode(enc), encoded)).encode()
    mac_key = HKDF(hashes.SHA256(), 32, b"", b"header").derive(file_key)
    header += b" " + b64encode(hmac.new(mac_key, header, hashlib.sha256).digest()).encode() + b"\n"
    nonce = os.urandom(16)
    key = HKDF(hashes.SHA256(), 32, nonce, b"payload").derive(file_key)
    assert len(plaintext) <= 65536
    return header + nonce + ChaCha20Poly1305(key).encrypt(bytes(11) + b"\x01", plaintext, None)


def stanza_types(data):
    return [stanza[0] for stanza in parse_header(data)[0]]
