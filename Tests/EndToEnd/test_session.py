"""The unlocked session, exec and rotation, as a user meets them: a real background agent on a
real Unix socket, real processes, the fake Gemini server, and a second account when root."""
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, wait_until
from ptyrun import PtySession

OTHER_KEY = GOOD_KEY.replace("D3mo", "Rot8")


@pytest.fixture
def session(api):
    """A vault with a key and an endpoint, a private runtime folder, and cleanup of the agent.
    The runtime folder is deeper than a socket name holds (107 bytes), as under a long HOME, so
    every session test also checks that the agent does not mind."""
    runtime = os.path.join(api.root, "run")
    os.mkdir(runtime, 0o700)
    while len(os.path.join(runtime, "gemvault", "agent-0123456789abcdef.sock")) <= 107:
        runtime = os.path.join(runtime, "deeper")
        os.mkdir(runtime, 0o700)
    api.vars["XDG_RUNTIME_DIR"] = runtime
    api.vars.pop("GEMINI_API_KEY")
    api.init()
    assert api.run("key", "set", input=GOOD_KEY).code == 0
    api.runtime = runtime
    yield api
    api.run("lock", passphrase=False)


def descendant_commands(pid):
    """The command lines of a process's children, their children, and so on."""
    commands, pending = [], [pid]
    while pending:
        parent = pending.pop()
        children = []
        try:
            for task in os.listdir("/proc/%d/task" % parent):
                with open("/proc/%d/task/%s/children" % (parent, task)) as handle:
                    children += [int(child) for child in handle.read().split()]
        except OSError:
            continue
        for child in children:
            try:
                with open("/proc/%d/cmdline" % child, "rb") as handle:
                    commands.append(handle.read())
            except OSError:
                continue
            pending.append(child)
    return commands


def status(env):
    result = env.run("status", "--json", passphrase=False)
    assert result.code == 0, result
    return json.loads(result.out)


def socket_path(env):
    folder = os.path.join(env.runtime, "gemvault")
    [name] = [n for n in os.listdir(folder) if n.endswith(".sock")]
    return os.path.join(folder, name)


def connect_agent(env, timeout=10):
    """A client connected to the agent's socket through its folder's descriptor, as gemvault
    does: the full path may be longer than a socket name holds."""
    path = socket_path(env)
    folder = os.open(os.path.dirname(path), os.O_PATH)
    deadline = time.monotonic() + timeout
    try:
        while True:
            client = socket.socket(socket.AF_UNIX)
            client.settimeout(timeout)
            try:
                client.connect("/proc/self/fd/%d/%s" % (folder, os.path.basename(path)))
                return client
            except BlockingIOError:
                # The agent's backlog is full for a moment (a socket with a timeout does not wait).
                client.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
    finally:
        os.close(folder)


def agent_log(env):
    folder = os.path.join(env.runtime, "gemvault")
    return "".join(open(os.path.join(folder, n)).read() for n in os.listdir(folder) if n.endswith(".log"))


def test_after_unlock_every_command_works_without_a_passphrase_and_after_lock_it_is_needed(session, tmp_path):
    env = session
    assert not status(env)["unlocked"]
    result = env.run("unlock", "--idle", "10m")
    assert result.code == 0 and "unlocked" in result.err, result
    report = status(env)
    assert report["unlocked"] and report["vault"] == env.vault and report["version"] == 1
    for field in ("since", "locksAt", "idleLocksAt", "maxLocksAt"):
        assert report[field].endswith("Z") and "T" in report[field]
    assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"
    ask = env.run("ask", "--model", "echo", "hello", passphrase=False)
    assert ask.code == 0 and "last=hello" in ask.out, ask
    assert env.server.requests()[-1]["headers"]["x-goog-api-key"] == GOOD_KEY
    chat = env.run("chat", "--model", "echo", input="hi\n", passphrase=False)
    assert chat.code == 0 and "last=hi" in chat.out, chat
    out = tmp_path / "seen"
    execed = env.run("exec", "--", "sh", "-c", 'printf %s "$GEMINI_API_KEY" > "$0"', str(out), passphrase=False)
    assert execed.code == 0 and out.read_text() == GOOD_KEY, execed
    # Writes need no passphrase either, and reach the file.
    assert env.run("key", "set", "second", input=OTHER_KEY, passphrase=False).code == 0
    assert env.run("config", "set", "temperature", "0.3", passphrase=False).code == 0
    assert env.run("--no-session", "key", "get", "second").out == OTHER_KEY + "\n"
    assert env.run("lock", passphrase=False).code == 0
    assert not status(env)["unlocked"]
    locked = env.run("key", "get", passphrase=False)
    # No session and no terminal: no key (exit 5), as for every command that needs one.
    assert locked.code == 5 and "gemvault unlock" in locked.err, locked


def test_vault_settings_apply_to_a_key_from_the_environment_through_the_session(session):
    env = session
    env.run("config", "set", "model", "echo")
    env.run("unlock")
    result = env.run("ask", "hello", passphrase=False, env={"GEMINI_API_KEY": OTHER_KEY})
    assert result.code == 0 and "last=hello" in result.out, result
    assert env.server.requests()[-1]["path"].startswith("/v1beta/models/echo:")


def test_key_get_through_the_session_loads_no_network_library(session):
    env = session
    env.run("unlock")
    proc = subprocess.run([BIN, "key", "get"], env=dict(env.vars, LD_DEBUG="libs"), capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == GOOD_KEY + "\n"
    assert "libcurl" not in proc.stderr


def test_a_second_unlock_leaves_the_agent_alone(session):
    env = session
    env.run("unlock")
    pid = status(env)["agentPid"]
    again = env.run("unlock", passphrase=False)
    assert again.code == 0 and "already unlocked" in again.err and "left alone" in again.err, again
    assert status(env)["agentPid"] == pid


def test_the_idle_limit_locks_and_status_polling_does_not_extend_it(session):
    env = session
    env.run("unlock", "--idle", "3s")
    deadline = time.time() + 6
    while time.time() < deadline and status(env)["unlocked"]:
        time.sleep(0.3)
    assert not status(env)["unlocked"], "status polling kept the session alive"
    assert "idle for 3 s: wiping and exiting" in agent_log(env)


def test_the_absolute_limit_locks_even_a_busy_session(session):
    env = session
    env.run("unlock", "--idle", "1h", "--max", "3s")
    deadline = time.time() + 7
    while time.time() < deadline and status(env)["unlocked"]:
        env.run("key", "get", passphrase=False)
        time.sleep(0.2)
    assert not status(env)["unlocked"]


def test_sigterm_makes_the_agent_wipe_and_exit(session):
    env = session
    env.run("unlock")
    pid = status(env)["agentPid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 5
    while time.time() < deadline and status(env)["unlocked"]:
        time.sleep(0.1)
    assert not status(env)["unlocked"]
    assert "signal received: wiping and exiting" in agent_log(env)


def test_the_agent_protects_its_memory(session):
    env = session
    env.run("unlock")
    pid = status(env)["agentPid"]
    with open("/proc/%d/status" % pid) as handle:
        fields = dict(line.split(":", 1) for line in handle if ":" in line)
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        argv = handle.read()
    with open("/proc/%d/environ" % pid, "rb") as handle:
        environ = handle.read()
    assert PASSPHRASE.encode() not in argv and GOOD_KEY.encode() not in argv
    assert PASSPHRASE.encode() not in environ and GOOD_KEY.encode() not in environ
    with open("/proc/%d/limits" % pid) as handle:
        core = [line for line in handle if line.startswith("Max core file size")][0].split()
    assert core[4] == "0" and core[5] == "0"
    # Not dumpable: /proc/<pid>/mem and environ belong to root, not to the user. As root that
    # says nothing; test_other_users_are_refused_by_the_agent checks it on a second account's agent.
    if os.geteuid() != 0:
        assert os.stat("/proc/%d/mem" % pid).st_uid == 0


def frame(op, fields=()):
    body = bytes([op]) + b"".join(bytes([tag]) + struct.pack("<I", len(value)) + value for tag, value in fields)
    return b"GVA1" + struct.pack("<I", len(body)) + body


def test_the_agent_survives_garbage_huge_frames_and_stalled_clients(session):
    env = session
    env.run("unlock")
    stalled = connect_agent(env)
    stalled.send(b"GVA1")  # and then nothing
    for junk in (b"hello, not a frame at all\n" * 10, b"GVA1" + struct.pack("<I", 0xFFFFFFF0) + b"x",
                 frame(3, [(6, b"x" * 10)])[:-3], frame(99), b"GVA1" + struct.pack("<I", 0)):
        client = connect_agent(env)
        client.sendall(junk)
        client.shutdown(socket.SHUT_WR)
        try:
            client.recv(4096)
        except OSError:
            pass
        client.close()
    # Meanwhile another client is served, while the agent still waits for the stalled one's
    # request (which it drops 2 s after its first byte): nothing has come back to it, nor an end.
    assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"
    stalled.setblocking(False)
    with pytest.raises(BlockingIOError):
        stalled.recv(1, socket.MSG_PEEK)
    stalled.close()
    assert status(env)["unlocked"]


def test_writers_through_the_agent_and_a_direct_writer_lose_nothing(session):
    env = session
    env.run("unlock")
    procs = []
    for prefix, direct in (("a", False), ("b", False), ("c", True)):
        script = "for i in 1 2 3 4 5 6; do printf %s " + GOOD_KEY + " | \"$0\" key set " + prefix + "$i" + \
                 (" --no-session --passphrase-file \"$1\"" if direct else "") + " || exit 1; done"
        procs.append(subprocess.Popen(["sh", "-c", script, BIN, env.passfile], env=env.vars,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    names = [k["name"] for k in json.loads(env.run("--no-session", "key", "list", "--json").out)["keys"]]
    expected = sorted(["default"] + ["%s%d" % (p, i) for p in "abc" for i in range(1, 7)])
    assert sorted(names) == expected
    # The agent followed the direct writer too.
    assert sorted(k["name"] for k in json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"]) == expected


def test_an_agent_in_the_foreground_is_used_instead_of_starting_another(session):
    env = session
    agent = subprocess.Popen([BIN, "agent", "--foreground"], env=env.vars, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 5
        while time.time() < deadline and status(env).get("agentPid") is None:
            time.sleep(0.05)
        assert status(env)["agentPid"] == agent.pid and not status(env)["unlocked"]
        second = env.run("agent", "--foreground", passphrase=False)
        assert second.code == 1 and "already serves" in second.err
        assert env.run("unlock").code == 0
        assert status(env)["agentPid"] == agent.pid and status(env)["unlocked"]
        assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"
        assert env.run("lock", passphrase=False).code == 0
        assert agent.wait(timeout=10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def test_a_socket_folder_open_to_others_is_refused(session):
    env = session
    folder = os.path.join(env.runtime, "gemvault")
    os.mkdir(folder, 0o755)
    result = env.run("unlock")
    assert result.code == 1 and "must be 0700" in result.err and "chmod 700" in result.err, result


def test_other_users_are_refused_by_the_agent(session):
    if os.geteuid() != 0:
        pytest.skip("needs root to run the agent as a second user account")
    from test_hardening import PeerUser
    peer = PeerUser("gemvault-agent-peer-")
    peer_home, peer_env, passfile = peer.home, peer.env, peer.passfile

    def as_peer(*args, input=None):
        return peer.run(*args, input=input)
    try:
        assert as_peer("init", "--kdf", "interactive", "--passphrase-file", passfile).returncode == 0
        assert as_peer("key", "set", "--passphrase-file", passfile, input=GOOD_KEY).returncode == 0
        assert as_peer("unlock", "--passphrase-file", passfile).returncode == 0
        assert as_peer("key", "get").stdout == GOOD_KEY + "\n"
        # The agent is not dumpable: its /proc files belong to root, not to the account
        # (for a dumpable process of the account they would be the account's).
        agent_pid = json.loads(as_peer("status", "--json").stdout)["agentPid"]
        assert os.stat("/proc/%d/environ" % agent_pid).st_uid == 0
        folder = peer_home + "/run/gemvault"
        [name] = [n for n in os.listdir(folder) if n.endswith(".sock")]
        # Root can reach the socket despite its mode; the agent still refuses root.
        client = socket.socket(socket.AF_UNIX)
        client.settimeout(5)
        client.connect(os.path.join(folder, name))
        try:
            client.sendall(frame(10))
            answer = client.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            answer = b""  # refused at once
        assert answer == b""
        client.close()
        log = "".join(open(os.path.join(folder, n)).read() for n in os.listdir(folder) if n.endswith(".log"))
        assert "refused a connection from uid 0" in log
        # And root's client refuses a socket folder that is not root's.
        result = subprocess.run([BIN, "key", "get", "--vault", peer_home + "/data/gemvault/vault"],
                                env=dict(peer_env, HOME="/root"), capture_output=True, text=True)
        assert GOOD_KEY not in result.stdout
    finally:
        peer.remove()


def test_exec_passes_codes_signals_environment_and_nothing_else(session, tmp_path):
    env = session
    env.run("unlock")
    listing = tmp_path / "child"
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import json, os, sys
        fds = sorted(os.listdir("/proc/self/fd"))
        json.dump({"fds": fds, "gemini": os.environ.get("GEMINI_API_KEY"), "google": os.environ.get("GOOGLE_API_KEY"),
                   "custom": os.environ.get("MY_KEY"), "nested": os.environ.get("GEMVAULT_EXEC")}, open(sys.argv[1], "w"))
        sys.exit(int(sys.argv[2]))
    """))
    read_end, write_end = os.pipe()
    try:
        result = env.run("exec", "--", sys.executable, str(probe), str(listing), "7", passphrase=False,
                         env={"GOOGLE_API_KEY": "AIzaShadowShadowShadowShadowShadowShad"}, pass_fds=(read_end,))
    finally:
        os.close(read_end)
        os.close(write_end)
    seen = json.loads(listing.read_text())
    assert result.code == 7, result
    # GOOGLE_API_KEY, which SDKs prefer, is gone; the child gets the key gemvault resolved.
    resolved = json.loads(env.run("key", "which", "--json", passphrase=False,
                                  env={"GOOGLE_API_KEY": "AIzaShadowShadowShadowShadowShadowShad"}).out)["masked"]
    assert seen["gemini"][:4] + "…" + seen["gemini"][-4:] == resolved and seen["google"] is None and seen["nested"] == "1"
    assert len([fd for fd in seen["fds"] if int(fd) > 2]) <= 1, seen  # at most the one listdir used
    custom = env.run("exec", "--env", "MY_KEY", "--", sys.executable, str(probe), str(listing), "0", passphrase=False)
    assert custom.code == 0 and json.loads(listing.read_text())["custom"] == GOOD_KEY
    google = env.run("exec", "--env", "GOOGLE_API_KEY", "--", sys.executable, str(probe), str(listing), "0", passphrase=False)
    assert google.code == 0 and json.loads(listing.read_text())["google"] == GOOD_KEY
    # A signal ends the child: 128 + the signal.
    killed = env.run("exec", "--", "sh", "-c", "kill -TERM $$", passphrase=False)
    assert killed.code == 128 + signal.SIGTERM
    # A signal sent to gemvault reaches the child.
    proc = subprocess.Popen([BIN, "exec", "--", "sh", "-c", "trap 'exit 42' TERM; sleep 30 & wait"], env=env.vars)
    # The child's `sleep` runs: its trap is set.
    # (Its program, not the shell's own command line, which names sleep too.)
    wait_until(lambda: any(command.split(b"\0")[0].endswith(b"sleep") for command in descendant_commands(proc.pid)), "the child's sleep")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 42
    nested = env.run("exec", "--", "true", passphrase=False, env={"GEMVAULT_EXEC": "1"})
    assert nested.code == 1 and "--force" in nested.err
    assert env.run("exec", "--force", "--", "true", passphrase=False, env={"GEMVAULT_EXEC": "1"}).code == 0
    missing = env.run("exec", "--", "no-such-program-here", passphrase=False)
    assert missing.code == 127


def test_exec_refuses_to_put_the_key_in_a_variable_the_loader_reads(api, tmp_path):
    ran = tmp_path / "ran"
    for variable in ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_ANYTHING_NEW", "GCONV_PATH", "GLIBC_TUNABLES", "TMPDIR", "TZDIR"):
        result = api.run("exec", "--env", variable, "--", "touch", str(ran), passphrase=False)
        assert result.code == 64, (variable, result)
        assert result.err.startswith("gemvault: error: --env %s: " % variable), result
        assert GOOD_KEY not in result.err + result.out and not ran.exists(), variable
    # A name that merely contains LD_ is an ordinary variable.
    allowed = api.run("exec", "--env", "OLD_LD_KEY", "--", "sh", "-c", 'test "$OLD_LD_KEY" = "$0" && touch "$1"', GOOD_KEY, str(ran),
                      passphrase=False)
    assert allowed.code == 0 and ran.exists(), allowed


def test_rotation_checks_the_new_key_keeps_history_and_rolls_back(session):
    env = session
    refused = env.run("key", "rotate", input="AQ.BAD-new-key-0123456789abcdefghijklmnopqrstuvwxyz01")
    assert refused.code == 6 and "API_KEY_INVALID" in refused.err, refused
    assert env.run("key", "get").out == GOOD_KEY + "\n"
    rotated = env.run("key", "rotate", input=OTHER_KEY)
    assert rotated.code == 0 and "aistudio.google.com" in rotated.err, rotated
    assert env.server.requests()[-1]["path"].startswith("/v1beta/models?")
    assert env.server.requests()[-1]["headers"]["x-goog-api-key"] == OTHER_KEY
    assert env.run("key", "get").out == OTHER_KEY + "\n"
    history = json.loads(env.run("key", "history", "default", "--json").out)
    assert [v["current"] for v in history["values"]] == [True, False]
    assert history["values"][1]["value"] == GOOD_KEY[:4] + "…" + GOOD_KEY[-4:]
    assert GOOD_KEY not in env.run("key", "history", "default").out
    assert env.run("key", "rollback", "default").code == 0
    assert env.run("key", "get").out == GOOD_KEY + "\n"
    after = json.loads(env.run("key", "history", "default", "--json").out)["values"]
    assert [v["value"] for v in after] == [GOOD_KEY[:4] + "…" + GOOD_KEY[-4:], OTHER_KEY[:4] + "…" + OTHER_KEY[-4:]]
    unchecked = env.run("key", "rotate", "--no-verify", input="AIzaBAD-unchecked-0123456789abcdefghijk")
    assert unchecked.code == 0
    # Through a session, no passphrase is needed, and the last use is recorded.
    env.run("unlock")
    assert env.run("key", "rollback", "default", passphrase=False).code == 0
    env.run("key", "get", passphrase=False)
    listed = json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"]
    assert listed[0]["last_used"] is not None and listed[0]["age_days"] == 0


def age_every_key(env, days):
    """Rewrites the vault with PyNaCl, from Docs/vault-format.md, as if its keys were set `days` ago."""
    import test_vault_format as fmt
    nacl = fmt.nacl
    data = open(env.vault, "rb").read()
    vault = fmt.parse(data)
    slot = fmt.slot_of(vault, (fmt.PASSPHRASE_SLOT,))
    data_key = fmt.unwrap(slot, PASSPHRASE.encode())
    payload = bytearray(fmt.unpad(fmt.decrypt(vault, data_key)))
    assert payload[0] == 11  # the keys come first; the sharing section, the links and the secrets at the end are kept as they are
    offset = 33

    def skip_google_key():
        # Payload versions 5 to 9: a value's Google key, two u16-length texts.
        nonlocal offset
        for _text in range(2):
            (length,) = struct.unpack_from("<H", payload, offset)
            offset += 2 + length
    (count,) = struct.unpack_from("<H", payload, offset)
    offset += 2
    for _ in range(count):
        for _field in range(2):
            (n,) = struct.unpack_from("<H", payload, offset)
            offset += 2 + n
        created, updated = struct.unpack_from("<qq", payload, offset)
        struct.pack_into("<qq", payload, offset, created - days * 86400, updated - days * 86400)
        offset += 24
        skip_google_key()
        previous = payload[offset]
        offset += 1
        for _ in range(previous):
            (n,) = struct.unpack_from("<H", payload, offset)
            offset += 2 + n
            retired, set_at = struct.unpack_from("<qq", payload, offset)
            struct.pack_into("<qq", payload, offset, retired - days * 86400, set_at - days * 86400)
            offset += 16
            skip_google_key()
    padded = bytes(payload) + b"\x80"
    padded += b"\x00" * (-len(padded) % 512)
    header = bytearray(vault["header"])
    struct.pack_into("<Q", header, 26, vault["generation"] + 1)
    nonce = os.urandom(24)
    slots_end = len(header) - 28
    header[slots_end:slots_end + 24] = nonce
    struct.pack_into("<I", header, slots_end + 24, len(padded) + 16)
    ciphertext = nacl.crypto_aead_xchacha20poly1305_ietf_encrypt(padded, bytes(header), nonce, data_key)
    body = bytes(header) + ciphertext
    with open(env.vault, "wb") as handle:
        handle.write(body + hashlib.blake2b(body, digest_size=32).digest())


def test_an_old_key_gets_one_reminder_a_day_from_chat_ask_and_exec(session):
    env = session
    env.run("config", "set", "rotation_days", "30")
    age_every_key(env, 45)
    listed = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert listed[0]["age_days"] == 45
    first = env.run("ask", "--model", "echo", "hi")
    assert first.code == 0 and "key 'default' is 45 days old (rotation_days is 30)" in first.err, first
    again = env.run("--passphrase-file", env.passfile, "exec", "--", "true", passphrase=False)
    assert again.code == 0 and "days old" not in again.err
    tomorrow = os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "reminders")
    for name in os.listdir(tomorrow):
        with open(os.path.join(tomorrow, name), "w") as handle:
            handle.write("2000-01-01")
    chat = env.run("chat", "--model", "echo", input="hi\n")
    assert "days old" in chat.err


def test_key_rollback_gives_the_restored_value_its_own_age_back(session):
    env = session
    env.run("config", "set", "rotation_days", "30")
    age_every_key(env, 60)
    rotated = env.run("key", "rotate", "--no-verify", input=OTHER_KEY)
    assert rotated.code == 0, rotated
    assert json.loads(env.run("key", "list", "--json").out)["keys"][0]["age_days"] == 0
    rolled = env.run("key", "rollback", "default")
    assert rolled.code == 0, rolled
    [listed] = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert listed["age_days"] == 60 and listed["previous_versions"] == 1
    assert env.run("key", "get").out == GOOD_KEY + "\n"
    # The rotation reminder sees the old key again, and a second rollback brings back the new one, still young.
    reminded = env.run("ask", "--model", "echo", "hi")
    assert reminded.code == 0 and "key 'default' is 60 days old" in reminded.err, reminded
    assert env.run("key", "rollback", "default").code == 0
    assert json.loads(env.run("key", "list", "--json").out)["keys"][0]["age_days"] == 0
    assert env.run("key", "get").out == OTHER_KEY + "\n"


def test_rekey_through_the_session_and_passwd_beside_it(session):
    env = session
    env.run("unlock")
    before = open(env.vault, "rb").read()
    rekeyed = env.run("rekey", passphrase=False)
    assert rekeyed.code == 0, rekeyed
    assert open(env.vault, "rb").read() != before and open(env.vault + ".bak", "rb").read() == open(env.vault, "rb").read()
    assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"
    new_pass = os.path.join(env.root, "np")
    env.write_private(new_pass, "the passphrase after passwd\n")
    assert env.run("passwd", "--new-passphrase-file", new_pass).code == 0
    # The session followed the new passphrase.
    assert status(env)["unlocked"]
    assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"
    assert env.run("key", "set", "after", input=OTHER_KEY, passphrase=False).code == 0
    assert env.run("--no-session", "key", "get", "after", "--passphrase-file", new_pass, passphrase=False).out == OTHER_KEY + "\n"


def test_an_old_copy_restored_under_a_session_is_refused(session):
    env = session
    env.run("unlock")
    old = open(env.vault, "rb").read()
    env.run("key", "set", "newer", input=OTHER_KEY, passphrase=False)
    with open(env.vault, "wb") as handle:
        handle.write(old)
    result = env.run("key", "get", passphrase=False)
    assert result.code == 4 and "old copy was restored" in result.err, result


def test_the_agent_never_serves_or_launders_an_old_copy(session):
    env = session
    env.run("unlock")
    env.run("key", "get", passphrase=False)
    assert env.run("--no-session", "key", "set", "k", input=OTHER_KEY).code == 0
    old = open(env.vault, "rb").read()
    assert env.run("--no-session", "key", "set", "k", input=GOOD_KEY).code == 0
    with open(env.vault, "wb") as handle:
        handle.write(old)
    through = env.run("key", "get", "k", passphrase=False)
    assert through.code == 4 and "old copy" in through.err, through
    env.run("lock", passphrase=False)
    # Nothing was written on the way out: the newer generation still stands above the copy.
    direct = env.run("key", "get", "k")
    assert direct.code == 4, direct


def test_a_format_1_copy_put_back_is_never_served_nor_laundered(session):
    from test_hardening import install_format_1_vector
    env = session
    expected = install_format_1_vector(env)
    fixture = open(env.vault, "rb").read()
    assert env.run("key", "set", "newer", input=OTHER_KEY).code == 0
    assert env.run("unlock").code == 0
    assert env.run("key", "get", "newer", passphrase=False).out == OTHER_KEY + "\n"
    with open(env.vault, "wb") as handle:
        handle.write(fixture)
    served = env.run("key", "get", passphrase=False)
    assert served.code == 4 and expected["keys"]["default"] not in served.out, served
    env.run("lock", passphrase=False)
    # The agent wrote nothing on its way out: the copy is still refused.
    assert env.run("key", "get").code == 4


def test_a_socket_folder_planted_by_another_user_does_not_lock_the_user_out(session):
    from test_hardening import peer_account, PEER
    account = peer_account()
    env = session
    env.vars.pop("XDG_RUNTIME_DIR")
    planted = "/tmp/gemvault-%d" % os.getuid()
    if os.path.lexists(planted):
        # A runtime folder of our own left by an earlier run, with no agent in it, may go.
        if os.lstat(planted).st_uid != os.getuid() or any(n.endswith(".sock") for n in os.listdir(planted)):
            pytest.skip("%s is in use on this machine" % planted)
        shutil.rmtree(planted)
    subprocess.run(["runuser", "-u", PEER, "--", "mkdir", planted], check=True)
    try:
        got = env.run("key", "get")
        assert got.code == 0 and got.out == GOOD_KEY + "\n", got
        assert "owned by uid %d" % account.pw_uid in got.err
        unlock = env.run("unlock")
        assert unlock.code == 1 and "XDG_RUNTIME_DIR" in unlock.err, unlock
        locked = json.loads(env.run("status", "--json", passphrase=False).out)
        assert locked["unlocked"] is False and locked["agentPid"] is None
    finally:
        subprocess.run(["rm", "-rf", planted])


def test_durations_beyond_a_year_are_refused(session):
    env = session
    result = env.run("unlock", "--idle", "9223372036000000000s")
    assert result.code == 64 and "366d" in result.err, result


def test_unlock_checks_its_flags_before_asking_or_starting_anything(session):
    env = session
    # With a passphrase file: refused at once, and no agent was left behind.
    refused = env.run("unlock", "--idle", "forever")
    assert refused.code == 64 and "--idle takes a duration" in refused.err and "usage: gemvault unlock" in refused.err, refused
    assert status(env)["agentPid"] is None
    assert not os.path.exists(os.path.join(env.runtime, "gemvault")) or not [n for n in os.listdir(os.path.join(env.runtime, "gemvault")) if n.endswith(".sock")]
    # On a terminal: refused before the passphrase prompt.
    s = PtySession([BIN, "unlock", "--max", "soon"], env.vars)
    try:
        assert s.wait() == 64
        assert "--max takes a duration" in s.text() and "Passphrase" not in s.text()
    finally:
        s.close()
    # While a session runs: refused too, not silently accepted.
    assert env.run("unlock").code == 0
    again = env.run("unlock", "--idle", "forever", passphrase=False)
    assert again.code == 64 and "--idle takes a duration" in again.err, again


def test_lock_stops_a_chat_whose_key_came_from_the_session(session):
    """`gemvault lock` wipes the vault from the agent's memory; a chat that got its key from
    the session must notice before its next turn, and neither send nor save it."""
    assert session.run("unlock").code == 0
    session.server.clear()
    s = PtySession([BIN, "chat", "--model", "echo"], session.vars)
    try:
        s.expect(r"you ›")
        s.line("before the lock")
        s.expect(r"last=before the lock")
        s.expect(r"you ›")
        assert session.run("lock", passphrase=False).code == 0
        s.mark()
        s.line("after the lock")
        code = s.wait()
        screen = s.text()
    finally:
        s.close()
    assert code == 1, screen
    assert "the session was locked" in screen and "the chat stopped" in screen, screen
    assert "last=after the lock" not in screen
    sent = [r for r in session.server.requests() if ":streamGenerateContent" in r["path"]]
    assert len(sent) == 1, sent
    # The history holds the turn from before the lock, not the message typed after it.
    listed = json.loads(session.run("history", "list", "--json").out)["conversations"]
    assert len(listed) == 1
    shown = session.run("history", "show", listed[0]["id"])
    assert "before the lock" in shown.out and "after the lock" not in shown.out, shown


def test_a_chat_with_a_key_from_the_environment_goes_on_after_lock(session):
    assert session.run("unlock").code == 0
    variables = dict(session.vars, GEMINI_API_KEY=GOOD_KEY)
    s = PtySession([BIN, "chat", "--model", "echo"], variables)
    try:
        s.expect(r"you ›")
        assert session.run("lock", passphrase=False).code == 0
        s.line("after the lock")
        s.expect(r"last=after the lock")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def agent_connections(env, *args, input=None):
    """Runs gemvault under strace and counts its connections to the session agent's socket."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed, so the connections to the agent cannot be counted")
    trace = os.path.join(env.root, "connect-trace.txt")
    argv = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", trace, BIN] + list(args)
    proc = subprocess.run(argv, input=input, env=env.vars, capture_output=True, text=True, timeout=120, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as handle:
        return proc, sum(1 for line in handle if "connect(" in line and "agent-" in line)


def test_ask_through_a_session_makes_one_agent_connection(session):
    """The settings, the key and the conversation keys come in one answer (issue 42, item 3)."""
    assert session.run("unlock").code == 0
    proc, connections = agent_connections(session, "ask", "--model", "echo", "hello")
    assert "last=hello" in proc.stdout, proc.stderr
    assert connections == 1
    # The answer opened the history too: the ask was saved.
    assert len(json.loads(session.run("history", "list", "--json", passphrase=False).out)["conversations"]) == 1


def test_a_three_turn_chat_through_a_session_makes_at_most_two_agent_connections(session):
    """One answer, then one watch the agent closes at lock: no round trip per turn."""
    assert session.run("unlock").code == 0
    proc, connections = agent_connections(session, "chat", "--model", "echo", input="one\ntwo\nthree\n")
    assert "last=one" in proc.stdout and "last=three" in proc.stdout, proc.stderr
    assert connections <= 2, connections
    shown = json.loads(session.run("history", "list", "--json", passphrase=False).out)["conversations"]
    assert [c["turns"] for c in shown] == [3]
