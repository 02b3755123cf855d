"""The adversarial suite of Docs/security.md: crashes, failing writes, concurrency, tampering,
leaks and other users, run against the built binary.

./test runs the short version. The long run (`longrun/run`, GEMVAULT_LONG=1) runs the same
tests with the counts of the threat model (300 and more crash trials, every byte and every
truncation), and each test appends its figures to GEMVAULT_RESULTS for the results table.
"Nothing lost" is checked with the independent reader of Docs/vault-format.md
(test_vault_format.py): the vault holds exactly what it held before, or exactly what the
operation was to make of it.
"""
import glob
import json
import os
import random
import resource
import secrets
import shutil
import signal
import stat
import string
import struct
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from nacl.exceptions import CryptoError

import test_vault_format as reader
from conftest import BIN, GOOD_KEY, PASSPHRASE, Env
from test_second_user import USER, peer  # noqa: F401  (the second account's fixture)

LONG = os.environ.get("GEMVAULT_LONG") == "1"


def count(short, long):
    return long if LONG else short


def record(test, **figures):
    """Adds a line to the long run's results (a no-op in ./test)."""
    path = os.environ.get("GEMVAULT_RESULTS")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps(dict(test=test, **figures)) + "\n")


def api_key(tag):
    return "AQ." + tag + "".join(random.choice(string.ascii_letters + string.digits) for _ in range(50 - len(tag)))


def opened(data, passphrases):
    """(passphrase, keys, settings) of a vault's bytes, by the first passphrase that opens it;
    None when none does. A damaged file fails the reader's assertions."""
    vault = reader.parse(data)
    slot = reader.slot_of(vault, [reader.PASSPHRASE_SLOT])
    for passphrase in passphrases:
        try:
            data_key = reader.unwrap(slot, passphrase.encode())
        except CryptoError:
            continue
        keys, settings = reader.decode_payload(reader.unpad(reader.decrypt(vault, data_key)))
        return passphrase, keys, settings
    return None


def temp_files(env):
    return [n for n in os.listdir(os.path.dirname(env.vault)) if ".tmp" in n]


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


PEAK_RSS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peak_rss.py")


def measured(argv, env, input=None, timeout=60):
    """Runs a command; returns (exit code, stdout, stderr, seconds, peak RSS in KiB)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        started = time.monotonic()
        process = subprocess.run([sys.executable, PEAK_RSS, peak.name, *argv], env=env, input=input, capture_output=True,
                                 text=True, timeout=timeout, start_new_session=True)
        seconds = time.monotonic() - started
        # No figure (the launcher failed) is an error, never a peak of 0 that passes every bound.
        return process.returncode, process.stdout, process.stderr, seconds, int(peak.read())


def measured_peak(argv, env, timeout=60):
    """Exit code and peak RSS in KiB of a command whose output does not matter."""
    code, _, _, _, peak = measured(argv, env, timeout=timeout)
    return code, peak


# -- crash safety --------------------------------------------------------------------------------

OTHER_PASSPHRASE = "another passphrase for the crash trials"


class Vault:
    """The user's vault and what the independent reader says it holds."""

    def __init__(self, env):
        self.env = env
        env.vars["GEMVAULT_LOCK_TIMEOUT"] = "5"  # a stale lock fails the next write quickly
        env.init()
        assert env.run("key", "set", input=GOOD_KEY).code == 0
        self.other_passfile = os.path.join(env.root, "other-pass")
        env.write_private(self.other_passfile, OTHER_PASSPHRASE + "\n")
        self.passphrase = PASSPHRASE

    @property
    def passfile(self):
        return self.env.passfile if self.passphrase == PASSPHRASE else self.other_passfile

    def state(self):
        found = opened(self.env.vault_bytes(), [PASSPHRASE, OTHER_PASSPHRASE])
        assert found is not None, "no passphrase opens the vault"
        return found

    def command(self, *args):
        return [BIN, "--no-session", *args, "--passphrase-file", self.passfile]


def operation(vault, name, trial):
    """(argv, stdin, what the vault must hold if the operation completed) for one trial."""
    passphrase, keys, settings = vault.state()
    if name == "key set":
        value = api_key("Set%d" % trial)
        return vault.command("key", "set", "k%d" % trial), value, (passphrase, dict(keys, **{"k%d" % trial: value}), settings)
    if name == "key rotate":
        value = api_key("Rot%d" % trial)
        return vault.command("key", "rotate", "default", "--no-verify"), value, (passphrase, dict(keys, default=value), settings)
    if name == "passwd":
        new = OTHER_PASSPHRASE if passphrase == PASSPHRASE else PASSPHRASE
        new_file = vault.other_passfile if new == OTHER_PASSPHRASE else vault.env.passfile
        return vault.command("passwd", "--new-passphrase-file", new_file), None, (new, keys, settings)
    if name == "rekey":
        return vault.command("rekey"), None, (passphrase, keys, settings)
    raise ValueError(name)


def wait_for_temp_file(env, process, limit=10):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and process.poll() is None:
        if temp_files(env):
            return True
        time.sleep(0.0005)
    return False


def check_after_crash(vault, before, after, label):
    """Nothing lost, a valid backup, no stale lock, no temp file after the next write."""
    state = vault.state()
    assert state in (before, after), (label, state, before, after)
    vault.passphrase = state[0]
    backup = opened(read(vault.env.vault + ".bak"), [PASSPHRASE, OTHER_PASSPHRASE]) if os.path.exists(vault.env.vault + ".bak") else None
    assert backup is not None, (label, "the backup does not open")
    probe = subprocess.run(vault.command("key", "set", "probe"), input=api_key("Probe"), env=vault.env.vars,
                           capture_output=True, text=True, timeout=30)
    assert probe.returncode == 0, (label, probe.stderr)
    assert temp_files(vault.env) == [], (label, temp_files(vault.env))
    return "after" if state == after else "before"


CRASHED_OPERATIONS = ["key set", "passwd", "rekey", "key rotate"]


@pytest.mark.parametrize("name", CRASHED_OPERATIONS)
def test_sigkill_at_any_moment_of_a_write_loses_nothing(env, name):
    vault = Vault(env)
    argv, stdin, expected = operation(vault, name, 0)
    started = time.monotonic()
    assert subprocess.run(argv, input=stdin, env=env.vars, capture_output=True, text=True).returncode == 0
    duration = time.monotonic() - started
    assert vault.state() == expected
    outcomes = {"before": 0, "after": 0}
    keyed = count(2, 25)
    trials = count(4, 75)
    for trial in range(1, trials + 1):
        before = vault.state()
        argv, stdin, after = operation(vault, name, trial)
        process = subprocess.Popen(argv, env=env.vars, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        if stdin:
            process.stdin.write(stdin.encode())
        process.stdin.close()
        if trial <= keyed:
            wait_for_temp_file(env, process)  # the moment of the save itself
        elif trial % 2:
            time.sleep(random.uniform(0, duration * 1.2))  # any moment
        else:
            time.sleep(random.uniform(duration * 0.7, duration * 1.1))  # the end, where the writing is
        process.kill()
        process.wait()
        outcomes[check_after_crash(vault, before, after, (name, trial))] += 1
    record("crash: SIGKILL during " + name, trials=trials, keyed_to_the_temp_file=keyed, **outcomes, lost=0)


@pytest.fixture
def unlocked(env):
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    yield env
    subprocess.run([BIN, "lock"], env=env.vars, capture_output=True, timeout=30)


def agent_pid(env):
    status = json.loads(subprocess.run([BIN, "status", "--json"], env=env.vars, capture_output=True, text=True).stdout)
    return status["agentPid"] if status["unlocked"] else None


def test_sigkill_of_the_agent_during_a_write_loses_nothing(unlocked):
    env = unlocked
    vault = Vault(env)
    outcomes = {"before": 0, "after": 0}
    trials = count(4, 60)
    for trial in range(trials):
        assert subprocess.run([BIN, "unlock", "--passphrase-file", vault.passfile], env=env.vars, capture_output=True).returncode == 0
        pid = agent_pid(env)
        before = vault.state()
        value = api_key("Agent%d" % trial)
        after = (before[0], dict(before[1], **{"a%d" % trial: value}), before[2])
        client = subprocess.Popen([BIN, "key", "set", "a%d" % trial], env=env.vars, stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        client.stdin.write(value.encode())
        client.stdin.close()
        if trial % 2 == 0:
            wait_for_temp_file(env, client, limit=5)
        else:
            time.sleep(random.uniform(0, 0.05))
        os.kill(pid, signal.SIGKILL)
        client.wait(timeout=30)
        outcomes[check_after_crash(vault, before, after, ("agent", trial))] += 1
    record("crash: SIGKILL of the agent during a write", trials=trials, **outcomes, lost=0)


# -- failing writes ------------------------------------------------------------------------------

def test_a_file_size_limit_fails_each_write_and_leaves_the_vault_as_it_was(env):
    vault = Vault(env)
    before = env.vault_bytes()
    for name in CRASHED_OPERATIONS:
        argv, stdin, _ = operation(vault, name, 1)
        limited = subprocess.run(argv, input=stdin, env=env.vars, capture_output=True, text=True,
                                 preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256)))
        assert limited.returncode == 1, (name, limited)
        assert env.vault in limited.stderr and "unchanged" in limited.stderr, (name, limited.stderr)
        assert env.vault_bytes() == before and temp_files(env) == [], name
    record("failing write: RLIMIT_FSIZE", operations=len(CRASHED_OPERATIONS), vault_unchanged=len(CRASHED_OPERATIONS))


def mount_small_tmpfs(folder):
    """A 64 KiB tmpfs at folder, in this process's mount namespace; the reason when it cannot be had."""
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    if shutil.which("mount") is None:
        return "mount is not installed"
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", folder], capture_output=True, text=True)
    return None if made.returncode == 0 else "this sandbox cannot mount a tmpfs: " + made.stderr.strip()


def test_a_full_file_system_fails_each_write_and_leaves_the_vault_as_it_was(env):
    folder = os.path.join(env.root, "small")
    os.mkdir(folder, 0o700)
    reason = mount_small_tmpfs(folder)
    if reason:
        pytest.skip(reason)
    try:
        env.vars["GEMVAULT_VAULT"] = os.path.join(folder, "vault")
        env.vault = env.vars["GEMVAULT_VAULT"]
        vault = Vault(env)
        # Fill what is left, so that the next temp file cannot be written.
        filler = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(filler, b"\0" * 512):
                pass
        except OSError:
            pass
        finally:
            os.close(filler)
        before = env.vault_bytes()
        for name in CRASHED_OPERATIONS:
            argv, stdin, _ = operation(vault, name, 1)
            full = subprocess.run(argv, input=stdin, env=env.vars, capture_output=True, text=True)
            assert full.returncode == 1, (name, full)
            assert env.vault in full.stderr and "unchanged" in full.stderr, (name, full.stderr)
            assert env.vault_bytes() == before and temp_files(env) == [], name
        assert vault.state()[1]["default"] == GOOD_KEY
        record("failing write: full file system (64 KiB tmpfs)", operations=len(CRASHED_OPERATIONS), vault_unchanged=len(CRASHED_OPERATIONS))
    finally:
        subprocess.run(["umount", "-l", folder], capture_output=True)


# -- concurrency ---------------------------------------------------------------------------------

def test_twenty_writers_at_once_for_three_rounds_with_readers_lose_nothing(env):
    vault = Vault(env)
    env.vars["GEMVAULT_LOCK_TIMEOUT"] = "300"
    stop = threading.Event()
    reads = {"ok": 0, "damaged": 0, "other": []}

    def reader_loop():
        while not stop.is_set():
            result = subprocess.run(vault.command("key", "list", "--json"), env=env.vars, capture_output=True, text=True)
            if result.returncode == 0:
                reads["ok"] += 1
            elif result.returncode == 4:
                reads["damaged"] += 1
            else:
                reads["other"].append(result.stderr)

    readers = [threading.Thread(target=reader_loop) for _ in range(2)]
    for thread in readers:
        thread.start()
    written = {}
    rounds, writers = 3, count(20, 20)
    try:
        for round_ in range(rounds):
            processes = []
            for i in range(writers):
                name, value = "w%d-%d" % (round_, i), api_key("W%d" % i)
                written[name] = value
                process = subprocess.Popen(vault.command("key", "set", name), env=env.vars, stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                process.stdin.write(value.encode())
                process.stdin.close()
                processes.append(process)
            for process in processes:
                assert process.wait(timeout=600) == 0, process.stderr.read()
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    _, keys, _ = vault.state()
    assert {name: keys.get(name) for name in written} == written
    assert reads["damaged"] == 0 and reads["other"] == [] and reads["ok"] > 0, reads
    record("concurrency: %d writers x %d rounds, 2 readers" % (writers, rounds), keys_written=len(written),
           keys_lost=0, reads=reads["ok"], damaged_reads=0)


def test_agent_writers_and_direct_writers_at_once_lose_nothing(unlocked):
    env = unlocked
    vault = Vault(env)
    env.vars["GEMVAULT_LOCK_TIMEOUT"] = "300"
    assert subprocess.run([BIN, "unlock", "--passphrase-file", vault.passfile], env=env.vars, capture_output=True).returncode == 0
    per_writer = count(5, 25)
    written, processes = {}, []
    for writer, direct in (("a", False), ("b", False), ("c", True), ("d", True)):
        lines = []
        for i in range(per_writer):
            name, value = "%s%d" % (writer, i), api_key("M%s%d" % (writer, i))
            written[name] = value
            lines.append("printf %%s %s | \"$0\" %skey set %s%s || exit 1" % (
                value, "--no-session " if direct else "", name, " --passphrase-file \"$1\"" if direct else ""))
        processes.append(subprocess.Popen(["sh", "-c", "\n".join(lines), BIN, vault.passfile], env=env.vars,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    _, keys, _ = vault.state()
    assert {name: keys.get(name) for name in written} == written
    through_agent = json.loads(subprocess.run([BIN, "key", "list", "--json"], env=env.vars, capture_output=True, text=True).stdout)["keys"]
    assert set(written) <= {k["name"] for k in through_agent}
    record("concurrency: 2 agent writers and 2 direct writers", keys_written=len(written), keys_lost=0)


# -- tampering -----------------------------------------------------------------------------------

# Peak RSS of one gemvault run stays far below this, whatever the file says (the interactive
# preset's Argon2 takes 64 MiB); a parser that trusted a length would not.
MEMORY_BOUND_KIB = 400 * 1024
TIME_BOUND_S = 15


def with_checksum(body):
    import hashlib
    return body + hashlib.blake2b(body, digest_size=32).digest()


class Tamperer:
    def __init__(self, env):
        self.env = env
        env.init()
        assert env.run("key", "set", input=GOOD_KEY).code == 0
        self.original = env.vault_bytes()
        self.outcomes = {}

    def attempt(self, label, data, expected_codes, command=("key", "get")):
        with open(self.env.vault, "wb") as handle:
            handle.write(data)
        code, out, err, seconds, peak = measured([BIN, *command, "--passphrase-file", self.env.passfile], self.env.vars)
        assert code in expected_codes, (label, code, err)
        assert "Fatal error" not in err and "Segmentation" not in err and GOOD_KEY not in err + out, (label, err)
        assert seconds < TIME_BOUND_S and peak < MEMORY_BOUND_KIB, (label, seconds, peak)
        self.outcomes[code] = self.outcomes.get(code, 0) + 1

    def restore(self):
        with open(self.env.vault, "wb") as handle:
            handle.write(self.original)


def test_every_byte_flipped_and_every_truncation_is_reported_with_bounded_work(env):
    tamper = Tamperer(env)
    step = count(23, 1)
    flips = list(range(0, len(tamper.original), step))
    for index in flips:
        damaged = bytearray(tamper.original)
        damaged[index] ^= 0xFF
        tamper.attempt(("flip", index), bytes(damaged), {4})
    cuts = list(range(0, len(tamper.original), step))
    for length in cuts:
        tamper.attempt(("truncate", length), tamper.original[:length], {4})
    for extra in (1, 4096, 1 << 20, 64 << 20):
        tamper.attempt(("append", extra), tamper.original + secrets.token_bytes(min(extra, 1 << 20)) * max(1, extra >> 20), {4})
    tamper.restore()
    assert env.run("key", "get").out == GOOD_KEY + "\n"
    record("tampering: vault bytes", flipped=len(flips), truncated=len(cuts), appended=4, exit_4=sum(tamper.outcomes.values()), crashes=0)


def slots_layout(data):
    vault = reader.parse(data)
    first = vault["slots"][0]["offset"]
    end = vault["slots"][-1]["offset"] + len(vault["slots"][-1]["raw"])
    return vault, first, end


def test_slots_swapped_duplicated_or_copied_from_another_vault_open_nothing(env, tmp_path):
    tamper = Tamperer(env)
    body = tamper.original[:-32]
    vault, first, end = slots_layout(tamper.original)
    passphrase_slot, recovery_slot = (s["raw"] for s in vault["slots"])
    count_at = first - 1  # the slot count byte sits just before the slots
    cases = {
        "swapped": body[:first] + recovery_slot + passphrase_slot + body[end:],
        "passphrase slot twice": body[:first] + passphrase_slot + passphrase_slot + body[end:],
        "recovery slot twice": body[:first] + recovery_slot + recovery_slot + body[end:],
    }
    # The same passphrase, another vault: its slot unwraps that vault's data key, not this one's.
    other = type(env)(tmp_path / "other")
    other.init()
    other_vault, _, _ = slots_layout(other.vault_bytes())
    cases["passphrase slot of another vault"] = body[:first] + other_vault["slots"][0]["raw"] + recovery_slot + body[end:]
    cases["recovery slot of another vault"] = body[:first] + passphrase_slot + other_vault["slots"][1]["raw"] + body[end:]
    cases["one slot only"] = body[:count_at] + bytes([1]) + passphrase_slot + body[end:]
    for label, changed in cases.items():
        # Wrong lengths shift the payload: recompute the checksum so the reader gets past it.
        tamper.attempt(label, with_checksum(changed), {3, 4})
    for label in ("passphrase slot of another vault",):
        with open(env.vault, "wb") as handle:
            handle.write(with_checksum(cases[label]))
        result = env.run("key", "get")
        assert result.code == 4 and "authentication" in result.err, result
    tamper.restore()
    record("tampering: slots", cases=len(cases), opened=0, crashes=0)


@pytest.mark.real_kdf
def test_kdf_parameters_out_of_bounds_and_a_huge_declared_length_are_refused_before_any_work(env):
    tamper = Tamperer(env)
    body = tamper.original[:-32]
    vault = reader.parse(tamper.original)
    slot = vault["slots"][0]
    cases = {}
    for label, ops, mem in (("ops above the ceiling", 5, slot["mem"]), ("memory above the ceiling", slot["ops"], (1 << 30) + 1024),
                            ("ops below the floor", 1, slot["mem"]), ("memory below the floor", slot["ops"], 8 << 20),
                            ("memory of 2^63", slot["ops"], 1 << 63)):
        patched = bytearray(body)
        struct.pack_into("<BBIQ", patched, slot["offset"], slot["kind"], 2, ops, mem)
        cases[label] = bytes(patched)
    length_at = len(vault["header"]) - 4
    for label, value in (("declared length 2^32-1", 0xFFFFFFFF), ("declared length 0", 0)):
        patched = bytearray(body)
        struct.pack_into("<I", patched, length_at, value)
        cases[label] = bytes(patched)
    for label, changed in cases.items():
        tamper.attempt(label, with_checksum(changed), {4})
    tamper.restore()
    record("tampering: KDF bounds and declared lengths", cases=len(cases), exit_4=len(cases), crashes=0)


def test_a_fifo_a_folder_and_devices_given_as_the_vault_are_refused_at_once(env):
    env.init()
    fifo = os.path.join(env.root, "fifo")
    os.mkfifo(fifo, 0o600)
    folder = os.path.join(env.root, "folder")
    os.mkdir(folder, 0o700)
    for path in (fifo, folder, "/dev/zero", "/dev/null"):
        code, out, err, seconds, peak = measured([BIN, "key", "get", "--vault", path, "--passphrase-file", env.passfile], env.vars, timeout=20)
        assert code == 1 and "not a regular file" in err, (path, code, err)
        assert seconds < 5 and peak < MEMORY_BOUND_KIB, (path, seconds, peak)
    record("tampering: FIFO, folder, /dev/zero, /dev/null as the vault", cases=4, refused=4, hangs=0)


def chat_files(env):
    return set(glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*", "*.chat")))


@pytest.mark.slow
def test_damaged_history_files_are_reported_and_hide_nothing_else(api):
    env = api
    env.init()
    # Through a session, each attempt costs no key derivation, so every byte can be tried.
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    assert env.run("unlock").code == 0
    env.run("ask", "--model", "echo", "kept conversation", passphrase=False)
    before = chat_files(env)
    env.run("chat", "--model", "echo", input="one\ntwo\nthree\n", passphrase=False)
    [path] = chat_files(env) - before
    original = read(path)
    conversation = os.path.basename(path)[:-len(".chat")]
    outcomes = {}
    step = count(7, 1)
    cases = [("flip", i) for i in range(0, len(original), step)] + [("truncate", n) for n in range(0, len(original), step)] + \
            [("append", n) for n in (1, 5, 4096)]
    for kind, n in cases:
        if kind == "flip":
            data = bytearray(original)
            data[n] ^= 0xFF
        elif kind == "truncate":
            data = original[:n]
        else:
            data = original + secrets.token_bytes(n)
        with open(path, "wb") as handle:
            handle.write(bytes(data))
        code, out, err, seconds, peak = measured([BIN, "history", "show", conversation, "--raw", "--passphrase-file", env.passfile], env.vars)
        # 0: a torn tail is dropped; 4: damaged; 1: the header names another conversation key.
        assert code in (0, 1, 4), (kind, n, code, err)
        assert code != 1 or "sealed for another conversation key" in err, (kind, n, err)
        assert "Fatal error" not in err and seconds < TIME_BOUND_S and peak < MEMORY_BOUND_KIB, (kind, n, err, seconds, peak)
        outcomes[code] = outcomes.get(code, 0) + 1
        if n % 5 == 0:
            listed = env.run("history", "list", "--json")
            assert listed.code == 0 and "kept conversation" in listed.out, (kind, n, listed)
    with open(path, "wb") as handle:
        handle.write(original)
    assert "three" in env.run("history", "show", conversation, "--raw").out
    env.run("lock", passphrase=False)
    record("tampering: history files", cases=len(cases), shown=outcomes.get(0, 0), damaged=outcomes.get(4, 0),
           other_key=outcomes.get(1, 0), crashes=0)


# -- leaks ---------------------------------------------------------------------------------------

def process_texts(pid):
    texts = {}
    for part in ("cmdline", "environ"):
        try:
            texts[part] = read("/proc/%s/%s" % (pid, part))
        except OSError:
            pass
    return texts


def still_gemvault(pid):
    try:
        return os.path.realpath("/proc/%s/exe" % pid) == os.path.realpath(BIN)
    except OSError:
        return False


def gemvault_processes():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.realpath("/proc/%s/exe" % pid) == os.path.realpath(BIN):
                found.append(pid)
        except OSError:
            pass
    return found


def test_a_whole_session_leaves_the_key_and_passphrase_nowhere(api, tmp_path):
    env = api
    key, new_key = api_key("Leak"), api_key("Leak2")
    passphrase = "leak-test " + secrets.token_hex(12)
    env.write_private(env.passfile, passphrase + "\n")
    env.vars.pop("GEMINI_API_KEY")
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    needles = [key.encode(), new_key.encode(), passphrase.encode()]
    seen = {"argv": [], "environ": [], "samples": 0}
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            for pid in gemvault_processes():
                texts = process_texts(pid)
                # Still gemvault after the read: a child of `exec` listed just before its execve
                # would otherwise show the command's own environment, which rightly holds the key.
                if not still_gemvault(pid):
                    continue
                for part, text in texts.items():
                    if any(n in text for n in needles):
                        seen["argv" if part == "cmdline" else "environ"].append(pid)
            seen["samples"] += 1
            time.sleep(0.01)

    thread = threading.Thread(target=sampler)
    thread.start()
    errors = []
    try:
        # (arguments, standard input, whether the passphrase file is given)
        steps = [
            (("init", "--kdf", "interactive"), None, True),
            (("key", "set"), key, True),
            (("unlock",), None, True),
            (("chat", "--model", "echo"), "first turn\nsecond turn\nthird turn\n", False),
            (("ask", "--model", "echo", "one more"), None, False),
            (("key", "rotate", "--no-verify"), new_key, False),
            (("exec", "--", "sh", "-c", 'test -n "$GEMINI_API_KEY" && sleep 0.3'), None, False),
            (("key", "get"), None, False),
            (("lock",), None, False),
        ]
        for args, stdin, passphrase_given in steps:
            result = env.run(*args, input=stdin, passphrase=passphrase_given)
            assert result.code == 0, (args, result)
            errors.append(result.err)
            if args == ("key", "get"):
                assert result.out == new_key + "\n"
            else:
                assert all(n.decode() not in result.out for n in needles), (args, result.out)
    finally:
        stop.set()
        thread.join()
    assert seen["argv"] == [] and seen["environ"] == [] and seen["samples"] > 10, seen
    assert not any(n.decode() in text for n in needles for text in errors)
    # No file holds either one in plain text: HOME (with the state and data folders), the
    # runtime folder and /tmp. The passphrase file is the user's own input.
    searched = 0
    for top in (env.home, runtime, tempfile.gettempdir()):
        for folder, _, names in os.walk(top):
            for name in names:
                path = os.path.join(folder, name)
                if path == env.passfile or not os.path.isfile(path) or os.path.islink(path):
                    continue
                try:
                    if os.path.getsize(path) > 64 << 20:
                        continue
                    data = read(path)
                except OSError:
                    continue
                searched += 1
                assert not any(n in data for n in needles), path
    # The fake server saw the key only in its header: no URL, body or other header.
    for request in env.server.requests():
        headers = dict(request["headers"])
        carried = headers.pop("x-goog-api-key", None)
        assert carried in (None, key, new_key)
        flattened = request["path"] + request["body"] + json.dumps(headers)
        assert not any(n.decode() in flattened for n in needles), request["path"]
    record("leaks: a whole session", samples_of_proc=seen["samples"], files_searched=searched,
           requests_checked=len(env.server.requests()), found=0)


# -- other users ---------------------------------------------------------------------------------

def as_peer_python(code, *args):
    return subprocess.run(["runuser", "-u", USER, "--", "python3", "-c", code, *args], capture_output=True, text=True, timeout=60)


ATTEMPT_READS = """
import json, sys
outcomes = {}
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        outcomes[path] = "read"
    except OSError as error:
        outcomes[path] = type(error).__name__
print(json.dumps(outcomes))
"""


@pytest.fixture
def victim(peer):  # noqa: F811
    """Root's vault, history, config and agent, in a home another user can pass through."""
    account, _, shared = peer
    base = tempfile.mkdtemp(prefix="victim-", dir=shared)
    os.chmod(base, 0o711)
    env = Env(base)
    os.chmod(env.home, 0o711)
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    env.runtime = runtime
    yield account, env, shared
    subprocess.run([BIN, "lock"], env=env.vars, capture_output=True, timeout=30)
    shutil.rmtree(base, ignore_errors=True)


def test_another_user_can_read_nothing_and_reach_no_agent(victim, fake_server):
    account, env, _ = victim
    env.vars["GEMVAULT_ENDPOINT"] = fake_server.url
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    assert env.run("config", "set", "model", "echo").code == 0
    env.write_private(os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault", "config.json"), '{"version": 1, "timeout": 30}\n')
    assert env.run("ask", "hello there").code == 0
    assert env.run("unlock").code == 0
    pid = agent_pid(env)
    targets = [env.vault, env.vault + ".bak", env.vault + ".lock",
               os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault", "config.json")]
    targets += glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "**", "*"), recursive=True)
    targets += glob.glob(os.path.join(env.runtime, "gemvault", "*"))
    targets += ["/proc/%d/environ" % pid, "/proc/%d/mem" % pid, "/proc/%d/cmdline" % pid]
    files = [t for t in targets if t.startswith("/proc/") or os.path.isfile(t) or stat.S_ISSOCK(os.lstat(t).st_mode)]
    attempt = as_peer_python(ATTEMPT_READS, *files)
    outcomes = json.loads(attempt.stdout)
    # cmdline is public by design and holds no secret; everything else is refused by the kernel
    # (not merely missing, which would mean the test looked in the wrong place).
    assert set(outcomes) == set(files), outcomes
    assert {p: o for p, o in outcomes.items() if o != "PermissionError" and not p.endswith("/cmdline")} == {}, outcomes
    assert GOOD_KEY.encode() not in read("/proc/%d/cmdline" % pid)
    socket_path = glob.glob(os.path.join(env.runtime, "gemvault", "*.sock"))[0]
    connect = as_peer_python("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1]); print('connected')\n"
                             "except OSError as e:\n    print(type(e).__name__)", socket_path)
    assert connect.stdout.strip() == "PermissionError", connect
    record("other users: reading the vault, history, config, agent socket and /proc of the agent", files=len(files),
           read=0, connected=0)


def test_another_user_cannot_redirect_a_write_through_a_shared_folder(victim):
    account, env, shared = victim
    sticky = tempfile.mkdtemp(prefix="sticky-", dir=shared)
    os.chmod(sticky, 0o1777)
    target = os.path.join(env.root, "precious")
    env.write_private(target, "the user's own file\n")
    planted = []
    # The attacker plants links, in a folder everyone may write to, where the user will write.
    plant = "import os, sys\nfor name in sys.argv[2:]:\n    os.symlink(sys.argv[1], os.path.join(os.path.dirname(name), os.path.basename(name)))"
    names = [os.path.join(sticky, n) for n in ("vault", "vault.lock", "vault.bak", "key")]
    assert as_peer_python(plant, target, *names).returncode == 0
    planted += names
    attempts = [
        ("init", "--kdf", "interactive", "--vault", names[0]),
        ("key", "get", "--key-file", names[3]),
        ("key", "list", "--vault", names[0]),
    ]
    refused = 0
    for args in attempts:
        result = env.run(*args)
        assert result.code != 0, (args, result)
        refused += 1
    assert read(target) == b"the user's own file\n"
    for name in names:
        assert os.path.islink(name) and os.lstat(name).st_uid == account.pw_uid
    record("other users: links planted in a shared folder to redirect a write", planted=len(planted), attempts=len(attempts),
           refused=refused, written_through=0)
