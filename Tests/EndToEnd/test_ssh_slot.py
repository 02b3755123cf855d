"""ssh-agent slots (Docs/quick-unlock.md) against real peers: OpenSSH's ssh-agent with keys
ssh-keygen makes here, a PKCS#11 token (SoftHSM) loaded with ssh-add -s, and a hostile agent
that answers wrongly in every way the protocol allows."""
import base64
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time

import nacl.bindings as nacl
import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, wait_until
from ptyrun import PtySession

SOFTHSM = "/usr/lib/softhsm/libsofthsm2.so"


class SSHAgent:
    """A real ssh-agent in the foreground on its own socket, stopped at the end."""

    def __init__(self, folder, extra_env=None):
        self.socket = os.path.join(folder, "agent.sock")
        env = dict(os.environ)
        env.update(extra_env or {})
        self.process = subprocess.Popen(["ssh-agent", "-D", "-a", self.socket], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        # The socket file appears at bind(), before listen(): wait until a connection is taken.
        wait_until(self.accepts, "ssh-agent's socket")

    def accepts(self):
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def add(self, key, *options):
        result = subprocess.run(["ssh-add"] + list(options) + [key], env={"SSH_AUTH_SOCK": self.socket, "PATH": os.environ["PATH"]},
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr

    def stop(self):
        self.process.kill()
        self.process.wait()


def keygen(folder, kind, bits=None):
    path = os.path.join(folder, "id_" + kind)
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", kind + "@test", "-f", path] + (["-b", str(bits)] if bits else []), check=True)
    return path


def fingerprint(public_path):
    return subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", public_path], capture_output=True, text=True, check=True).stdout.split()[1]


@pytest.fixture
def vault(env):
    env.recovery_code = env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    folder = os.path.join(env.root, "ssh")
    os.mkdir(folder, 0o700)
    env.ssh_folder = folder
    env.agent = SSHAgent(folder)
    env.vars["SSH_AUTH_SOCK"] = env.agent.socket
    yield env
    env.run("lock", passphrase=False)
    env.agent.stop()


def no_passphrase(user, *args, **kwargs):
    """A command with nothing to type and no passphrase flag: only an ssh slot can open the vault."""
    return user.run(*args, passphrase=False, **kwargs)


@pytest.mark.parametrize("kind, bits", [("ed25519", None), ("rsa", 2048)])
def test_a_slot_for_a_real_agent_key_opens_the_vault_without_a_prompt(vault, kind, bits):
    env = vault
    key = keygen(env.ssh_folder, kind, bits)
    env.agent.add(key)
    result = env.run("slot", "add", "ssh")
    assert result.code == 0, result.err
    listed = json.loads(env.run("slot", "list", "--json", passphrase=False).out)
    assert listed["formatVersion"] == 3
    [slot] = [s for s in listed["slots"] if s["kind"] == "ssh-agent"]
    assert slot["fingerprint"] == fingerprint(key + ".pub")
    assert slot["keyType"] == ("ssh-ed25519" if kind == "ed25519" else "ssh-rsa")
    got = no_passphrase(env, "key", "get")
    assert got.code == 0 and got.out == GOOD_KEY + "\n", got.err
    # unlock too: no prompt, and the session serves the next command.
    assert no_passphrase(env, "unlock").code == 0
    assert json.loads(no_passphrase(env, "status", "--json").out)["unlocked"] is True
    assert no_passphrase(env, "key", "get", env={"SSH_AUTH_SOCK": ""}).out == GOOD_KEY + "\n"


def test_a_pub_file_or_fingerprint_chooses_among_several_keys(vault):
    env = vault
    first, second = keygen(env.ssh_folder, "ed25519"), keygen(env.ssh_folder, "rsa", 2048)
    env.agent.add(first)
    env.agent.add(second)
    result = env.run("slot", "add", "ssh")
    assert result.code == 1 and "holds 2 keys" in result.err and "--key" in result.err
    assert env.run("slot", "add", "ssh", "--key", second + ".pub").code == 0
    assert env.run("slot", "add", "ssh", "--key", fingerprint(first + ".pub")).code == 0
    again = env.run("slot", "add", "ssh", "--key", first + ".pub")
    assert again.code == 1 and "already has an ssh-agent slot" in again.err
    kinds = [s["kind"] for s in json.loads(env.run("slot", "list", "--json", passphrase=False).out)["slots"]]
    assert kinds == ["passphrase", "recovery", "ssh-agent", "ssh-agent"]


def test_an_ecdsa_key_is_refused_and_the_vault_is_unchanged(vault):
    env = vault
    env.agent.add(keygen(env.ssh_folder, "ecdsa"))
    before = env.vault_bytes()
    result = env.run("slot", "add", "ssh")
    assert result.code == 1
    assert "different signature each time" in result.err and "Ed25519 or RSA" in result.err
    assert env.vault_bytes() == before


def test_an_agent_without_the_key_falls_back_to_the_passphrase_and_says_why(vault):
    env = vault
    key = keygen(env.ssh_folder, "ed25519")
    env.agent.add(key)
    assert env.run("slot", "add", "ssh").code == 0
    subprocess.run(["ssh-add", "-D"], env={"SSH_AUTH_SOCK": env.agent.socket, "PATH": os.environ["PATH"]}, capture_output=True, check=True)
    session = PtySession([BIN, "key", "get"], env.vars)
    session.expect("ssh-agent has no key " + fingerprint(key + ".pub").replace("+", "\\+"))
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0
    assert GOOD_KEY in session.text()


def test_passwd_rekey_and_recover_keep_the_slot_working(vault):
    env = vault
    code = env.recovery_code
    env.agent.add(keygen(env.ssh_folder, "ed25519"))
    assert env.run("slot", "add", "ssh").code == 0
    result = env.run("passwd", "--new-passphrase-file", env.passfile)
    assert result.code == 0 and "ssh-agent slot holds the new data key" in result.err
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"
    assert env.run("rekey").code == 0
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"
    recovered = env.run("recover", "--new-passphrase-file", env.passfile, input=code + "\n")
    assert recovered.code == 0 and "ssh-agent slot holds the new data key" in recovered.err, recovered.err
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"
    assert json.loads(env.run("inspect", "--json", passphrase=False).out)["format_version"] == 3


def test_slot_rm_never_takes_the_passphrase_slot_and_the_recovery_slot_only_with_yes(vault):
    env = vault
    key = keygen(env.ssh_folder, "ed25519")
    env.agent.add(key)
    assert env.run("slot", "add", "ssh").code == 0
    refused = env.run("slot", "rm", "1")
    assert refused.code == 1 and "never removed" in refused.err
    recovery = env.run("slot", "rm", "2")
    assert recovery.code == 1 and "--yes" in recovery.err
    removed = env.run("slot", "rm", fingerprint(key + ".pub"))
    assert removed.code == 0, removed.err
    listed = json.loads(env.run("slot", "list", "--json", passphrase=False).out)
    assert listed["formatVersion"] == 2 and [s["kind"] for s in listed["slots"]] == ["passphrase", "recovery"]
    # The removed key opens nothing now: the passphrase is needed again.
    locked_out = no_passphrase(env, "key", "get")
    assert locked_out.code != 0 and "passphrase" in locked_out.err
    assert env.run("slot", "rm", "2", "--yes").code == 0
    assert [s["kind"] for s in json.loads(env.run("slot", "list", "--json", passphrase=False).out)["slots"]] == ["passphrase"]
    assert env.run("key", "get").out == GOOD_KEY + "\n"


def test_a_session_the_ssh_slot_opened_takes_a_pin(vault):
    """unlock through the slot hands the agent the data key; a PIN then wraps that."""
    env = vault
    env.agent.add(keygen(env.ssh_folder, "ed25519"))
    assert env.run("slot", "add", "ssh").code == 0
    result = no_passphrase(env, "unlock", "--pin", "--idle", "2s", input="7351\n")
    assert result.code == 0 and "PIN set" in result.err, result.err
    wait_until(lambda: json.loads(no_passphrase(env, "status", "--json").out)["unlocked"] is False, "the idle lock", limit=20)
    # Without the ssh-agent, only the PIN opens the session again.
    variables = dict(env.vars, SSH_AUTH_SOCK="")
    session = PtySession([BIN, "key", "get"], variables)
    session.expect("Unlock with PIN")
    session.line("7351")
    assert session.wait() == 0, session.text()
    assert GOOD_KEY in session.text()


def test_a_passphrase_flag_skips_the_slot(vault):
    env = vault
    env.agent.add(keygen(env.ssh_folder, "ed25519"))
    assert env.run("slot", "add", "ssh").code == 0
    wrong = os.path.join(env.root, "wrong")
    env.write_private(wrong, "not the passphrase\n")
    result = env.run("key", "get", "--passphrase-file", wrong)
    assert result.code == 3


def test_a_declined_confirmation_falls_back_to_the_passphrase(vault):
    """A key added with ssh-add -c signs only when its user confirms (the ssh-agent runs
    SSH_ASKPASS): approved, the vault opens; declined, the command says so and asks."""
    env = vault
    decision = os.path.join(env.ssh_folder, "decision")
    askpass = os.path.join(env.ssh_folder, "confirm")
    with open(askpass, "w") as handle:
        handle.write('#!/bin/sh\n[ "$(cat %s)" = yes ]\n' % decision)
    os.chmod(askpass, 0o700)
    env.agent.stop()
    os.remove(env.agent.socket)
    env.agent = SSHAgent(env.ssh_folder, {"SSH_ASKPASS": askpass, "DISPLAY": ":0", "SSH_ASKPASS_REQUIRE": "force"})
    env.vars["SSH_AUTH_SOCK"] = env.agent.socket
    env.agent.add(keygen(env.ssh_folder, "ed25519"), "-c")
    with open(decision, "w") as handle:
        handle.write("yes\n")
    assert env.run("slot", "add", "ssh").code == 0
    assert no_passphrase(env, "key", "get").out == GOOD_KEY + "\n"
    with open(decision, "w") as handle:
        handle.write("no\n")
    session = PtySession([BIN, "key", "get"], env.vars)
    session.expect(r"refused\s+to\s+sign")
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0
    assert GOOD_KEY in session.text()


# A hostile agent: it lists the slot's own key, then answers each request wrongly.

def wire(*parts):
    out = b""
    for part in parts:
        out += struct.pack(">I", len(part)) + part
    return out


class HostileAgent(threading.Thread):
    def __init__(self, path, public_blob, mode):
        super().__init__(daemon=True)
        self.path, self.blob, self.mode = path, public_blob, mode
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen(8)
        self.stopped = False
        self.start()

    def run(self):
        while not self.stopped:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client):
        try:
            length = struct.unpack(">I", client.recv(4))[0]
            request = b""
            while len(request) < length:
                request += client.recv(length - len(request))
            if request[0] == 11:
                answer = bytes([12]) + struct.pack(">I", 1) + wire(self.blob, b"hostile")
                if self.mode == "huge-list":
                    client.sendall(struct.pack(">I", 0xFFFFFFF0) + bytes([12]))
                    time.sleep(2)
                    return
                client.sendall(struct.pack(">I", len(answer)) + answer)
                return
            if self.mode == "slow":
                time.sleep(30)
                return
            if self.mode == "trickle":
                for byte in struct.pack(">I", 100):
                    client.sendall(bytes([byte]))
                    time.sleep(0.5)
                time.sleep(30)
                return
            signature = {
                "wrong-type": wire(b"rsa-sha2-512", b"\x01" * 64),
                "another-key": wire(b"ssh-ed25519", nacl.crypto_sign(b"x", nacl.crypto_sign_seed_keypair(b"\x07" * 32)[1])[:64]),
                # As long as a 2048-bit modulus, the length a plain check would have taken.
                "forged-rsa": wire(b"rsa-sha2-512", os.urandom(256)),
                "cut-short": wire(b"ssh-ed25519")[:-3],
            }.get(self.mode)
            if self.mode == "failure":
                answer = bytes([5])
            elif self.mode == "garbage":
                answer = os.urandom(300)
            else:
                answer = bytes([14]) + wire(signature)
            client.sendall(struct.pack(">I", len(answer)) + answer)
        except (OSError, struct.error):
            pass
        finally:
            client.close()

    def stop(self):
        self.stopped = True
        self.server.close()


@pytest.mark.parametrize("mode, reason", [
    ("huge-list", "announces a message of"),
    ("wrong-type", "signed with rsa-sha2-512 where ssh-ed25519 was asked for"),
    ("another-key", "is not one by key"),
    ("forged-rsa", "is not one by key"),
    ("cut-short", "cut short"),
    ("failure", "refused to sign"),
    ("garbage", "ssh-agent"),
    ("slow", "did not answer within 1 s"),
    ("trickle", "did not answer within 1 s"),
])
def test_a_hostile_agent_gets_a_clear_reason_and_the_passphrase_prompt(vault, mode, reason):
    env = vault
    key = keygen(env.ssh_folder, "rsa", 2048) if mode == "forged-rsa" else keygen(env.ssh_folder, "ed25519")
    env.agent.add(key)
    assert env.run("slot", "add", "ssh").code == 0
    with open(key + ".pub") as handle:
        blob = base64.b64decode(handle.read().split()[1])
    # A short folder of its own: a socket's name holds at most 107 bytes.
    short = tempfile.mkdtemp(prefix="gv-ssh-")
    hostile = HostileAgent(os.path.join(short, "agent"), blob, mode)
    try:
        variables = dict(env.vars, SSH_AUTH_SOCK=hostile.path, GEMVAULT_SSH_AGENT_TIMEOUT="1")
        started = time.monotonic()
        session = PtySession([BIN, "key", "get"], variables)
        # Notes wrap at the terminal's width: any run of spaces may be a line break.
        session.expect(r"\s+".join(re.escape(word) for word in reason.split()))
        session.expect("Passphrase for ")
        assert time.monotonic() - started < 8
        session.line(PASSPHRASE)
        assert session.wait() == 0
        assert GOOD_KEY in session.text()
    finally:
        hostile.stop()
        shutil.rmtree(short, ignore_errors=True)


def test_a_pkcs11_token_key_loaded_with_ssh_add_s_opens_the_vault(vault):
    env = vault
    if not os.path.exists(SOFTHSM) or not shutil.which("softhsm2-util"):
        pytest.skip("softhsm2 is not installed (./test installs it as root): no PKCS#11 token to test with")
    tokens = os.path.join(env.ssh_folder, "tokens")
    os.mkdir(tokens, 0o700)
    conf = os.path.join(env.ssh_folder, "softhsm2.conf")
    with open(conf, "w") as handle:
        handle.write("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n" % tokens)
    hsm_env = dict(os.environ, SOFTHSM2_CONF=conf)
    subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", "gemvault", "--pin", "1234", "--so-pin", "56789012"],
                   env=hsm_env, check=True, capture_output=True)
    pem = os.path.join(env.ssh_folder, "token-key.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", pem], check=True, capture_output=True)
    subprocess.run(["softhsm2-util", "--import", pem, "--token", "gemvault", "--label", "gemvault-key", "--id", "01", "--pin", "1234"],
                   env=hsm_env, check=True, capture_output=True)
    os.remove(pem)
    # A fresh agent that can load the module (its PKCS#11 helper inherits SOFTHSM2_CONF).
    env.agent.stop()
    os.remove(env.agent.socket)
    env.agent = SSHAgent(env.ssh_folder, {"SOFTHSM2_CONF": conf})
    env.vars["SSH_AUTH_SOCK"] = env.agent.socket
    askpass = os.path.join(env.ssh_folder, "askpass")
    with open(askpass, "w") as handle:
        handle.write("#!/bin/sh\necho 1234\n")
    os.chmod(askpass, 0o700)
    added = subprocess.run(["ssh-add", "-s", SOFTHSM], env={"SSH_AUTH_SOCK": env.agent.socket, "PATH": os.environ["PATH"], "SSH_ASKPASS": askpass,
                                                             "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"},
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert added.returncode == 0, added.stderr
    listed = subprocess.run(["ssh-add", "-l"], env={"SSH_AUTH_SOCK": env.agent.socket}, capture_output=True, text=True).stdout
    assert "RSA" in listed
    result = env.run("slot", "add", "ssh")
    assert result.code == 0, result.err
    got = no_passphrase(env, "key", "get")
    assert got.code == 0 and got.out == GOOD_KEY + "\n", got.err
