"""Section 8 of the benchmark suite: quick unlock. An ssh-agent slot against `--version` and the
ssh-agent's own signing time, an age slot opened by an identity file against `--version` and one
X25519 decapsulation, and a PIN after an idle lock against one interactive Argon2id."""
import os
import socket
import struct
import subprocess
import time


def agent_request(path, message):
    """One ssh-agent request and its whole answer, timed (the agent's own cost, no process start)."""
    client = socket.socket(socket.AF_UNIX)
    client.connect(path)
    started = time.perf_counter()
    client.sendall(struct.pack(">I", len(message)) + message)
    length = struct.unpack(">I", client.recv(4))[0]
    answer = b""
    while len(answer) < length:
        answer += client.recv(length - len(answer))
    elapsed = (time.perf_counter() - started) * 1000
    client.close()
    return answer, elapsed


def wire(data):
    return struct.pack(">I", len(data)) + data


def gemvault_frame(op, fields=()):
    body = bytes([op]) + b"".join(bytes([tag]) + struct.pack("<I", len(value)) + value for tag, value in fields)
    return b"GVA1" + struct.pack("<I", len(body)) + body


def pin_request(folder, pin):
    """unlockWithPIN straight to the gemvault agent, timed from send to the whole answer."""
    [name] = [n for n in os.listdir(folder) if n.endswith(".sock")]
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    client = socket.socket(socket.AF_UNIX)
    try:
        client.connect("/proc/self/fd/%d/%s" % (handle, name))
    finally:
        os.close(handle)
    started = time.perf_counter()
    client.sendall(gemvault_frame(20, [(58, pin.encode())]))
    answer = b""
    while True:
        chunk = client.recv(65536)
        if not chunk:
            break
        answer += chunk
    elapsed = (time.perf_counter() - started) * 1000
    client.close()
    return answer, elapsed


def measure(suite, alternate, med, timed, say, record, verdict):
    say("## 8. Quick unlock: an ssh-agent slot, and a PIN after an idle lock (%d runs each)" % suite.runs)
    vault = suite.vault("quick")
    vault.add_keys(1)
    folder = os.path.join(vault.dir, "ssh")
    os.mkdir(folder, 0o700)
    key = os.path.join(folder, "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    sock = os.path.join(folder, "agent.sock")
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", sock], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not os.path.exists(sock):
            time.sleep(0.01)
        subprocess.run(["ssh-add", "-q", key], env={"SSH_AUTH_SOCK": sock, "PATH": os.environ["PATH"]}, check=True)
        vault.env["SSH_AUTH_SOCK"] = sock
        vault.gv("slot", "add", "ssh", "--passphrase-file", vault.passfile)
        import base64
        with open(key + ".pub") as handle:
            blob = base64.b64decode(handle.read().split()[1])
        sign = bytes([13]) + wire(blob) + wire(b"gemvault ssh slot v1\n" + bytes(32)) + struct.pack(">I", 0)
        r = alternate([("--version", lambda: timed(vault.argv("--version"), env=vault.env)),
                       ("signing", lambda: agent_request(sock, sign)[1]),
                       ("key get (ssh slot)", lambda: timed(vault.argv("key", "get", "key0000", "--no-session"), env=vault.env))], suite.runs)
        v, s, g = med(r["--version"]), med(r["signing"]), med(r["key get (ssh slot)"])
        say("  %-34s %8.2f ms" % ("gemvault --version", v))
        say("  %-34s %8.2f ms" % ("ssh-agent signing (its own)", s))
        say("  %-34s %8.2f ms   %.2fx (--version + signing) (target <= 1.5)" % ("key get through the ssh slot", g, g / (v + s)))
        record("`key get` through an ssh slot / (`--version` + signing)", "%.2fx (%.2f / %.2f + %.2f ms)" % (g / (v + s), g, v, s),
               "<= 1.5x", verdict(g / (v + s), 1.5))
    finally:
        agent.kill()
        agent.wait()
        vault.env.pop("SSH_AUTH_SOCK", None)
    measure_age_slot(suite, vault, alternate, med, timed, say, record, verdict)

    # The PIN: unlock --pin with a 1 s idle limit, then after each idle lock one PIN request.
    pin = "4812"
    subprocess.run(vault.argv("unlock", "--pin", "--idle", "1s", "--passphrase-file", vault.passfile), env=vault.env,
                   input=pin + "\n", text=True, capture_output=True, check=True)
    vault.unlocked = True
    runtime = os.path.join(vault.env["XDG_RUNTIME_DIR"], "gemvault")

    def pin_unlock():
        time.sleep(1.6)  # past the idle limit: the agent wipes the vault and keeps the PIN's copy
        answer, elapsed = pin_request(runtime, pin)
        if answer[8] != 0:
            raise SystemExit("bench: the PIN did not open the session")
        return elapsed
    r = alternate([("crypto_pwhash x1", lambda: timed(suite.ref_pwhash("interactive"))), ("PIN", pin_unlock)], suite.runs)
    one, p = med(r["crypto_pwhash x1"]), med(r["PIN"])
    say("  %-34s %8.1f ms" % ("crypto_pwhash x1 interactive (C)", one))
    say("  %-34s %8.1f ms   %.3fx crypto_pwhash (target <= 1.05)" % ("PIN unlock (the agent's answer)", p, p / one))
    record("PIN unlock / one interactive crypto_pwhash", "%.3fx (%.1f / %.1f ms)" % (p / one, p, one), "<= 1.05x", verdict(p / one, 1.05))
    vault.lock()


def decapsulation():
    """One X25519 stanza's opening as age does it, in-process (libsodium through PyNaCl): the
    agreement, HKDF-SHA-256 and ChaCha20-Poly1305 of 16 bytes; ms."""
    import hashlib
    import hmac
    import nacl.bindings as nacl
    secret, share = os.urandom(32), nacl.crypto_scalarmult_base(os.urandom(32))
    key = nacl.crypto_aead_chacha20poly1305_ietf_encrypt(bytes(16), None, bytes(12), os.urandom(32))
    started = time.perf_counter()
    shared = nacl.crypto_scalarmult(secret, share)
    prk = hmac.new(share + nacl.crypto_scalarmult_base(secret), shared, hashlib.sha256).digest()
    wrap = hmac.new(prk, b"age-encryption.org/v1/X25519\x01", hashlib.sha256).digest()
    try:
        nacl.crypto_aead_chacha20poly1305_ietf_decrypt(key, None, bytes(12), wrap)
    except Exception:
        pass  # another key: the cost is the same
    return (time.perf_counter() - started) * 1000


def measure_age_slot(suite, vault, alternate, med, timed, say, record, verdict):
    """`key get` through an age slot with a file identity (GEMVAULT_AGE_IDENTITY), no session."""
    identity = os.path.join(vault.dir, "age-identity.txt")
    subprocess.run(["age-keygen", "-o", identity], check=True, capture_output=True)
    os.chmod(identity, 0o600)
    recipient = subprocess.run(["age-keygen", "-y", identity], check=True, capture_output=True, text=True).stdout.strip()
    vault.gv("slot", "add", "age", recipient, "--passphrase-file", vault.passfile)
    with_identity = dict(vault.env, GEMVAULT_AGE_IDENTITY=identity)
    r = alternate([("--version", lambda: timed(vault.argv("--version"), env=vault.env)),
                   ("decapsulation", decapsulation),
                   ("key get (age slot)", lambda: timed(vault.argv("key", "get", "key0000", "--no-session"), env=with_identity))], suite.runs)
    v, d, g = med(r["--version"]), med(r["decapsulation"]), med(r["key get (age slot)"])
    say("  %-34s %8.2f ms" % ("X25519 decapsulation (PyNaCl)", d))
    say("  %-34s %8.2f ms   %.2fx (--version + decapsulation) (target <= 1.5)" % ("key get through the age slot", g, g / (v + d)))
    record("`key get` through an age slot / (`--version` + decapsulation)", "%.2fx (%.2f / %.2f + %.2f ms)" % (g / (v + d), g, v, d),
           "<= 1.5x", verdict(g / (v + d), 1.5))
