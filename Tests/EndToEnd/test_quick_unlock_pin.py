"""The PIN that lives only in the agent (Docs/quick-unlock.md), as a user meets it: a real
background agent, a real pseudo-terminal for the prompts, real idle locks, kill -9, and a
second account when the tests run as root."""
import json
import os
import signal
import socket
import struct
import time

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, wait_until
from ptyrun import PtySession

PIN = "4812-pin-marker"
PIN_PROMPT = r"Unlock with PIN \(passphrase: press Enter\): "


@pytest.fixture
def vault(env):
    env.recovery_code = env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    yield env
    env.run("lock", passphrase=False)


def unlock_with_pin(env, idle="2s", pin=PIN, *more):
    """unlock --pin with the passphrase from its file and the PIN typed twice on a terminal."""
    session = PtySession([BIN, "unlock", "--pin", "--idle", idle, "--passphrase-file", env.passfile] + list(more), env.vars)
    session.expect("New PIN: ")
    session.line(pin)
    session.expect("Repeat the PIN: ")
    session.line(pin)
    assert session.wait() == 0, session.text()
    assert "PIN set" in session.text()


def status(env):
    return json.loads(env.run("status", "--json", passphrase=False).out)


def wait_for_idle_lock(env):
    return wait_until(lambda: (lambda s: s if not s["unlocked"] and s["pinAvailable"] else None)(status(env)), "the idle lock", limit=20)


def in_terminal(env, *args):
    return PtySession([BIN] + list(args), env.vars)


def test_after_an_idle_lock_the_pin_opens_the_session_again(vault):
    env = vault
    unlock_with_pin(env)
    assert status(env)["pinTriesLeft"] == 3
    locked = wait_for_idle_lock(env)
    assert locked["pinTriesLeft"] == 3 and locked["pinUntil"] == locked["maxLocksAt"]
    text = env.run("status", passphrase=False).out
    assert text.startswith("locked (PIN available, 3 tries left, until ")
    session = in_terminal(env, "key", "get")
    session.expect(PIN_PROMPT)
    session.line(PIN)
    assert session.wait() == 0, session.text()
    assert GOOD_KEY in session.text()
    assert status(env)["unlocked"] is True


def test_enter_at_the_pin_prompt_asks_for_the_passphrase_and_the_pin_stays(vault):
    env = vault
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    session = in_terminal(env, "key", "get")
    session.expect(PIN_PROMPT)
    session.line("")
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0, session.text()
    assert GOOD_KEY in session.text()
    assert status(env)["pinTriesLeft"] == 3


def test_a_passphrase_flag_skips_the_pin_prompt(vault):
    env = vault
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    session = in_terminal(env, "key", "get", "--passphrase-file", env.passfile)
    assert session.wait() == 0, session.text()
    assert "PIN" not in session.text() and GOOD_KEY in session.text()


def test_wrong_pins_wipe_it_and_the_count_is_the_agents(vault):
    env = vault
    env.vars["GEMVAULT_PIN_TRIES"] = "2"
    unlock_with_pin(env)
    assert status(env)["pinTriesLeft"] == 2
    wait_for_idle_lock(env)
    # One wrong PIN, then the client gives up: a new client sees the count the agent kept.
    session = in_terminal(env, "key", "get")
    session.expect(PIN_PROMPT)
    session.line("0000")
    session.expect("wrong PIN \\(1 try left\\)[^\\n]*\\n[^\\n]*" + PIN_PROMPT)
    session.close()
    assert status(env)["pinTriesLeft"] == 1
    session = in_terminal(env, "key", "get")
    # The wrong PIN someone else sent is told of before the prompt.
    session.expect(r"1 wrong PIN was typed since the PIN was set; 1 try left")
    session.expect(PIN_PROMPT)
    session.line("1111")
    session.expect("wiped the PIN")
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0, session.text()
    # Nothing was left to serve: the agent is gone, and the PIN with it.
    wait_until(lambda: not status(env)["pinAvailable"] and status(env)["agentPid"] is None, "the agent to exit")
    assert env.run("status", passphrase=False).out.startswith("locked: ")


def test_kill_9_of_the_agent_ends_the_pin(vault):
    env = vault
    unlock_with_pin(env, idle="1h")
    pid = status(env)["agentPid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: status(env)["agentPid"] is None, "the agent to be gone")
    session = in_terminal(env, "key", "get")
    session.expect("Passphrase for ")
    assert "PIN" not in session.text()
    session.close()


@pytest.mark.parametrize("change", ["passwd", "rekey", "recover", "lock"])
def test_passwd_rekey_recover_and_lock_end_the_pin(vault, change):
    env = vault
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    args = {"passwd": ["passwd", "--new-passphrase-file", env.passfile], "rekey": ["rekey"], "lock": ["lock"],
            "recover": ["recover", "--new-passphrase-file", env.passfile]}[change]
    result = env.run(*args, input=env.recovery_code + "\n" if change == "recover" else None)
    assert result.code == 0, result.err
    wait_until(lambda: not status(env)["pinAvailable"], "the PIN to end")
    session = in_terminal(env, "key", "get")
    session.expect("Passphrase for ")
    assert "PIN" not in session.text()
    session.close()


def test_the_absolute_limit_ends_the_pin(vault):
    env = vault
    unlock_with_pin(env, "1s", PIN, "--max", "4s")
    wait_for_idle_lock(env)
    # Past session_max the agent has wiped the PIN's copy and exited.
    wait_until(lambda: status(env)["agentPid"] is None, "the absolute limit", limit=20)
    assert status(env)["pinAvailable"] is False


def test_an_open_session_shows_its_pin(vault):
    env = vault
    unlock_with_pin(env, idle="1h")
    text = env.run("status", passphrase=False).out
    assert text.startswith("unlocked: ") and "PIN:      set (3 tries left)" in text
    assert env.run("lock", passphrase=False).code == 0


def test_a_pin_is_4_to_64_characters_and_needs_a_session(vault):
    env = vault
    result = env.run("pin", "set", input="1234\n", passphrase=False)
    assert result.code == 1 and "no unlocked session" in result.err
    assert env.run("unlock").code == 0
    assert env.run("pin", "set", input="123\n", passphrase=False).code == 64
    assert env.run("pin", "set", input="x" * 65 + "\n", passphrase=False).code == 64
    assert env.run("pin", "set", input="1234\n", passphrase=False).code == 0
    assert status(env)["pinTriesLeft"] == 3
    assert env.run("pin", "clear", passphrase=False).code == 0
    assert status(env)["pinAvailable"] is False
    assert status(env)["unlocked"] is True


def test_pin_clear_on_an_idle_locked_session_ends_it(vault):
    env = vault
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    result = env.run("pin", "clear", passphrase=False)
    assert result.code == 0 and "the locked session ended" in result.err
    wait_until(lambda: status(env)["agentPid"] is None, "the agent to exit")


def test_nothing_derived_from_the_pin_reaches_a_file(vault):
    env = vault
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    session = in_terminal(env, "key", "get")
    session.expect(PIN_PROMPT)
    session.line(PIN)
    assert session.wait() == 0
    env.run("lock", passphrase=False)
    seen = 0
    for folder, _, names in os.walk(env.root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            seen += 1
            assert PIN.encode() not in data, path
    assert seen >= 3  # the vault, its backup, the agent's log at least


def frame(op, fields=()):
    body = bytes([op]) + b"".join(bytes([tag]) + struct.pack("<I", len(value)) + value for tag, value in fields)
    return b"GVA1" + struct.pack("<I", len(body)) + body


def agent_socket(runtime):
    folder = os.path.join(runtime, "gemvault")
    [name] = [n for n in os.listdir(folder) if n.endswith(".sock")]
    return os.path.join(folder, name)


def guess(path, pin):
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(10)
    # Through the folder's descriptor, as gemvault does: the path may be longer than a socket name.
    folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        client.connect("/proc/self/fd/%d/%s" % (folder, os.path.basename(path)))
    finally:
        os.close(folder)
    answer = b""
    try:
        client.sendall(frame(20, [(58, pin.encode())]))
        while True:
            chunk = client.recv(4096)
            if not chunk:
                break
            answer += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass  # refused at once
    client.close()
    return answer


def test_a_client_guessing_fast_is_slowed_to_one_guess_per_200_ms(vault):
    env = vault
    env.vars["GEMVAULT_PIN_TRIES"] = "10"
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    path = agent_socket(env.vars["XDG_RUNTIME_DIR"])
    started = time.monotonic()
    answers = [guess(path, "%04d" % n) for n in range(6)]
    elapsed = time.monotonic() - started
    assert all(answer[8] == 1 for answer in answers)  # each refused
    # Six guesses as fast as a client can send them take five intervals at least.
    assert elapsed >= 5 * 0.2, elapsed
    assert status(env)["pinTriesLeft"] == 4


def test_a_second_account_cannot_send_pins(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to run the agent as a second user account")
    from test_hardening import PeerUser
    peer = PeerUser("gemvault-pin-peer-", kdf_floor=True)
    peer_home, passfile, as_peer = peer.home, peer.passfile, peer.run
    try:
        assert as_peer("init", "--kdf", "interactive", "--passphrase-file", passfile).returncode == 0
        result = as_peer("unlock", "--pin", "--idle", "2s", "--passphrase-file", passfile, input=PIN + "\n")
        assert result.returncode == 0, result.stderr
        wait_until(lambda: '"pinAvailable":true' in as_peer("status", "--json").stdout.replace(" ", ""), "the peer's idle lock", limit=20)
        path = agent_socket(peer_home + "/run")
        # Root reaches the socket despite the folder's mode; the agent refuses it before reading.
        for pin in ("0000", "1111", "2222", "3333"):
            assert guess(path, pin) == b""
        peer_status = json.loads(as_peer("status", "--json").stdout)
        assert peer_status["pinTriesLeft"] == 3
        log = "".join(open(os.path.join(peer_home, "run/gemvault", n)).read() for n in os.listdir(peer_home + "/run/gemvault") if n.endswith(".log"))
        assert "refused a connection from uid 0" in log
    finally:
        peer.remove()


def test_a_chat_idle_locked_asks_for_the_pin_and_goes_on(api):
    """A chat whose key came from the session meets an idle lock: its next message asks for the
    PIN on the same terminal, and the conversation goes on; Enter stops it as a lock does."""
    env = api
    env.vars.pop("GEMINI_API_KEY")
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    unlock_with_pin(env)
    chat = PtySession([BIN, "chat", "--model", "echo"], env.vars)
    try:
        chat.expect(r"you ›")
        chat.line("before the lock")
        chat.expect(r"last=before the lock")
        chat.expect(r"you ›")
        wait_for_idle_lock(env)
        chat.mark()
        chat.line("after the lock")
        chat.expect(PIN_PROMPT)
        chat.line(PIN)
        chat.expect(r"last=after the lock")
        wait_for_idle_lock(env)
        chat.mark()
        chat.line("declined")
        chat.expect(PIN_PROMPT)
        chat.line("")
        code = chat.wait()
        screen = chat.text()
    finally:
        chat.close()
    env.run("lock", passphrase=False)
    assert code == 1 and "the chat stopped" in screen, screen
    assert "last=declined" not in screen


def test_a_rekey_the_agent_was_not_told_of_leaves_the_pin_opening_nothing(vault):
    """A rekey keeps the passphrase slot's key; the PIN wrapped that key. A copy rekeyed
    elsewhere and synced back in must not open with the PIN: the agent checks the data key."""
    import shutil
    env = vault
    unlock_with_pin(env)
    wait_for_idle_lock(env)
    elsewhere = os.path.join(env.root, "synced", "vault")
    os.makedirs(os.path.dirname(elsewhere), mode=0o700)
    shutil.copy2(env.vault, elsewhere)
    assert env.run("rekey", "--vault", elsewhere).code == 0
    shutil.copy2(elsewhere, env.vault)
    session = in_terminal(env, "key", "get")
    session.expect(PIN_PROMPT)
    session.line(PIN)
    session.expect(r"the\s+PIN\s+cannot\s+open\s+the\s+session")
    session.expect("Passphrase for ")
    session.line(PASSPHRASE)
    assert session.wait() == 0, session.text()
    assert GOOD_KEY in session.text()
