"""The agent under misbehaving clients, and the session's socket in any folder: a real agent,
real sockets, real processes (issue 18)."""
import fcntl
import hashlib
import json
import os
import resource
import select
import socket
import struct
import time
from datetime import datetime

import pytest

from conftest import GOOD_KEY, PASSPHRASE, wait_until
from test_session import agent_log, connect_agent, frame, session, socket_path, status  # noqa: F401 (session is a fixture)

MAX_FRAME = 17 << 20
WRITE, STATUS, UNLOCK, CHANGE = 4, 1, 2, 13  # 4: the whole-vault write, now an unknown operation


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s for pid %d" % (field, pid))


def seconds(iso):
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").timestamp()


def ask(env, request):
    """Sends one request and returns the answer's status byte and body (None, b"" if the agent hung up)."""
    client = connect_agent(env)
    try:
        try:
            client.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused part way: the answer is already waiting
        answer = b""
        while True:
            try:
                chunk = client.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
    finally:
        client.close()
    if len(answer) < 9:
        return None, answer
    return answer[8], answer[9:]


def stalled_request(env):
    """A client that sent the first bytes of a request and stops there: the agent waits for the
    rest, 2 s from the first byte (AgentServer.Limits.request), then drops it."""
    client = connect_agent(env, timeout=5)
    client.sendall(b"GVA1")
    return client


def still_held(client):
    """Whether the agent still holds the connection: nothing has come back, and no end either."""
    client.setblocking(False)
    try:
        client.recv(1, socket.MSG_PEEK)
        return False  # an answer (a refusal) or the end
    except BlockingIOError:
        return True
    except OSError:
        return False  # reset: dropped


def deadlines(env):
    report = status(env)
    assert report["unlocked"], report
    return seconds(report["idleLocksAt"]), seconds(report["maxLocksAt"]), report["since"]


def test_clients_that_stall_or_never_read_cost_the_agent_nothing_and_delay_no_one(session):
    env = session
    assert env.run("unlock").code == 0
    pid = status(env)["agentPid"]
    misbehaving = []
    try:
        # 64 that announce a large body and stop: after the header alone, after a write's
        # operation byte and a few bytes, or a status request announcing 16 MiB.
        for index in range(64):
            client = connect_agent(env, timeout=5)
            if index % 3 == 0:
                client.sendall(b"GVA1" + struct.pack("<I", MAX_FRAME))
            elif index % 3 == 1:
                client.sendall(b"GVA1" + struct.pack("<I", MAX_FRAME) + bytes([WRITE]) + b"\x04" + struct.pack("<I", MAX_FRAME - 6) + b"x" * 100)
            else:
                client.sendall(b"GVA1" + struct.pack("<I", 16 << 20) + bytes([STATUS]))
            misbehaving.append(client)
        # 20 that ask for the status and never read the answer.
        for _ in range(20):
            client = connect_agent(env, timeout=5)
            client.sendall(frame(STATUS))
            misbehaving.append(client)
        # And one whose request the agent must wait for: its header announces a small body.
        stalled = stalled_request(env)
        misbehaving.append(stalled)
        got = env.run("key", "get", passphrase=False)
        assert got.code == 0 and got.out == GOOD_KEY + "\n", got
        # Answered while the agent still waits for the rest of that request: no one queues behind it.
        assert still_held(stalled), "key get was answered only after the agent had given up on the stalled client"
        rss = vm_kib(pid, "VmRSS")
        assert rss < 64 * 1024, "the agent's RSS is %d KiB" % rss
        assert status(env)["unlocked"] and status(env)["agentPid"] == pid
    finally:
        for client in misbehaving:
            client.close()
    # Slots ran out and the idlest made room; the log says so in one line, not one per client.
    log = agent_log(env)
    assert "were idle longest when 32 connections were open" in log and log.count("dropped ") == 1, log
    assert status(env)["unlocked"]


def fields(body):
    """The fields of an answer's body (after its status byte), by tag."""
    found, offset = {}, 0
    while offset < len(body):
        tag, length = body[offset], struct.unpack_from("<I", body, offset + 1)[0]
        found[tag] = body[offset + 5:offset + 5 + length]
        offset += 5 + length
    return found


def grow_vault_through_the_agent(env, keys, value_length):
    """Adds `keys` keys of `value_length` bytes, one change request each (Docs/session.md,
    operation 13), and returns the vault file's size."""
    now = int(time.time())
    for index in range(keys):
        name, value = b"bulk%04d" % index, b"AQ." + b"v" * (value_length - 3)
        code, answer = ask(env, frame(CHANGE, [(27, struct.pack("<q", 1)), (6, name), (20, value), (30, struct.pack("<q", now))]))
        assert code == 0, answer
    return os.path.getsize(env.vault)


def test_clients_that_never_read_a_large_answer_delay_no_one(session):
    env = session
    assert env.run("unlock").code == 0
    # A large vault; each client asks for the largest answer there is (every key's summary)
    # and never reads it.
    assert grow_vault_through_the_agent(env, 100, 4000) > 400_000
    pid = status(env)["agentPid"]
    readers = []
    try:
        for _ in range(10):
            client = connect_agent(env, timeout=5)
            client.sendall(frame(10))
            readers.append(client)
        # Every request was taken: each client has the start of its answer waiting.
        wait_until(lambda: len(select.select(readers, [], [], 0)[0]) == len(readers), "the answers")
        stalled = stalled_request(env)
        readers.append(stalled)
        got = env.run("key", "get", passphrase=False)
        assert got.code == 0 and got.out == GOOD_KEY + "\n", got
        # Answered while the agent still waits for the rest of a stalled request: no one queues
        # behind it or behind the answers not taken.
        assert still_held(stalled), "key get was answered only after the agent had given up on the stalled client"
        assert status(env)["unlocked"] and status(env)["agentPid"] == pid
    finally:
        for client in readers:
            client.close()
    assert env.run("key", "get", "bulk0099", passphrase=False).out.startswith("AQ.vvv")


def test_a_whole_vault_write_is_refused_before_any_memory_is_taken(session):
    """Operation 4, the whole-vault write, is gone: announcing 16 MiB with it is refused as an
    unknown operation from the frame's header, with no memory allocated for it."""
    env = session
    assert env.run("unlock").code == 0
    pid = status(env)["agentPid"]
    before = vm_kib(pid, "VmRSS")
    client = connect_agent(env, timeout=5)
    client.sendall(b"GVA1" + struct.pack("<I", 16 << 20) + bytes([WRITE]) + b"\x04" + struct.pack("<I", (16 << 20) - 6) + b"x" * 100)
    client.close()
    assert status(env)["unlocked"] and status(env)["agentPid"] == pid
    assert vm_kib(pid, "VmRSS") < before + 4 * 1024
    assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"


def kek_of(env):
    """The passphrase slot's key-encryption key, derived as Docs/vault-format.md says."""
    import test_vault_format as fmt
    vault = fmt.parse(env.vault_bytes())
    return fmt.argon2id(PASSPHRASE.encode(), fmt.slot_of(vault, (fmt.PASSPHRASE_SLOT,)))


def test_an_unlock_sent_to_an_open_session_changes_nothing(session):
    env = session
    assert env.run("unlock", "--idle", "10m", "--max", "1h").code == 0
    before = deadlines(env)
    # The right key, with much shorter limits: an open session keeps its own.
    request = frame(UNLOCK, [(1, kek_of(env)), (2, struct.pack("<q", 5)), (3, struct.pack("<q", 10))])
    code, _ = ask(env, request)
    assert code == 0
    after = deadlines(env)
    assert abs(after[0] - before[0]) <= 1 and abs(after[1] - before[1]) <= 1 and after[2] == before[2], (before, after)
    assert "an unlock for the open session changed nothing" in agent_log(env)


def test_a_failed_write_does_not_count_as_use_and_a_read_does(session):
    env = session
    assert env.run("unlock", "--idle", "1m").code == 0
    idle_before = deadlines(env)[0]
    time.sleep(2.5)
    for request in (frame(CHANGE, [(27, struct.pack("<q", 4)), (6, b"no-such-key"), (30, struct.pack("<q", 1))]),  # no such key
                    frame(CHANGE, [(27, struct.pack("<q", 1)), (6, b"k")]),  # no value
                    frame(CHANGE), frame(WRITE)):
        code, answer = ask(env, request)
        assert code == 1, answer
    assert abs(deadlines(env)[0] - idle_before) <= 1, "a failed write extended the idle limit"
    # The control: a read through the session is use.
    assert env.run("key", "get", passphrase=False).code == 0
    assert deadlines(env)[0] >= idle_before + 2


def deep_folder(root, length):
    """A folder of our own (every level 0700) whose path is at least `length` bytes."""
    path = os.path.join(root, "deep")
    os.mkdir(path, 0o700)
    while len(path) < length:
        path = os.path.join(path, "a-runtime-folder-of-a-long-name")
        os.mkdir(path, 0o700)
    return path


def test_a_session_works_in_a_runtime_folder_deeper_than_a_socket_name_holds(session):
    env = session
    runtime = deep_folder(env.root, 200)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    env.runtime = runtime
    assert len(runtime) >= 200 and os.stat(runtime).st_uid == os.getuid()
    unlocked = env.run("unlock")
    assert unlocked.code == 0, unlocked
    assert len(socket_path(env)) > 107
    assert env.run("key", "get", passphrase=False).out == GOOD_KEY + "\n"
    assert status(env)["unlocked"]
    assert env.run("lock", passphrase=False).code == 0
    assert not status(env)["unlocked"]


def test_a_runtime_folder_no_path_can_reach_is_refused_at_once(session):
    env = session
    runtime = os.path.join(env.root, "far", *(["a-runtime-folder-of-a-long-name"] * 140))
    assert len(runtime) > 4096
    env.vars["XDG_RUNTIME_DIR"] = runtime
    result = env.run("unlock")
    # Refused before any agent is started or waited for: the reason is the path, not a timeout.
    assert result.code == 1 and result.err.startswith("gemvault: error: the agent's socket would be a path of"), result
    assert "XDG_RUNTIME_DIR" in result.err, result
    assert not os.path.exists(os.path.join(env.root, "far")), "the unreachable folder was made anyway"


def test_an_agent_that_cannot_start_is_reported_at_once(session):
    env = session
    folder = os.path.join(env.runtime, "gemvault")
    os.mkdir(folder, 0o700)
    fingerprint = hashlib.blake2b(env.vault.encode(), digest_size=32).hexdigest()[:16]
    # Something that is no agent holds the agent's lock: the agent started by unlock exits.
    holder = os.open(os.path.join(folder, "agent-%s.lock" % fingerprint), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        result = env.run("unlock")
        # Reported from the agent's own exit, not after waiting out the start's time limit.
        assert result.code == 1 and "the agent stopped at once" in result.err and "already serves" in result.err, result
    finally:
        os.close(holder)


def test_no_answer_carries_more_than_what_was_asked(session):
    env = session
    values = {name: "AQ." + name * 25 for name in ("alpha", "bravo", "delta")}
    for name, value in values.items():
        assert env.run("key", "set", name, input=value).code == 0
    assert env.run("config", "set", "model", "echo").code == 0
    assert env.run("unlock").code == 0
    code, answer = ask(env, frame(9, [(6, b"bravo"), (33, struct.pack("<q", 0))]))
    assert code == 0 and fields(answer)[20] == values["bravo"].encode()
    assert values["alpha"].encode() not in answer and values["delta"].encode() not in answer
    for operation in (10, 11, 7, 1):  # summaries, settings, names, status
        code, answer = ask(env, frame(operation))
        assert code == 0, (operation, answer)
        assert not any(value.encode() in answer or value[4:-4].encode() in answer for value in values.values()), operation
    code, answer = ask(env, frame(11))
    assert b"echo" in answer and b"model" in answer
    # The whole contents are no longer handed out.
    code, answer = ask(env, frame(3))
    assert code == 1 and not any(value.encode() in answer for value in values.values())
    # Commands still get what they need through the session, without a passphrase.
    assert env.run("key", "get", "delta", passphrase=False).out == values["delta"] + "\n"
    assert [k["name"] for k in json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"]] == ["alpha", "bravo", "default", "delta"]
