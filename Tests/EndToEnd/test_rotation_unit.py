"""The systemd units Docs/rotation.md and Docs/session.md give, taken from the docs as written:
`systemd-analyze verify` accepts them, and the rotation service's command line, run as the user
manager runs it (no terminal, the unit's environment, an absolute path), rotates an old key
through a session unlocked with the documented `unlock` line and the documented credential
(gcloud's application-default credentials file, which gemvault reads itself)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, ROOT
from test_rotation import ACCOUNT, OLD_KEY, OLD_NAME, PROJECT_ID, RESTRICTIONS, google  # noqa: F401 (fixture)

INSTALLED = "/usr/local/bin/gemvault"
UNIT_HEADER = re.compile(r"^# ~/\.config/systemd/user/(\S+)$")


def doc(name):
    with open(os.path.join(ROOT, "Docs", name)) as handle:
        return handle.read()


def code_blocks(text, language):
    return re.findall(r"```%s\n(.*?)```" % language, text, re.S)


def units(text):
    """Each `# ~/.config/systemd/user/NAME` in the doc's ini blocks starts a unit file."""
    found = {}
    for block in code_blocks(text, "ini"):
        name = None
        for line in block.splitlines():
            header = UNIT_HEADER.match(line)
            if header:
                name = header.group(1)
                found[name] = []
            elif name:
                found[name].append(line)
    return {name: "\n".join(lines).strip() + "\n" for name, lines in found.items()}


def directive(unit, key):
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(key + "=")]


def documented_units():
    found = units(doc("rotation.md"))
    found.update(units(doc("session.md")))
    assert set(found) >= {"gemvault-rotate.service", "gemvault-rotate.timer", "gemvault-agent.service"}, found.keys()
    for name, text in found.items():
        if name.endswith(".service"):
            assert [shlex.split(line)[0] for line in directive(text, "ExecStart")] == [INSTALLED], (name, text)
    return found


@pytest.fixture
def runtime(env):
    # Short, as a real /run/user/UID is: socket paths under it must fit in 108 bytes.
    folder = tempfile.mkdtemp(prefix="gv-run-")
    env.vars["XDG_RUNTIME_DIR"] = folder
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def verify(env, folder, names):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package); ./test installs it as root")
    result = subprocess.run(["systemd-analyze", "verify", "--user"] + [os.path.join(folder, n) for n in names],
                            env={"PATH": "/usr/bin:/bin", "HOME": env.home, "XDG_RUNTIME_DIR": env.vars["XDG_RUNTIME_DIR"]},
                            capture_output=True, text=True, timeout=60)
    # Warnings (an unknown key, a missing executable, a bad specifier) go to stderr, each naming
    # its unit; the machine's own user units (gpg-agent's sockets, say) may add lines of theirs.
    ours = [line for line in result.stderr.splitlines() if "gemvault-" in line]
    assert result.returncode == 0 and ours == [], result
    return result


def write_units(env, found, binary):
    folder = os.path.join(env.home, ".config", "systemd", "user")
    os.makedirs(folder, exist_ok=True)
    for name, text in found.items():
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(text.replace(INSTALLED, binary))
    return folder


def test_the_documented_units_pass_systemd_analyze_verify(env, runtime):
    found = documented_units()
    # As installed by ./install.sh as root (here: wherever the tested binary is).
    verify(env, write_units(env, found, BIN), sorted(found))
    # As installed per user: the %h spelling the doc gives resolves to the user's home.
    local_bin = os.path.join(env.home, ".local", "bin")
    os.makedirs(local_bin)
    os.symlink(BIN, os.path.join(local_bin, "gemvault"))
    verify(env, write_units(env, found, "%h/.local/bin/gemvault"), sorted(found))


def test_a_unit_that_names_a_missing_binary_fails_verification(env, runtime):
    """The check above can fail: verify does refuse an ExecStart that does not exist."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package); ./test installs it as root")
    folder = write_units(env, documented_units(), "%h/.local/bin/gemvault")
    result = subprocess.run(["systemd-analyze", "verify", "--user", os.path.join(folder, "gemvault-rotate.service")],
                            env={"PATH": "/usr/bin:/bin", "HOME": env.home, "XDG_RUNTIME_DIR": runtime},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "not executable" in result.stderr, result


def run_as_the_user_manager(env, unit, runtime):
    """ExecStart as systemd runs it: specifiers expanded, Environment= applied, no terminal,
    a PATH without the user's folders. The endpoints are the test's fakes."""
    [line] = directive(unit, "ExecStart")
    argv = shlex.split(line.replace("%h", env.home))
    assert argv[0] == INSTALLED
    argv[0] = BIN
    variables = {"HOME": env.home, "USER": "tester", "PATH": "/usr/local/bin:/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime, "LANG": "C.UTF-8",
                 "GEMVAULT_ENDPOINT": env.vars["GEMVAULT_ENDPOINT"], "GEMVAULT_APIKEYS_ENDPOINT": env.vars["GEMVAULT_APIKEYS_ENDPOINT"]}
    for assignment in directive(unit, "Environment"):
        key, value = assignment.split("=", 1)
        variables[key] = value.replace("%h", env.home)
    return subprocess.run(argv, env=variables, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, start_new_session=True)


def documented_unlock(env):
    [line] = [line for block in code_blocks(doc("rotation.md"), "sh") for line in block.splitlines() if line.startswith("gemvault unlock")]
    argv = shlex.split(line)
    assert argv[:2] == ["gemvault", "unlock"]
    return argv[1:]


@pytest.mark.real_kdf
def test_the_documented_timer_rotates_an_old_key_through_the_documented_session(env, google, runtime):
    service = documented_units()["gemvault-rotate.service"]
    env.init()
    assert env.run("key", "set", input=OLD_KEY + "\n").code == 0
    # Google made the key 100 days ago; the vault learnt it today.
    google.control(keys=[{"id": "old-key", "keyString": OLD_KEY, "serviceAccountEmail": ACCOUNT, "restrictions": RESTRICTIONS, "age": 100 * 86400}])
    env.vars["GEMVAULT_ENDPOINT"] = google.url
    env.vars["GEMVAULT_APIKEYS_ENDPOINT"] = google.url
    # What `gcloud auth application-default login` and `set-quota-project` leave, at gcloud's own path.
    refresh = "1//refresh-" + "u" * 40
    google.control(users=[{"refresh_token": refresh, "client_id": "cid.apps.googleusercontent.com", "client_secret": "GOCSPX-secret-value"}])
    gcloud = os.path.join(env.home, ".config", "gcloud")
    os.makedirs(gcloud, mode=0o700)
    env.write_private(os.path.join(gcloud, "application_default_credentials.json"), json.dumps({
        "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", "client_secret": "GOCSPX-secret-value",
        "refresh_token": refresh, "quota_project_id": PROJECT_ID, "token_uri": google.url + "/token"}))

    # Without a session the timer fails at once, as the doc says.
    locked = run_as_the_user_manager(env, service, runtime)
    assert locked.returncode == 1 and "no unlocked session" in locked.stderr, locked

    unlock = env.run(*documented_unlock(env))
    assert unlock.code == 0, unlock
    try:
        state = json.loads(env.run("status", "--json", passphrase=False).out)
        now = time.time()
        idle = time.mktime(time.strptime(state["idleLocksAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        latest = time.mktime(time.strptime(state["maxLocksAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        assert abs(idle - now - 7 * 86400) < 600 and abs(latest - now - 30 * 86400) < 600, state

        rotated = run_as_the_user_manager(env, service, runtime)
        assert rotated.returncode == 0 and "creating gemvault-default-" in rotated.stderr, rotated
        assert OLD_KEY not in rotated.stdout + rotated.stderr
        listing = json.loads(env.run("key", "list", "--json", passphrase=False).out)["keys"][0]
        new_name = listing["google_key"]
        assert new_name != OLD_NAME and google.key(new_name)["serviceAccountEmail"] == ACCOUNT
        assert google.key(OLD_NAME)["deleteTime"], google.key(OLD_NAME)

        # The next day's run: the new key is young by Google's own createTime.
        again = run_as_the_user_manager(env, service, runtime)
        assert again.returncode == 0 and "nothing to do" in again.stderr and "created at Google" in again.stderr, again
    finally:
        env.run("lock", passphrase=False)
