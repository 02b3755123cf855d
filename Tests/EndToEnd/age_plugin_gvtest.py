"""age-plugin-gvtest: a test age plugin written from age-plugin.md (C2SP), installed into a
temporary PATH by the tests. Its recipients are `age1gvtest1…` (an X25519 public key), its
identities `AGE-PLUGIN-GVTEST-1…` (the X25519 secret); the stanza `gvtest SHARE` seals the file key
with ChaCha20-Poly1305 under HKDF-SHA-256 of an ephemeral agreement: real crypto, so a wrong key
cannot pass. The default identity (`AGE-PLUGIN-GVTEST-1` with no data) takes its secret from the
file GVTEST_DEVICE, standing in for a hardware key.

GVTEST_MODE chooses a misbehaviour: wrong-state, wrong-key, huge, exit, hang, garbage, error, escape, spawn,
postquantum, grease, pin (asks confirm, request-public for the serial 65227134, and request-secret
for the PIN, GVTEST_PIN or 123456).
GVTEST_LOG, when set, gets every command the plugin read (types and arguments only).

Usage: age-plugin-gvtest --age-plugin=recipient-v1|identity-v1, or --generate."""
import base64
import os
import subprocess
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
MODE = os.environ.get("GVTEST_MODE", "")
LABEL = b"gemvault-test/gvtest"


# Bech32 (BIP 173), without the length limit, as age uses it.
def _polymod(values):
    generator = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for i in range(5):
            check ^= generator[i] if (top >> i) & 1 else 0
    return check


def _expand(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _convert(data, source, target, pad):
    acc, bits, out = 0, 0, []
    for value in data:
        acc = (acc << source) | value
        bits += source
        while bits >= target:
            bits -= target
            out.append((acc >> bits) & ((1 << target) - 1))
    if pad and bits:
        out.append((acc << (target - bits)) & ((1 << target) - 1))
    elif not pad and (bits >= source or (acc << (target - bits)) & ((1 << target) - 1)):
        raise ValueError("bad padding")
    return out


def bech32_encode(hrp, data):
    hrp = hrp.lower()
    values = _convert(data, 8, 5, True)
    check = _polymod(_expand(hrp) + values + [0] * 6) ^ 1
    return hrp + "1" + "".join(CHARSET[v] for v in values) + "".join(CHARSET[(check >> 5 * (5 - i)) & 31] for i in range(6))


def bech32_decode(text):
    lowered = text.lower()
    sep = lowered.rindex("1")
    hrp, values = lowered[:sep], [CHARSET.index(c) for c in lowered[sep + 1:]]
    if _polymod(_expand(hrp) + values) != 1:
        raise ValueError("bad checksum")
    return hrp, bytes(_convert(values[:-6], 5, 8, False))


def b64(data):
    return base64.b64encode(data).decode().rstrip("=")


def unb64(text):
    padded = text + "=" * (-len(text) % 4)
    data = base64.b64decode(padded, validate=True)
    if b64(data) != text:
        raise ValueError("not canonical")
    return data


# The protocol: stanzas on stdin and stdout.
def read_stanza():
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    words = line.decode().rstrip("\n").split(" ")
    assert words[0] == "->", line
    body = b""
    while True:
        body_line = sys.stdin.buffer.readline().decode().rstrip("\n")
        body += unb64(body_line)
        if len(body_line) < 64:
            break
    if os.environ.get("GVTEST_LOG"):
        with open(os.environ["GVTEST_LOG"], "a") as log:
            log.write(" ".join(words[1:2] + [w if not w.startswith("AGE-PLUGIN-") else "AGE-PLUGIN-…" for w in words[2:]]) + "\n")
    return words[1], words[2:], body


def write_stanza(command, args=(), body=b""):
    encoded = b64(body)
    lines = [encoded[i:i + 64] for i in range(0, len(encoded), 64)]
    if not lines or len(lines[-1]) == 64:
        lines.append("")
    sys.stdout.write(" ".join(["->", command] + list(args)) + "\n" + "\n".join(lines) + "\n")
    sys.stdout.flush()


def ask(command, args=(), body=b""):
    """A phase 2 request: the client's answer."""
    write_stanza(command, args, body)
    return read_stanza()


def read_phase_one():
    commands = []
    while True:
        command, args, body = read_stanza()
        if command == "done":
            return commands
        commands.append((command, args, body))


# The crypto.
def wrap_key(shared, share, public):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=share + public, info=LABEL).derive(shared)


def raw_public(key):
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def wrap(file_key, public):
    ephemeral = X25519PrivateKey.generate()
    share = raw_public(ephemeral)
    shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(public))
    return ["gvtest", b64(share)], ChaCha20Poly1305(wrap_key(shared, share, public)).encrypt(b"\0" * 12, file_key, None)


def unwrap(secret, args, body):
    key = X25519PrivateKey.from_private_bytes(secret)
    share = unb64(args[0])
    shared = key.exchange(X25519PublicKey.from_public_bytes(share))
    try:
        return ChaCha20Poly1305(wrap_key(shared, share, raw_public(key))).decrypt(b"\0" * 12, body, None)
    except Exception:
        return None


def misbehave(machine):
    """The misbehaviours that replace phase 2; returns when the mode is not one of them."""
    if MODE == "exit":
        sys.stderr.write("gvtest: the token fell off the desk\n")
        sys.exit(3)
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "spawn":
        child = subprocess.Popen(["sleep", "3600"])
        with open(os.environ["GVTEST_CHILD_PID"], "w") as handle:
            handle.write(str(child.pid))
        time.sleep(3600)
    if MODE == "wrong-state":
        ask("file-key" if machine == "recipient-v1" else "recipient-stanza", ["0"] + (["gvtest", "AAAA"] if machine == "identity-v1" else []), b"\1" * 16)
    if MODE == "huge":
        write_stanza("msg", [], b"x" * (1 << 20))
        time.sleep(60)
    if MODE == "garbage":
        sys.stdout.write("-> msg\n!!!not*base64\n")
        sys.stdout.flush()
        time.sleep(60)
    if MODE == "error":
        ask("error", ["internal"], b"the token is locked")
        write_stanza("done")
        sys.exit(0)
    if MODE == "escape":
        ask("msg", [], b"touch the key \x1b]0;pwned\x07\x1b[2J now")
    if MODE == "grease":
        answer = ask("grease-xyz", ["a", "b"], b"grease")
        if answer[0] != "unsupported":
            sys.exit(9)
    if MODE == "pin":
        answer = ask("confirm", [b64(b"Use the token"), b64(b"Skip")], b"Plug in the gvtest token")
        if answer[:2] != ("ok", ["yes"]):
            ask("error", ["internal"], b"the user skipped the token")
            write_stanza("done")
            sys.exit(0)
        answer = ask("request-public", [], b"Serial of the gvtest token:")
        if answer[0] != "ok" or answer[2] != b"65227134":
            ask("error", ["internal"], b"no such token")
            write_stanza("done")
            sys.exit(0)
        answer = ask("request-secret", [], b"PIN for the gvtest token:")
        if answer[0] != "ok" or answer[2] != os.environ.get("GVTEST_PIN", "123456").encode():
            ask("error", ["internal"], b"no PIN, or a wrong one")
            write_stanza("done")
            sys.exit(0)


def recipient_v1():
    commands = read_phase_one()
    misbehave("recipient-v1")
    recipients = [bech32_decode(args[0])[1] for command, args, _ in commands if command == "add-recipient"]
    keys = [body for command, _, body in commands if command == "wrap-file-key"]
    labels_wanted = any(command == "extension-labels" for command, _, _ in commands)
    for index, file_key in enumerate(keys):
        for public in recipients:
            args, body = wrap(file_key, public)
            ask("recipient-stanza", [str(index)] + args, body)
    if labels_wanted and MODE == "postquantum":
        ask("labels", ["postquantum"])
    write_stanza("done")


def identity_secret(text):
    hrp, data = bech32_decode(text)
    if data:
        return data
    with open(os.environ["GVTEST_DEVICE"], "rb") as device:
        return device.read()


def identity_v1():
    commands = read_phase_one()
    misbehave("identity-v1")
    secrets = [identity_secret(args[0]) for command, args, _ in commands if command == "add-identity"]
    stanzas = [(args, body) for command, args, body in commands if command == "recipient-stanza"]
    found = {}
    for args, body in stanzas:
        index, kind, rest = args[0], args[1], args[2:]
        if kind != "gvtest" or index in found:
            continue
        for secret in secrets:
            file_key = unwrap(secret, rest, body)
            if file_key is not None:
                found[index] = file_key
                break
    if MODE == "wrong-key":
        found = {"0": os.urandom(16)}
    for index, file_key in found.items():
        ask("file-key", [index], file_key)
    write_stanza("done")


def generate():
    key = X25519PrivateKey.generate()
    secret = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    print("#    Recipient: " + bech32_encode("age1gvtest", raw_public(key)))
    print(bech32_encode("AGE-PLUGIN-GVTEST-", secret).upper())


if __name__ == "__main__":
    if sys.argv[1:] == ["--generate"]:
        generate()
    elif sys.argv[1:] == ["--device-recipient"]:
        with open(os.environ["GVTEST_DEVICE"], "rb") as device:
            print(bech32_encode("age1gvtest", raw_public(X25519PrivateKey.from_private_bytes(device.read()))))
    elif sys.argv[1:] == ["--age-plugin=recipient-v1"]:
        recipient_v1()
    elif sys.argv[1:] == ["--age-plugin=identity-v1"]:
        identity_v1()
    else:
        sys.stderr.write("age-plugin-gvtest: unknown state machine %r\n" % sys.argv[1:])
        sys.exit(1)
