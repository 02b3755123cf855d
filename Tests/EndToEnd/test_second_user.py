"""gemvault as an ordinary user, next to another user's vault: a real second account."""
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, account_name, ensure_account, peer_binary
from ptyrun import PtySession

USER = account_name("gemvault-peer")


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user account")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are not installed")
    account = ensure_account(USER, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin")
    # pytest's own temp folders are root's alone, so the peer gets a folder it can reach.
    shared = tempfile.mkdtemp(prefix="gemvault-peer-")
    os.chmod(shared, 0o711)
    home = os.path.join(shared, "home")
    os.mkdir(home, 0o700)
    os.chown(home, account.pw_uid, account.pw_gid)
    yield account, home, shared
    shutil.rmtree(shared, ignore_errors=True)


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


# -- Links another account plants for the victim's attachments and /save ------------------------

def sticky_folder(shared, name="tmp", mode=0o1777):
    """A /tmp-like folder both accounts can write to (root's, sticky unless told otherwise)."""
    folder = tempfile.mkdtemp(prefix=name + "-", dir=shared)
    os.chmod(folder, mode)
    return folder


def plant_link(target, link):
    subprocess.run(["runuser", "-u", USER, "--", "ln", "-s", target, link], check=True)
    assert os.lstat(link).st_uid == pwd.getpwnam(USER).pw_uid


def test_an_attachment_link_another_account_planted_is_refused_and_nothing_is_sent(peer, api):
    account, _, shared = peer
    shared_tmp = sticky_folder(shared)
    # The victim's passphrase file, and a private folder holding another copy of it.
    private = os.path.join(api.root, "private")
    os.mkdir(private, 0o700)
    api.write_private(os.path.join(private, "pass"), PASSPHRASE + "\n")
    notes = os.path.join(shared_tmp, "notes.txt")
    plant_link(api.passfile, notes)
    folder_link = os.path.join(shared_tmp, "project")
    plant_link(private, folder_link)
    said = "it is a symbolic link owned by uid %d, not by you (uid 0) or root, so another account may have planted it" % account.pw_uid
    for command, path, subject in (("ask", notes, "it"), ("ask", folder_link + "/pass", folder_link),
                                   ("chat", notes, "it")):
        api.server.clear()
        args = [command, "--model", "echo", "-a", path] + (["summarise this"] if command == "ask" else [])
        result = api.run(*args, input="summarise this\n", passphrase=False)
        assert result.code == 1, (command, path, result)
        assert "gemvault: error: cannot attach %s: %s %s" % (path, subject, said.replace("it is ", "is ")) in result.err, result
        assert "name the file by its real path" in result.err and PASSPHRASE not in result.err + result.out
        assert api.server.requests() == [], (command, path)
    # /attach in a chat on a terminal: refused, and the message goes without it.
    session = PtySession([BIN, "chat", "--model", "echo"], api.vars)
    try:
        session.expect(r"you ›")
        session.line("/attach " + notes)
        # On the terminal a long error is broken between words: any space may be a line break.
        session.expect((r"cannot attach .*notes\.txt: it is a symbolic link owned by uid %d" % account.pw_uid).replace(" ", r"\s+"))
        session.mark()
        session.line("hello")
        session.expect(r"turns=1 .*last=hello")
        assert "inline=" not in session.text() and PASSPHRASE not in api.server.requests()[-1]["body"]
        session.send("\x04")
        assert session.wait() == 0
    finally:
        session.close()
    # The victim's own link in the sticky folder is theirs: it is followed.
    own = os.path.join(shared_tmp, "mine.txt")
    os.symlink(os.path.join(private, "readme.txt"), own)
    with open(os.path.join(private, "readme.txt"), "w") as handle:
        handle.write("hello from a file\n")
    api.server.clear()
    result = api.run("ask", "--model", "echo", "-a", own, "read it", passphrase=False)
    assert result.code == 0 and len(api.server.requests()) == 1, result


def test_a_second_name_of_a_private_file_in_a_shared_folder_is_refused(peer, api):
    _, _, shared = peer
    shared_tmp = sticky_folder(shared)
    # Where protected_hardlinks is off, another account can give the victim's file a name it
    # controls; root makes that name here.
    second = os.path.join(shared_tmp, "report.txt")
    os.link(api.passfile, second)
    result = api.run("ask", "--model", "echo", "-a", second, "summarise", passphrase=False)
    assert result.code == 1 and "cannot attach %s: it is one of 2 names of a file of yours" % second in result.err, result
    assert api.server.requests() == []


def test_save_refuses_a_planted_folder_link_and_a_folder_others_can_write(peer, api):
    account, _, shared = peer
    shared_tmp = sticky_folder(shared)
    open_folder = sticky_folder(shared, "open", mode=0o777)
    private = os.path.join(api.root, "private")
    os.mkdir(private, 0o700)
    planted = os.path.join(shared_tmp, "out")
    plant_link(private, planted)
    session = PtySession([BIN, "chat", "--model", "echo"], api.vars)
    try:
        session.expect(r"you ›")
        session.line("hello")
        session.expect(r"turns=1 .*last=hello")
        session.mark()
        session.line("/save %s/chat.md" % planted)
        session.expect(r"refusing to use %s: it is a symbolic link owned by uid %d" % (re.escape(planted), account.pw_uid))
        session.mark()
        session.line("/save %s/chat.md" % open_folder)
        session.expect((r"refusing to use %s: it is a folder that group or others can write to \(mode 0777\)" % re.escape(open_folder)).replace(" ", r"\s+"))
        session.mark()
        # A sticky folder such as /tmp keeps what the victim saves theirs.
        session.line("/save %s/chat.md" % shared_tmp)
        session.expect(r"saved to")
        session.send("\x04")
        assert session.wait() == 0
    finally:
        session.close()
    assert os.listdir(private) == [] and os.listdir(open_folder) == []
    saved = os.path.join(shared_tmp, "chat.md")
    assert os.stat(saved).st_uid == 0 and (os.stat(saved).st_mode & 0o777) == 0o600


def test_a_key_shared_with_another_account_follows_rotation_and_revocation(peer, env, tmp_path):
    """Alice (this account) shares her Google-made key with bob (a real second account) through
    a shared folder; bob follows it; alice rotates, and bob's next command uses the new key
    without a word from her; alice revokes bob: his file is removed, not updated, and his key is dead."""
    from test_rotation import FakeGoogle, rotate, setup, vault_keys
    account, home, shared = peer
    google = FakeGoogle(str(tmp_path))
    try:
        alice = setup(env, google, "metadata")
        bob_env = {"GEMVAULT_TEST_KDF_FLOOR": "1", "GEMVAULT_ENDPOINT": google.url}
        passfile = os.path.join(home, "sharing-pass")
        with open(passfile, "w") as handle:
            handle.write(PASSPHRASE + "\n")
        os.chown(passfile, account.pw_uid, account.pw_gid)
        os.chmod(passfile, 0o600)
        vault = os.path.join(home, "sharing-vault")

        def bob(*args):
            return as_peer(account, home, "--vault", vault, "--passphrase-file", passfile, *args, extra_env=bob_env)

        assert bob("init", "--kdf", "interactive").returncode == 0
        recipient = json.loads(bob("identity", "--json").stdout)["recipient"]
        drop = os.path.join(shared, "drop")
        os.mkdir(drop)
        os.chmod(drop, 0o1777)
        share = os.path.join(drop, "default.age")
        assert alice.run("key", "share", "default", "--to", recipient, "-o", share).code == 0
        imported = bob("key", "import", share, "--yes", "--no-verify", "--follow")
        assert imported.returncode == 0, imported
        assert bob("models").returncode == 0

        assert rotate(alice).code == 0
        second_key = vault_keys(alice)[0]["default"]
        models = bob("models")
        assert models.returncode == 0 and "took serial 2 of 'default'" in models.stderr, models
        assert bob("key", "get", "default").stdout == second_key + "\n"

        with open(share, "rb") as handle:
            before = handle.read()
        alice.advance_clock()  # the revocation's new key id carries another second
        revoked = alice.run("key", "share", "default", "--revoke", recipient)
        assert revoked.code == 0 and "25 minutes" in revoked.err, revoked
        # His file is removed, not rewritten: what he follows is gone, and his key stays dead.
        assert not os.path.exists(share) and before
        dead = bob("models")
        assert dead.returncode == 6, dead
        assert bob("key", "get", "default").stdout == second_key + "\n"
    finally:
        google.stop()
