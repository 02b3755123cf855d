"""The attacks of the shared-machine review, each performed for real against the built binary.

Each test here failed on the code before the hardening change: a swap between check and open,
a config.json anyone could write, an old passphrase that still opened old copies, an old vault
restored silently, a key sent to a proxy in clear, TLS secrets written to a file, a key echoed
by a server, a descriptor leaked to key_command, and doctor's blind spots.
"""
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

from ptyrun import PtySession
from conftest import BIN, GOOD_KEY, PASSPHRASE, account_name, ensure_account

PEER = account_name("gemvault-peer")
OTHER_KEY = "AQ.OtherUser-Key_0123456789abcdefghijklmnopqrstuvwx"
assert len(OTHER_KEY) == 51


def peer_account():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user account")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are not installed")
    return ensure_account(PEER, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin")


class PeerUser:
    """The second account with a HOME and XDG folders of its own (in a fresh folder others can
    pass through) and a private passphrase file; `run` runs gemvault as that account."""

    def __init__(self, prefix, kdf_floor=False):
        from conftest import peer_binary
        account = peer_account()
        self.binary = peer_binary()
        self.root = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.root, 0o755)
        self.home = os.path.join(self.root, "home")
        os.mkdir(self.home, 0o700)
        os.chown(self.home, account.pw_uid, account.pw_gid)
        self.env = {"PATH": os.environ["PATH"], "HOME": self.home, "LANG": "C.UTF-8", "SWIFT_BACKTRACE": "enable=no",
                    "XDG_RUNTIME_DIR": self.home + "/run", "XDG_STATE_HOME": self.home + "/state",
                    "XDG_DATA_HOME": self.home + "/data", "XDG_CONFIG_HOME": self.home + "/config"}
        if kdf_floor:
            self.env["GEMVAULT_TEST_KDF_FLOOR"] = "1"
        self.passfile = os.path.join(self.home, "pass")
        with open(self.passfile, "w") as handle:
            handle.write(PASSPHRASE + "\n")
        os.chown(self.passfile, account.pw_uid, account.pw_gid)
        os.chmod(self.passfile, 0o600)
        subprocess.run(["runuser", "-u", PEER, "--", "mkdir", "-m", "700", self.home + "/run"], check=True)

    def run(self, *args, input=None):
        return subprocess.run(["runuser", "-u", PEER, "--", self.binary] + list(args), env=self.env, input=input,
                              capture_output=True, text=True, timeout=60)

    def remove(self):
        self.run("lock")
        shutil.rmtree(self.root, ignore_errors=True)


def forge_checksum(data):
    body = bytes(data[:-32])
    return body + hashlib.blake2b(body, digest_size=32).digest()


# -- 1. One way to open a file that matters -------------------------------------------------------

RACER = textwrap.dedent("""
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    folder, seconds = sys.argv[1], float(sys.argv[2])
    a, b = os.path.join(folder, "key").encode(), os.path.join(folder, "evil").encode()
    end = time.time() + seconds
    print("ready", flush=True)
    while time.time() < end:
        libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE
""")


def test_a_swap_between_check_and_open_never_wins(env):
    """Another user exchanges the key file with their own, as fast as they can, while
    `key which --key-file` runs. A key file in a folder another user can write is refused
    before it is opened (the folder is walked like the vault's), so no run may use their key,
    and every run says why; the descriptor check behind it is TrustedFileTests'."""
    account = peer_account()
    shared = tempfile.mkdtemp(prefix="gemvault-race-")
    try:
        os.chmod(shared, 0o777)  # a folder the other user can write to, without the sticky bit
        mine = os.path.join(shared, "key")
        with open(mine, "w") as handle:
            handle.write(GOOD_KEY + "\n")
        os.chmod(mine, 0o600)
        evil = os.path.join(shared, "evil")
        with open(evil, "w") as handle:
            handle.write(OTHER_KEY + "\n")
        os.chown(evil, account.pw_uid, account.pw_gid)
        os.chmod(evil, 0o600)
        script = os.path.join(shared, "racer.py")
        with open(script, "w") as handle:
            handle.write(RACER)
        os.chmod(script, 0o644)
        python = "/usr/bin/python3"
        if subprocess.run(["runuser", "-u", PEER, "--", python, "-c", "pass"], capture_output=True).returncode != 0:
            pytest.skip("the second account cannot run %s, so it cannot race" % python)
        racer = subprocess.Popen(["runuser", "-u", PEER, "--", python, script, shared, "60"],
                                 stdout=subprocess.PIPE, text=True)
        assert racer.stdout.readline().strip() == "ready"
        try:
            for _ in range(250):
                result = env.run("key", "which", "--json", "--key-file", mine, passphrase=False)
                assert result.code != 0 and OTHER_KEY[-8:] not in result.out, "the other user's key was used: %r" % result
                assert "refusing to use %s: it is a folder that group or others can write to" % shared in result.err, result
        finally:
            racer.kill()
            racer.wait()
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def write_config(env, text, mode=0o600):
    path = os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault", "config.json")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


def test_config_json_that_others_could_change_is_refused(env, tmp_path):
    hostile = '{"version": 1, "key_command": "sh -c \\"touch %s; echo %s\\""}' % (tmp_path / "ran", GOOD_KEY)
    path = write_config(env, hostile, mode=0o666)
    result = env.run("key", "which", passphrase=False)
    assert result.code == 1, result
    assert "refusing to use %s: it is writable by group or others (mode 0666)" % path in result.err
    assert "gemvault: hint: chmod go-w %s" % path in result.err
    assert not (tmp_path / "ran").exists()
    # Readable by others is fine: config.json holds no secret.
    os.chmod(path, 0o644)
    assert env.run("key", "which", passphrase=False).code == 0
    # A symlink to it is refused.
    real = str(tmp_path / "real.json")
    os.rename(path, real)
    os.symlink(real, path)
    result = env.run("key", "which", passphrase=False)
    assert result.code == 1 and "it is a symbolic link" in result.err, result
    os.remove(path)
    os.rename(real, path)
    # A folder others can write to is refused, with the chmod that fixes it.
    os.chmod(os.path.dirname(path), 0o777)
    result = env.run("key", "which", passphrase=False)
    assert result.code == 1 and "chmod go-w %s" % os.path.dirname(path) in result.err, result
    os.chmod(os.path.dirname(path), 0o700)
    if os.geteuid() == 0:
        os.chown(path, 54321, 54321)
        result = env.run("key", "which", passphrase=False)
        assert result.code == 1 and "owned by uid 54321" in result.err and "use a file of your own" in result.err, result


def test_vault_folder_writable_by_others_is_refused(env):
    env.init()
    folder = os.path.dirname(env.vault)
    os.chmod(folder, 0o770)
    result = env.run("key", "list")
    assert result.code == 1
    assert "refusing to use %s: it is a folder that group or others can write to" % folder in result.err
    assert "chmod go-w %s" % folder in result.err


def test_hints_never_suggest_chmod_on_a_file_that_is_not_yours(env):
    env.init()
    result = env.run("key", "list", "--passphrase-file", "/etc/passwd", passphrase=False)
    assert result.code == 1
    assert "chmod" not in result.err and "chown" not in result.err, result
    assert "use a private file of your own" in result.err or "use a file of your own" in result.err, result


def test_a_lock_held_by_another_writer_is_waited_for_with_a_bound(env):
    env.init()
    lock_path = env.vault + ".lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import fcntl, sys, time
        handle = open(sys.argv[1], "a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(60)
    """), lock_path], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        result = env.run("key", "set", input=GOOD_KEY, env={"GEMVAULT_LOCK_TIMEOUT": "1"})
        assert time.monotonic() - started < 15
        assert result.code == 1, result
        assert "waiting for %s, held by pid %d" % (lock_path, holder.pid) in result.err
        assert "another gemvault is writing the vault" in result.err
    finally:
        holder.kill()
        holder.wait()
    assert env.run("key", "set", input=GOOD_KEY).code == 0


def test_a_planted_lock_file_of_another_user_is_refused_at_once(env):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the lock file to another uid")
    env.init()
    lock_path = env.vault + ".lock"
    open(lock_path, "a").close()
    os.chown(lock_path, 54321, 54321)
    result = env.run("key", "set", input=GOOD_KEY, timeout=20)
    assert result.code == 1 and "refusing to use %s: it is owned by uid 54321" % lock_path in result.err, result


def chat_with(env, server, lines):
    env.vars["GEMVAULT_ENDPOINT"] = server.url
    env.vars["GEMINI_API_KEY"] = GOOD_KEY
    return env.run("chat", "--model", "echo", input="".join(line + "\n" for line in lines), passphrase=False)


def test_save_writes_only_a_private_file_of_your_own(env, fake_server, tmp_path):
    target = tmp_path / "notes.md"
    target.write_text("older, longer text that must not survive")
    os.chmod(target, 0o644)
    result = chat_with(env, fake_server, ["hello", "/save %s" % target, "/exit"])
    assert result.code == 0, result
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert "hello" in target.read_text() and "older" not in target.read_text()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = tmp_path / "link.md"
    os.symlink(victim, link)
    result = chat_with(env, fake_server, ["hello", "/save %s" % link, "/exit"])
    assert "it is a symbolic link" in result.err and victim.read_text() == "precious", result
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign.md"
        foreign.write_text("theirs")
        os.chown(foreign, 54321, 54321)
        os.chmod(foreign, 0o666)
        result = chat_with(env, fake_server, ["hello", "/save %s" % foreign, "/exit"])
        assert "owned by uid 54321" in result.err and foreign.read_text() == "theirs", result
        assert stat.S_IMODE(os.stat(foreign).st_mode) == 0o666


# -- 2. A changed passphrase retires the old one --------------------------------------------------

def slot_bounds(data):
    """(start, end) of each key slot in a format 2 file."""
    count = data[34]
    offset, bounds = 35, []
    for _ in range(count):
        size = 142 if data[offset] == 3 else 102
        bounds.append((offset, offset + size))
        offset += size
    return bounds


def splice_passphrase_slot(newer, older):
    """The newer file with the older file's passphrase slot: what an attacker with an old copy does."""
    (ns, ne), (os_, oe) = slot_bounds(newer)[0], slot_bounds(older)[0]
    return forge_checksum(bytearray(newer[:ns] + older[os_:oe] + newer[ne:]))


@pytest.mark.parametrize("command", ["passwd", "rekey"])
def test_a_passphrase_change_or_rekey_retires_every_old_copy(env, command):
    code = env.init()
    env.run("key", "set", input=GOOD_KEY)
    old_copy = env.vault_bytes()
    new_pass = os.path.join(env.root, "new-pass")
    env.write_private(new_pass, "a different passphrase, long enough\n")
    if command == "passwd":
        result = env.run("passwd", "--new-passphrase-file", new_pass)
        current = new_pass
    else:
        result = env.run("rekey")
        current = env.passfile
    assert result.code == 0, result
    assert env.run("key", "set", "later", "--passphrase-file", current, input=GOOD_KEY[:-2] + "zz",
                   passphrase=False).code == 0
    # vault.bak holds no retired slot: the old passphrase opens neither file.
    backup = env.vault + ".bak"
    for path in (env.vault, backup):
        result = env.run("--vault", path, "key", "list", "--accept-rollback")
        if command == "passwd":
            assert result.code == 3, (path, result)
    # The old passphrase slot spliced into the new file unwraps an old data key, which opens nothing.
    current_bytes = env.vault_bytes()
    spliced = splice_passphrase_slot(current_bytes, old_copy)
    with open(env.vault, "wb") as handle:
        handle.write(spliced)
    result = env.run("key", "list")
    assert result.code == 4 and "failed authentication" in result.err, result
    # The recovery code still works on the real vault, without being typed again before.
    with open(env.vault, "wb") as handle:
        handle.write(current_bytes)
    recovered_pass = os.path.join(env.root, "recovered-pass")
    env.write_private(recovered_pass, "recovered passphrase, long enough\n")
    result = env.run("recover", "--new-passphrase-file", recovered_pass, input=code + "\n", passphrase=False)
    assert result.code == 0, result
    got = env.run("key", "get", "later", "--passphrase-file", recovered_pass, passphrase=False)
    assert got.code == 0 and got.out == GOOD_KEY[:-2] + "zz\n", got


def test_temp_files_left_by_a_killed_writer_are_removed_by_the_next_writer(env):
    env.init()
    folder = os.path.dirname(env.vault)
    stale = os.path.join(folder, ".vault.tmp.4242.deadbeef")
    with open(stale, "wb") as handle:
        handle.write(env.vault_bytes())
    os.chmod(stale, 0o600)
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    assert not os.path.exists(stale)
    assert [name for name in os.listdir(folder) if ".tmp" in name] == []


FIXTURES = os.path.join(os.path.dirname(__file__), "..", "VaultCoreTests", "Fixtures")


def install_format_1_vector(env):
    """The committed format 1 vault (a build before 0.1.0) as the user's vault, with its passphrase."""
    with open(os.path.join(FIXTURES, "vector-v1.json")) as handle:
        expected = json.load(handle)
    os.makedirs(os.path.dirname(env.vault), mode=0o700, exist_ok=True)
    shutil.copyfile(os.path.join(FIXTURES, "vector-v1.vault"), env.vault)
    os.chmod(env.vault, 0o600)
    env.write_private(env.passfile, expected["passphrase"] + "\n")
    return expected


def test_a_format_1_vault_opens_and_is_upgraded_when_written(env):
    expected = install_format_1_vector(env)
    assert env.run("key", "get").out == expected["keys"]["default"] + "\n"
    assert json.loads(env.run("inspect", "--json", passphrase=False).out)["format_version"] == 1
    assert env.run("key", "set", "second", input=GOOD_KEY).code == 0
    info = json.loads(env.run("inspect", "--json", passphrase=False).out)
    assert info["format_version"] == 2 and len(info["vault_id"]) == 32
    # Its old recovery code still opens it.
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "after recovery, long enough\n")
    result = env.run("recover", "--new-passphrase-file", new_pass, input=expected["recovery_code"] + "\n", passphrase=False)
    assert result.code == 0, result
    assert env.run("key", "get", "second", "--passphrase-file", new_pass, passphrase=False).out == GOOD_KEY + "\n"


def test_passwd_on_a_format_1_vault_shows_a_new_recovery_code_once(env):
    expected = install_format_1_vector(env)
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "a new passphrase for this vault\n")
    result = env.run("passwd", "--new-passphrase-file", new_pass)
    assert result.code == 0, result
    code = [line for line in result.err.splitlines() if len(line) == 39 and line.count("-") == 7][0]
    assert code != expected["recovery_code"]
    third = os.path.join(env.root, "third")
    env.write_private(third, "third passphrase, long enough\n")
    assert env.run("recover", "--new-passphrase-file", third, input=expected["recovery_code"] + "\n", passphrase=False).code == 3
    assert env.run("recover", "--new-passphrase-file", third, input=code + "\n", passphrase=False).code == 0


def test_passwd_on_a_format_1_vault_on_a_terminal_keeps_the_recovery_code_typed_once(env):
    expected = install_format_1_vector(env)
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "a new passphrase for this vault\n")
    session = PtySession([BIN, "passwd", "--passphrase-file", env.passfile, "--new-passphrase-file", new_pass], env.vars)
    try:
        session.expect("Recovery code \\(Enter for a new one\\): ")
        session.line("0000-0000-0000-0000-0000-0000-0000-0000")
        session.expect("does not open this vault")
        session.expect("Recovery code")
        session.line(expected["recovery_code"])
        assert session.wait(timeout=60) == 0, session.text()
        assert "The recovery code still works" in session.text() and "new recovery code" not in session.text()
    finally:
        session.close()
    assert json.loads(env.run("inspect", "--json", passphrase=False).out)["format_version"] == 2
    third = os.path.join(env.root, "third")
    env.write_private(third, "third passphrase, long enough\n")
    result = env.run("recover", "--new-passphrase-file", third, input=expected["recovery_code"] + "\n", passphrase=False)
    assert result.code == 0, result


# -- 3. An old copy restored over a newer one is noticed ------------------------------------------

def test_an_old_copy_restored_over_the_vault_is_refused(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    old = env.vault_bytes()
    old_generation = json.loads(env.run("inspect", "--json", passphrase=False).out)["generation"]
    env.run("key", "rm", "default")
    env.run("key", "set", "new", input=GOOD_KEY)
    with open(env.vault, "wb") as handle:
        handle.write(old)
    result = env.run("key", "get")
    assert result.code == 4, result
    assert "is generation %d, but generation %d of it was seen before" % (old_generation, old_generation + 2) in result.err
    assert "an old copy was restored" in result.err and "--accept-rollback" in result.err
    accepted = env.run("key", "get", "--accept-rollback")
    assert accepted.code == 0 and accepted.out == GOOD_KEY + "\n"
    # Accepted on purpose: from now on this is the vault.
    assert env.run("key", "get").code == 0


def test_restore_backup_is_a_command_and_the_hint_names_it_only_when_there_is_one(env):
    env.init()
    data = bytearray(env.vault_bytes())
    data[200] ^= 1
    with open(env.vault, "wb") as handle:
        handle.write(data)
    alone = env.run("key", "get")
    assert alone.code == 4 and "restore-backup" not in alone.err, alone
    env.init_force = None
    os.remove(env.vault)
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    env.run("key", "set", "second", input=GOOD_KEY)
    data = bytearray(env.vault_bytes())
    data[300] ^= 1
    with open(env.vault, "wb") as handle:
        handle.write(data)
    damaged = env.run("key", "get")
    assert damaged.code == 4 and "'gemvault restore-backup'" in damaged.err, damaged
    restored = env.run("restore-backup")
    assert restored.code == 0, restored
    assert env.run("key", "get").out == GOOD_KEY + "\n"
    kept = [name for name in os.listdir(os.path.dirname(env.vault)) if ".damaged-" in name]
    assert len(kept) == 1 and open(os.path.join(os.path.dirname(env.vault), kept[0]), "rb").read() == bytes(data)
    # The restored vault is newer than anything seen, so the rollback check stays quiet.
    assert env.run("key", "set", "third", input=GOOD_KEY).code == 0


# -- 4. The key goes only where it is meant to ----------------------------------------------------

def test_plain_http_to_loopback_never_goes_through_a_proxy(api):
    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen(5)
    seen = []

    def accept():
        trap.settimeout(10)
        try:
            conn, _ = trap.accept()
            seen.append(conn.recv(65536))
            conn.close()
        except OSError:
            pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    proxy = "http://127.0.0.1:%d" % trap.getsockname()[1]
    result = api.run("ask", "--model", "ok", "hi", passphrase=False,
                     env={"http_proxy": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy, "all_proxy": proxy})
    trap.close()
    thread.join(2)
    assert result.code == 0, result
    assert seen == [], "the proxy received: %r" % seen
    assert not api.server.requests()[0]["proxied"]


@pytest.mark.parametrize("endpoint", ["http://127.evil.example", "http://127.0.0.1.nip.example:80", "http://localhost.evil"])
def test_only_literal_loopback_counts_as_loopback(api, endpoint):
    result = api.run("ask", "--model", "ok", "hi", passphrase=False, env={"GEMVAULT_ENDPOINT": endpoint})
    assert result.code == 64 and "plain http on a non-loopback host" in result.err, result
    report = json.loads(api.run("doctor", "--json", passphrase=False, env={"GEMVAULT_ENDPOINT": endpoint}).out)
    messages = [f["message"] for f in report["findings"] if f["check"] == "endpoint"]
    assert messages and "unencrypted over the network" in messages[0]


def test_libcurl_never_writes_tls_secrets(api, tmp_path):
    keylog = tmp_path / "keys.log"
    result = api.run("ask", "--model", "ok", "hi", passphrase=False, env={"SSLKEYLOGFILE": str(keylog)})
    assert result.code == 0, result
    assert not keylog.exists()


def test_an_echoed_key_of_any_shape_is_never_shown(api):
    odd_key = "sk-live-7hQ2pL9xV4mN8rT1wY6zB3cK5dF0gJ"
    result = api.run("ask", "--model", "echo-key", "hi", passphrase=False, env={"GEMINI_API_KEY": odd_key})
    assert result.code == 6, result
    assert odd_key not in result.err and odd_key[:12] not in result.err and "[redacted]" in result.err, result
    # --json puts the error on stdout too, which must not quote it either.
    as_json = api.run("ask", "--json", "--model", "echo-key", "hi", passphrase=False, env={"GEMINI_API_KEY": odd_key})
    assert as_json.code == 6 and odd_key[:12] not in as_json.out and "[redacted]" in json.loads(as_json.out)["error"]["message"], as_json


def test_key_command_failures_name_the_program_only(env, tmp_path):
    config = '{"version": 1, "key_command": "false --token=SUPERSECRETTOKEN"}'
    write_config(env, config)
    result = env.run("key", "which", passphrase=False)
    assert result.code == 5 and "key_command 'false' exited with status 1" in result.err, result
    assert "SUPERSECRETTOKEN" not in result.err
    write_config(env, '{"version": 1, "key_command": "mytool --token=SUPERSECRETTOKEN \'unbalanced"}')
    result = env.run("key", "which", passphrase=False)
    assert result.code == 5 and "SUPERSECRETTOKEN" not in result.err, result


def test_key_command_gets_only_descriptors_0_1_and_2(env, tmp_path):
    listing = tmp_path / "fds"
    script = tmp_path / "keycmd.py"
    script.write_text(textwrap.dedent("""
        import json, os, sys
        found = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                found[fd] = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                pass  # the descriptor listdir used, closed by now
        with open(sys.argv[1], "w") as out:
            json.dump(found, out)
        print(sys.argv[2])
    """))
    write_config(env, json.dumps({"version": 1, "key_command": "%s %s %s %s" % (sys.executable, script, listing, GOOD_KEY)}))
    read_end, write_end = os.pipe()
    os.write(write_end, (PASSPHRASE + "\n").encode())
    os.close(write_end)
    try:
        result = env.run("key", "which", "--passphrase-fd", str(read_end), pass_fds=(read_end,), passphrase=False)
    finally:
        os.close(read_end)
    assert result.code == 0, result
    fds = json.loads(listing.read_text())
    assert sorted(fds) == ["0", "1", "2"], fds


def test_kdf_parameters_inside_the_old_limits_but_too_costly_are_refused(env):
    import struct
    env.init()
    data = bytearray(env.vault_bytes())
    data[37:41] = struct.pack("<I", 16)
    data[41:49] = struct.pack("<Q", 4 << 30)
    with open(env.vault, "wb") as handle:
        handle.write(forge_checksum(data))
    started = time.monotonic()
    result = env.run("key", "list", timeout=30)
    assert time.monotonic() - started < 5
    assert result.code == 4 and "above the accepted maximum" in result.err, result


def test_settings_are_shown_with_escapes_neutralised_and_refused_when_set(env):
    env.init()
    write_config(env, json.dumps({"version": 1, "api_version": "v1beta", "system_prompt": "be \u001b]0;owned\u0007 nice"}))
    result = env.run("config", "get", "--file", "system_prompt", passphrase=False)
    assert "\x1b" not in result.out and "\x07" not in result.out and "^[" in result.out, result
    listed = env.run("config", "list", "--file", passphrase=False)
    assert "\x1b" not in listed.out and "^[" in listed.out
    refused = env.run("config", "set", "model", "gemini\x1b[2Jflash")
    assert refused.code == 64 and "control character" in refused.err, refused


# -- 5. doctor tells the truth ---------------------------------------------------------------------

def doctor(env, extra=None):
    result = env.run("doctor", "--json", passphrase=False, env=extra, timeout=20)
    return result, json.loads(result.out)


def test_doctor_reads_shell_files_as_a_shell_would(env):
    env.init()
    with open(os.path.join(env.home, ".bashrc"), "w") as handle:
        handle.write('export GEMINI_API_KEY="$(gemvault key get)"\nGEMINI_API_KEY=\nexport GOOGLE_API_KEY=\n')
    fish = os.path.join(env.vars["XDG_CONFIG_HOME"], "fish")
    os.makedirs(fish)
    with open(os.path.join(fish, "config.fish"), "w") as handle:
        handle.write("set -gx GEMINI_API_KEY %s\n" % GOOD_KEY)
    with open(os.path.join(env.home, ".cshrc"), "w") as handle:
        handle.write("setenv GOOGLE_API_KEY %s\n" % GOOD_KEY)
    result, report = doctor(env)
    messages = [f["message"] for f in report["findings"] if f["check"] == "shell-startup"]
    assert not any(".bashrc" in m for m in messages), messages
    assert any("config.fish:1 sets GEMINI_API_KEY" in m for m in messages), messages
    assert any(".cshrc:1 sets GOOGLE_API_KEY" in m for m in messages), messages


def test_doctor_never_hangs_on_a_fifo_and_looks_in_hidden_folders(env):
    env.init()
    project = os.path.join(env.home, "work")
    os.makedirs(project)
    os.mkfifo(os.path.join(project, ".env"))
    hidden = os.path.join(env.home, ".projects", "app")
    os.makedirs(hidden)
    with open(os.path.join(hidden, ".env"), "w") as handle:
        handle.write("GEMINI_API_KEY=%s\n" % GOOD_KEY)
    result, report = doctor(env)
    messages = [f["message"] for f in report["findings"] if f["check"] == "dotenv"]
    assert messages == ["%s:1 sets GEMINI_API_KEY to an auth key in plain text" % os.path.join(hidden, ".env")], messages


def test_doctor_reports_world_writable_folders_proxies_and_key_logs(env, tmp_path):
    env.init()
    shared = tempfile.mkdtemp(prefix="gemvault-open-")
    try:
        os.chmod(shared, 0o777)
        mine = os.path.join(shared, "mine")
        os.mkdir(mine, 0o700)
        vault = os.path.join(mine, "vault")
        shutil.copyfile(env.vault, vault)
        os.chmod(vault, 0o600)
        result, report = doctor(env, {"GEMVAULT_VAULT": vault, "GEMVAULT_ENDPOINT": "http://127.0.0.1:9",
                                      "http_proxy": "http://proxy.example:3128", "SSLKEYLOGFILE": "/tmp/keys"})
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    messages = "\n".join(f["message"] for f in report["findings"])
    assert "%s, above the vault, is writable by everyone" % shared in messages, messages
    assert "http_proxy is set while the endpoint is plain http" in messages
    assert "SSLKEYLOGFILE is set" in messages


def test_doctor_judges_hidepid_from_the_mount_at_proc_itself(env):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount proc with hidepid somewhere else")
    env.init()
    elsewhere = tempfile.mkdtemp(prefix="gemvault-proc-")
    script = "mount -t proc -o hidepid=invisible proc \"$0\" && exec \"$@\""
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, elsewhere, BIN, "doctor", "--json"]
    proc = subprocess.run(argv, env=env.vars, capture_output=True, text=True)
    os.rmdir(elsewhere)
    if "Operation not permitted" in proc.stderr or proc.returncode not in (0, 1):
        pytest.skip("this sandbox does not allow mounting proc: %s" % proc.stderr.strip())
    with open("/proc/mounts") as handle:
        proc_hidden = any(line.split()[1] == "/proc" and "hidepid" in line for line in handle)
    report = json.loads(proc.stdout)
    assert any(f["check"] == "hidepid" for f in report["findings"]) == (not proc_hidden), report


# -- 6. Messages that say what happened ------------------------------------------------------------

def test_a_failed_write_names_the_vault_and_says_it_is_unchanged(env):
    import resource
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    before = env.vault_bytes()
    limit = len(before) - 100

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    argv = [BIN, "key", "set", "big", "--passphrase-file", env.passfile]
    proc = subprocess.run(argv, input=GOOD_KEY, env=env.vars, capture_output=True, text=True, preexec_fn=small_files)
    assert proc.returncode == 1, proc
    assert "could not save the vault %s: File too large; the vault is unchanged" % env.vault in proc.stderr, proc.stderr
    assert env.vault_bytes() == before
    assert [n for n in os.listdir(os.path.dirname(env.vault)) if ".tmp" in n] == []


def test_damage_messages_say_what_they_mean(env):
    import struct
    env.init()
    original = env.vault_bytes()
    oversized = bytearray(original)
    length_offset = slot_bounds(original)[-1][1] + 24
    oversized[length_offset:length_offset + 4] = struct.pack("<I", 32 << 20)
    cases = [
        (oversized, "more than the 16 MiB a vault may hold"),
        (bytearray(original[:34]) + bytes([3]) + bytearray(original[35:]), "damaged key slots: the file declares 3 key slots"),
    ]
    for data, words in cases:
        with open(env.vault, "wb") as handle:
            handle.write(forge_checksum(data))
        result = env.run("key", "list")
        assert result.code == 4 and words in result.err, (words, result)
    with open(env.vault, "wb") as handle:
        handle.write(original[:150])
    result = env.run("key", "list")
    assert result.code == 4 and "no vault is shorter than 197" in result.err, result


# -- Found by a second review, as another account ----------------------------------------------------

def test_a_link_planted_by_another_user_above_the_vault_is_refused(env):
    account = peer_account()
    plant = "/tmp/gemvault-plant-%d" % os.getpid()
    target = tempfile.mkdtemp(prefix="gemvault-target-")
    try:
        # The other user plants a link where the victim will put a vault, pointing at a root folder.
        subprocess.run(["runuser", "-u", PEER, "--", "ln", "-s", target, plant], check=True)
        result = env.run("--vault", plant + "/vault", "init", "--kdf", "interactive")
        assert result.code == 1 and "refusing to use %s: it is a symbolic link" % plant in result.err, result
        assert os.listdir(target) == []
    finally:
        subprocess.run(["rm", "-f", plant])
        shutil.rmtree(target, ignore_errors=True)


def test_a_folder_above_the_vault_owned_by_another_user_is_refused(env):
    account = peer_account()
    shared = tempfile.mkdtemp(prefix="gemvault-theirs-")
    try:
        os.chmod(shared, 0o755)
        os.chown(shared, account.pw_uid, account.pw_gid)
        mine = os.path.join(shared, "mine")
        os.mkdir(mine, 0o700)
        result = env.run("--vault", mine + "/vault", "init", "--kdf", "interactive")
        assert result.code == 1 and "refusing to use %s: it is a folder owned by uid %d" % (shared, account.pw_uid) in result.err, result
        report = json.loads(env.run("--vault", mine + "/vault", "doctor", "--json", passphrase=False).out)
        assert any("%s, above the vault, belongs to uid %d" % (shared, account.pw_uid) in f["message"] for f in report["findings"]), report
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_doctor_never_reads_proc_through_a_planted_env_link_and_neutralises_names(env):
    env.init()
    project = os.path.join(env.home, "proj", "k")
    os.makedirs(project)
    os.symlink("/proc/kmsg", os.path.join(project, ".env"))
    evil = os.path.join(env.home, "\x1b]0;PWNED\x07\x1b[2Kok")
    os.makedirs(evil)
    with open(os.path.join(evil, ".env"), "w") as handle:
        handle.write("GEMINI_API_KEY=%s\n" % GOOD_KEY)
    started = time.monotonic()
    result = env.run("doctor", passphrase=False, timeout=30)
    assert time.monotonic() - started < 20
    assert "\x1b" not in result.out and "\x07" not in result.out and "^[]0;PWNED" in result.out, result


def test_key_command_never_sees_sslkeylogfile(env, tmp_path):
    seen = tmp_path / "seen"
    script = tmp_path / "keycmd.sh"
    script.write_text('#!/bin/sh\necho "${SSLKEYLOGFILE:-unset}" > %s\necho %s\n' % (seen, GOOD_KEY))
    os.chmod(script, 0o700)
    write_config(env, json.dumps({"version": 1, "key_command": str(script)}))
    result = env.run("key", "which", passphrase=False, env={"SSLKEYLOGFILE": str(tmp_path / "keys.log")})
    assert result.code == 0, result
    assert seen.read_text().strip() == "unset"


def test_a_failed_passwd_keeps_the_backup(env):
    import resource
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    env.run("key", "set", "two", input=GOOD_KEY)
    backup = env.vault + ".bak"
    before = open(backup, "rb").read()
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "another long passphrase\n")

    def no_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    proc = subprocess.run([BIN, "passwd", "--passphrase-file", env.passfile, "--new-passphrase-file", new_pass],
                          env=env.vars, capture_output=True, text=True, preexec_fn=no_files)
    assert proc.returncode == 1 and "the vault is unchanged" in proc.stderr, proc
    assert open(backup, "rb").read() == before


def test_init_force_twice_in_one_second_keeps_both_old_vaults(env):
    env.init()
    env.run("key", "set", "precious", input=GOOD_KEY)
    assert env.run("init", "--force", "--kdf", "interactive").code == 0
    assert env.run("init", "--force", "--kdf", "interactive").code == 0
    kept = sorted(__import__("glob").glob(env.vault + ".replaced-*"))
    assert len(kept) == 2, kept
    assert any(env.run("--vault", path, "key", "get", "precious").code == 0 for path in kept)


def test_an_old_format_1_copy_restored_over_its_upgrade_is_refused(env):
    expected = install_format_1_vector(env)
    assert env.run("key", "set", "newer", input=GOOD_KEY).code == 0
    shutil.copyfile(os.path.join(FIXTURES, "vector-v1.vault"), env.vault)
    result = env.run("key", "get")
    assert result.code == 4 and "an old copy was restored" in result.err, result


def test_a_short_passphrase_is_never_given_away_by_redaction(env):
    env.write_private(env.passfile, "gemvault\n")
    env.init()
    result = env.run("key", "get", "nothing")
    assert "[redacted]" not in result.err and "gemvault: error" in result.err, result
