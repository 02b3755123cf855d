"""The fast paths of issue 12, checked for behaviour (never for time; bench/run measures time):
each passphrase is derived once, history list keeps an encrypted index and stays right when
conversations change, and the benchmark suite itself runs."""
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import BIN

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INTERACTIVE_MEMORY = 64 << 20  # libsodium maps exactly the preset's memory for each Argon2 run


def argon2_runs(env, *args, input=None):
    """Runs gemvault under strace and counts Argon2 runs by their working-memory mappings."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed, so Argon2 runs cannot be counted")
    trace = os.path.join(env.root, "trace.txt")
    argv = ["strace", "-f", "-e", "trace=mmap", "-o", trace, BIN] + list(args)
    proc = subprocess.run(argv, input=input, env=env.vars, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as handle:
        return sum(1 for line in handle if re.search(r"mmap\(NULL, %d," % INTERACTIVE_MEMORY, line))


@pytest.mark.real_kdf
def test_passwd_derives_each_passphrase_once(env):
    env.init()
    new = os.path.join(env.root, "new-pass")
    env.write_private(new, "a new passphrase for this vault\n")
    assert argon2_runs(env, "passwd", "--passphrase-file", env.passfile, "--new-passphrase-file", new) == 2
    # The new passphrase opens the vault, the old one does not.
    assert env.run("key", "list", "--passphrase-file", new, passphrase=False).code == 0
    assert env.run("key", "list").code != 0


@pytest.mark.real_kdf
def test_recover_derives_the_code_and_the_new_passphrase_once_each(env):
    code = env.init()
    new = os.path.join(env.root, "new-pass")
    env.write_private(new, "a recovered passphrase for this vault\n")
    assert argon2_runs(env, "recover", "--new-passphrase-file", new, input=code + "\n") == 2
    assert env.run("key", "list", "--passphrase-file", new, passphrase=False).code == 0


# -- history list and its index ----------------------------------------------------------------

def history_folder(env):
    found = glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*", "recipient"))
    assert found, "no history folder"
    return os.path.dirname(found[0])


def listed(env):
    result = env.run("history", "list", "--json")
    assert result.code == 0, result
    return {c["id"]: c for c in json.loads(result.out)["conversations"]}


def test_history_list_keeps_an_encrypted_index_that_follows_every_change(api):
    env = api
    env.init()
    secret_title = "a private title %d" % os.getpid()
    for text in (secret_title, "second conversation"):
        assert env.run("chat", "--model", "echo", input=text + "\n", passphrase=False).code == 0
    first = listed(env)
    assert sorted(c["turns"] for c in first.values()) == [1, 1]
    index = os.path.join(history_folder(env), "index")
    with open(index, "rb") as handle:
        data = handle.read()
    assert data.startswith(b"GVHI") and secret_title.encode() not in data and b"second conversation" not in data
    assert oct(os.stat(index).st_mode & 0o777) == "0o600"

    # A turn appended after the index was written is seen.
    target = next(i for i, c in first.items() if c["title"] == secret_title)
    assert env.run("chat", "--model", "echo", "--resume", target, input="one more\n").code == 0
    assert listed(env)[target]["turns"] == 2

    # A damaged index is rebuilt, never trusted, never fatal.
    with open(index, "r+b") as handle:
        handle.seek(40)
        handle.write(b"\xff\xff\xff\xff")
    again = listed(env)
    assert {i: c["turns"] for i, c in again.items()} == {i: (2 if i == target else 1) for i in first}

    # Deleting a conversation deletes the index that named it.
    assert env.run("history", "rm", target).code == 0
    assert not os.path.exists(index)
    assert list(listed(env)) == [i for i in first if i != target]


def test_history_index_sealed_under_another_key_is_ignored(api):
    env = api
    env.init()
    assert env.run("chat", "--model", "echo", input="hello\n", passphrase=False).code == 0
    listed(env)
    folder = history_folder(env)
    with open(os.path.join(folder, "index"), "rb") as handle:
        original = handle.read()
    # A well-formed index from another vault: it does not open, so the files are read.
    with open(os.path.join(folder, "index"), "wb") as handle:
        handle.write(b"GVHI" + os.urandom(len(original) - 4))
    assert [c["turns"] for c in listed(env).values()] == [1]


# -- the benchmark suite -----------------------------------------------------------------------

@pytest.mark.slow
def test_bench_suite_runs_in_its_quick_mode(tmp_path):
    """Only that it runs and prints its summary; its figures are not checked here."""
    # bench/run's python3 is this one, whose environment has PyNaCl (the history section needs it).
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    proc = subprocess.run([os.path.join(ROOT, "bench", "run"), "--binary", BIN, "--quick", "--no-sdk"],
                          env=dict(os.environ, PATH=path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for section in ("## 1. Start-up", "## 2. Lookup", "## 3. Unlock", "## 4. Chat latency", "## 5. Memory",
                    "## 6a. Growth of a vault", "## 6b. Growth of a conversation", "## 6c. history list", "## 7. Live render",
                    "## 7b. Live render", "## 9. Sharing to post-quantum", "## Summary"):
        assert section in proc.stdout
    assert proc.stdout.count("\n| ") >= 15


def load_bench_suite():
    spec = importlib.util.spec_from_file_location("bench_suite", os.path.join(ROOT, "bench", "suite.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resident_mib():
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:")) / 1024


def test_bench_memory_figures_are_the_measured_programs_own_not_pythons(tmp_path):
    """Linux keeps a process's high-water mark across exec, so a child forked from Python reads as
    Python's size. bench/peak_rss.c, the launcher the memory section measures through, must
    report a tiny program's own small peak while this Python holds 128 MiB."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc), which bench/run needs to build the launcher")
    launcher = str(tmp_path / "peak_rss")
    subprocess.run(["cc", "-O2", "-o", launcher, os.path.join(ROOT, "bench", "peak_rss.c")], check=True)
    suite = load_bench_suite()
    ballast = b"\x01" * (128 << 20)  # written, so resident
    assert resident_mib() >= 128
    echo = [shutil.which("echo"), "a tiny program"]
    _, _, peak = suite.streamed(echo, {"PATH": os.environ["PATH"]}, launcher)
    assert 0 < peak < 16, "echo read as %.1f MiB; this Python holds %.1f MiB" % (peak, resident_mib())
    # Through a pty as well (the 50-turn chat row): the launcher passes the terminal through.
    from ptyrun import PtySession
    peak_file = tmp_path / "chat.kib"
    session = PtySession([launcher, str(peak_file), echo[0], "through a pty"], {"PATH": os.environ["PATH"]})
    try:
        session.expect("through a pty")
        assert session.wait() == 0
    finally:
        session.close()
    assert 0 < suite.launcher_peak(str(peak_file)) < 16
    del ballast


# -- unlock starts the agent while Argon2 runs ---------------------------------------------------

def agent_pids(runtime):
    """Processes running `gemvault agent` whose environment names this runtime folder."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                argv = handle.read().split(b"\0")
            with open("/proc/%s/environ" % entry, "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == b"agent" and b"XDG_RUNTIME_DIR=" + runtime.encode() in environ:
            pids.append(int(entry))
    return pids


@pytest.fixture
def runtime_env(env):
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    env.init()
    yield env, runtime
    env.run("lock", passphrase=False)


def test_unlock_with_a_wrong_passphrase_leaves_no_agent_behind(runtime_env):
    env, runtime = runtime_env
    wrong = os.path.join(env.root, "wrong")
    env.write_private(wrong, "not the passphrase at all\n")
    result = env.run("unlock", "--passphrase-file", wrong, passphrase=False)
    assert result.code != 0 and "passphrase" in result.err
    deadline = time.time() + 5
    while time.time() < deadline and agent_pids(runtime):
        time.sleep(0.05)
    assert agent_pids(runtime) == []
    assert json.loads(env.run("status", "--json", passphrase=False).out)["unlocked"] is False


def test_unlock_starts_one_agent_that_serves_at_once(runtime_env):
    env, runtime = runtime_env
    assert env.run("key", "set", "first", input="AIzaSyFirst-0123456789abcdefghijklmnopq").code == 0
    assert env.run("unlock").code == 0
    assert len(agent_pids(runtime)) == 1
    got = env.run("key", "get", "first", passphrase=False)
    assert got.code == 0 and got.out == "AIzaSyFirst-0123456789abcdefghijklmnopq\n"
