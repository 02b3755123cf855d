"""Shared fixtures for the end-to-end tests: they run the built gemvault binary as a user would."""
import json
import os
import random
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
PASSPHRASE = "correct horse battery staple"
# An auth key as AI Studio makes them since 2026 (53 characters); the fake accepts it. Tests
# make other keys by replacing its "D3".
GOOD_KEY = "AQ.Ab8RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
assert len(GOOD_KEY) == 53
# A standard key: the fake answers it as Google does since September 2026.
STANDARD_KEY = "AIzaSyD3mo-Key_0123456789abcdefghijklmn"
assert len(STANDARD_KEY) == 39


def auth_key(tag):
    """A distinct well-formed auth key of 53 characters."""
    body = (tag + "x" * 50)[:50]
    return "AQ." + body


def binary_path():
    path = os.environ.get("GEMVAULT_BIN")
    if path:
        return path
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True)
    return os.path.join(out.stdout.strip(), "gemvault")


BIN = binary_path()
_peer_bin = []


def peer_binary():
    """The binary as another account can run it: BIN itself when every folder above it lets
    others through, else a copy in a folder they can reach (a checkout under root's 0700 home)."""
    if not _peer_bin:
        folder = os.path.dirname(os.path.realpath(BIN))
        reachable = True
        while folder != "/":
            reachable = reachable and bool(os.stat(folder).st_mode & 0o001)
            folder = os.path.dirname(folder)
        if reachable and os.stat(BIN).st_mode & 0o005 == 0o005:
            _peer_bin.append(BIN)
        else:
            import atexit
            import shutil
            import tempfile
            shared = tempfile.mkdtemp(prefix="gemvault-bin-")
            atexit.register(shutil.rmtree, shared, True)
            os.chmod(shared, 0o755)
            copy = os.path.join(shared, "gemvault")
            shutil.copy2(BIN, copy)
            os.chmod(copy, 0o755)
            _peer_bin.append(copy)
    return _peer_bin[0]


def pytest_configure(config):
    config.addinivalue_line("markers", "real_kdf: runs with libsodium's Argon2 presets, not the suite's cheap floor")
    config.addinivalue_line("markers", "slow: takes many seconds (a rotation killed at each step, the bench suite); scheduled first")
    """Keep test homes out of world-writable folders such as /tmp: doctor rightly reports a
    vault below one, and a clean setup must be clean. Tests of that finding make their own."""
    if config.option.basetemp:
        return
    def world_writable_above(path):
        while path not in ("/", ""):
            path = os.path.dirname(path)
            if os.path.isdir(path) and os.stat(path).st_mode & 0o002:
                return True
        return False
    import tempfile
    default = os.path.join(tempfile.gettempdir(), "x")
    if world_writable_above(default):
        # pytest's numbered folders under this root (not a fixed --basetemp, which each run
        # empties): runs side by side, from one checkout or several, keep their own.
        base = os.path.join(os.path.expanduser("~"), ".cache", "gemvault-e2e")
        if not world_writable_above(base + "/x"):
            os.makedirs(base, mode=0o700, exist_ok=True)
            os.environ["PYTEST_DEBUG_TEMPROOT"] = base


def account_name(base):
    """An OS account name of this test process's own: workers side by side never share one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return base + "-" + worker if worker else base


_made_accounts = []


def ensure_account(name, *useradd_options):
    """The account `name`, made (and removed when the run ends) if it does not exist."""
    import pwd
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd"] + list(useradd_options) + [name], check=True)
        _made_accounts.append(name)
        return pwd.getpwnam(name)


def pytest_sessionfinish(session, exitstatus):
    for name in _made_accounts:
        subprocess.run(["userdel", name], capture_output=True)


SEED = int(os.environ.setdefault("GEMVAULT_TEST_SEED", str(random.SystemRandom().randrange(1 << 32))))


def pytest_collection_modifyitems(config, items):
    """Tests marked slow start first, so that side by side they do not end the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_report_header(config):
    return "random moments seeded with GEMVAULT_TEST_SEED=%d (set it to replay a run)" % SEED


@pytest.fixture(autouse=True)
def _seeded_random(request):
    """Every random choice in a test (kill moments, keys) follows the run's printed seed."""
    random.seed("%d:%s" % (SEED, request.node.nodeid))


def wait_until(condition, what, limit=30, interval=0.02):
    """Polls `condition` until it returns something true, and returns that; fails the test
    only when `limit` seconds pass first. For the moments a test must wait for (a file, a
    socket, a process state), instead of a fixed sleep."""
    import time
    deadline = time.monotonic() + limit
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, "waited %d s for %s" % (limit, what)
        time.sleep(interval)


def read_until(stream, text, limit=30):
    """Reads a child's output pipe until `text` has appeared, and returns what was read; fails
    the test if the child ends first or `limit` seconds pass. The pipe reads as before after."""
    import select
    import time
    deadline = time.monotonic() + limit
    seen = b""
    while text not in seen:
        left = deadline - time.monotonic()
        assert left > 0, "waited %d s for %r; read %r" % (limit, text, seen[-500:])
        if select.select([stream], [], [], min(left, 0.5))[0]:
            chunk = os.read(stream.fileno(), 65536)
            assert chunk, "the output ended before %r; read %r" % (text, seen[-500:])
            seen += chunk
    return seen


class Result:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return "Result(code=%r, out=%r, err=%r)" % (self.code, self.out, self.err)


class Env:
    """An isolated user: its own HOME and XDG folders, and helpers to run gemvault."""

    def __init__(self, tmp_path, real_kdf=False):
        self.root = str(tmp_path)
        self.home = os.path.join(self.root, "home")
        os.makedirs(self.home, mode=0o700)
        self.vars = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "XDG_DATA_HOME": os.path.join(self.home, ".local/share"),
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local/state"),
            "LANG": "C.UTF-8",
            "SWIFT_BACKTRACE": "enable=no",
        }
        if not real_kdf:
            # A debug build then makes each Argon2 preset cost a few KiB (a release build ignores
            # it); tests of the real costs are marked real_kdf.
            self.vars["GEMVAULT_TEST_KDF_FLOOR"] = "1"
        # A runtime folder of its own, so tests side by side never meet in /tmp/gemvault-UID.
        self.vars["XDG_RUNTIME_DIR"] = os.path.join(self.root, "runtime")
        os.mkdir(self.vars["XDG_RUNTIME_DIR"], 0o700)
        self.vault = os.path.join(self.vars["XDG_DATA_HOME"], "gemvault/vault")
        self.passfile = os.path.join(self.root, "pass")
        self.write_private(self.passfile, PASSPHRASE + "\n")

    def advance_clock(self, seconds=1):
        """Moves this user's wall clock on by `seconds` for the gemvault runs from now on (a debug
        build adds GEMVAULT_TEST_CLOCK_OFFSET to the time): key ids carry the second, so a test
        moves time on between two rotations instead of sleeping through a second."""
        offset = int(self.vars.get("GEMVAULT_TEST_CLOCK_OFFSET", "0")) + seconds
        self.vars["GEMVAULT_TEST_CLOCK_OFFSET"] = str(offset)

    def write_private(self, path, text, mode=0o600):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        os.chmod(path, mode)

    def run(self, *args, input=None, env=None, pass_fds=(), timeout=60, passphrase=True):
        full_env = dict(self.vars)
        if env:
            full_env.update(env)
        argv = [BIN] + list(args)
        if passphrase and "--passphrase-file" not in args and "--passphrase-fd" not in args:
            argv += ["--passphrase-file", self.passfile]
        proc = subprocess.run(argv, input=input, env=full_env, capture_output=True, text=True,
                              pass_fds=pass_fds, timeout=timeout, start_new_session=True)
        return Result(proc)

    def init(self, kdf="interactive"):
        result = self.run("init", "--kdf", kdf, "--json")
        assert result.code == 0, result
        return json.loads(result.out)["recovery_code"]

    def vault_bytes(self):
        with open(self.vault, "rb") as handle:
            return handle.read()


def short_root():
    """Where each test's own folder goes: a short path under the home, so that the sockets under
    it (the session agent's, an ssh-agent's, a listener's) stay within sun_path's 107 bytes
    whatever the home's length (pytest's own folders do not, under xdist), and not below a
    folder others can write to (doctor would rightly say so), and in the account's own home as
    the password database names it, which is where gemvault offers a chmod to root. Tests that a
    second account must reach make their own folder outside the home."""
    import pwd
    base = os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, ".cache", "gv")
    os.makedirs(base, mode=0o700, exist_ok=True)
    return base


@pytest.fixture
def tmp_path():
    """pytest's tmp_path, in a short folder of its own (short_root), removed afterwards
    (GEMVAULT_TEST_KEEP=1 keeps it)."""
    import pathlib
    import shutil
    import tempfile
    folder = tempfile.mkdtemp(prefix="t-", dir=short_root())
    yield pathlib.Path(folder)
    if not os.environ.get("GEMVAULT_TEST_KEEP"):
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def env(tmp_path, request):
    return Env(tmp_path, real_kdf=request.node.get_closest_marker("real_kdf") is not None)


class FakeGemini:
    """The fake Gemini server, on 127.0.0.1 and a free port, with its request log."""

    def __init__(self, tmp_dir, *options):
        self.log = os.path.join(tmp_dir, "requests.log")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_gemini.py"), "--log", self.log] + list(options),
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return [json.loads(line) for line in handle]

    def sent(self):
        """When each streamed piece went out: [{"model", "time", "text"}], for the scenarios that note it."""
        if not os.path.exists(self.log + ".sent"):
            return []
        with open(self.log + ".sent") as handle:
            return [json.loads(line) for line in handle]

    def clear(self):
        for path in (self.log, self.log + ".sent"):
            if os.path.exists(path):
                os.remove(path)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def fake_server(tmp_path_factory):
    server = FakeGemini(str(tmp_path_factory.mktemp("fake")))
    yield server
    server.stop()


@pytest.fixture
def api(env, fake_server):
    """An environment whose key comes from GEMINI_API_KEY and whose endpoint is the fake server."""
    fake_server.clear()
    env.vars["GEMVAULT_ENDPOINT"] = fake_server.url
    env.vars["GEMINI_API_KEY"] = GOOD_KEY
    env.server = fake_server
    yield env
    # Google answers 401 to a request with two credentials: none may carry an Authorization header.
    assert not [r["path"] for r in fake_server.requests() if any(name.lower() == "authorization" for name in r["headers"])]
