"""gemvault as an ordinary user, next to another user's vault: a real second account."""
import json
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from conftest import GOOD_KEY, PASSPHRASE, peer_binary

USER = "gemvault-peer"


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user account")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are not installed")
    created = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        created = True
    account = pwd.getpwnam(USER)
    # pytest's own temp folders are root's alone, so the peer gets a folder it can reach.
    shared = tempfile.mkdtemp(prefix="gemvault-peer-")
    os.chmod(shared, 0o711)
    home = os.path.join(shared, "home")
    os.mkdir(home, 0o700)
    os.chown(home, account.pw_uid, account.pw_gid)
    yield account, home, shared
    shutil.rmtree(shared, ignore_errors=True)
    if created:
        subprocess.run(["userdel", USER], check=False)


def as_peer(account, home, *args, input=None, extra_env=None):
    env = {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8",
           "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config", "XDG_STATE_HOME": home + "/state",
           "SWIFT_BACKTRACE": "enable=no"}
    env.update(extra_env or {})
    return subprocess.run(["runuser", "-u", USER, "--", peer_binary()] + list(args), input=input, env=env,
                          capture_output=True, text=True, start_new_session=True)


def test_an_ordinary_user_runs_the_whole_vault_flow(peer):
    account, home, _ = peer
    passfile = os.path.join(home, "pass")
    with open(passfile, "w") as handle:
        handle.write(PASSPHRASE + "\n")
    os.chown(passfile, account.pw_uid, account.pw_gid)
    os.chmod(passfile, 0o600)
    result = as_peer(account, home, "init", "--kdf", "interactive", "--passphrase-file", passfile)
    assert result.returncode == 0, result
    assert as_peer(account, home, "key", "set", "--passphrase-file", passfile, input=GOOD_KEY).returncode == 0
    got = as_peer(account, home, "key", "get", "--passphrase-file", passfile)
    assert got.returncode == 0 and got.stdout == GOOD_KEY + "\n"
    vault = os.path.join(home, "data/gemvault/vault")
    assert os.stat(vault).st_uid == account.pw_uid and (os.stat(vault).st_mode & 0o777) == 0o600


def test_another_users_vault_is_refused(peer, env):
    account, home, shared = peer
    env.init()
    # Root's vault, readable by everyone, where the peer can reach it: only gemvault's own check stops it.
    vault = os.path.join(shared, "roots-vault")
    shutil.copyfile(env.vault, vault)
    os.chmod(vault, 0o644)
    result = as_peer(account, home, "--vault", vault, "inspect")
    assert result.returncode == 1, result
    assert "refusing to use %s: it is owned by uid 0, not by you (uid %d)" % (vault, account.pw_uid) in result.stderr
    # Never a chmod or chown on a file the user does not own.
    assert "use a file of your own" in result.stderr and "chown" not in result.stderr and "chmod" not in result.stderr
