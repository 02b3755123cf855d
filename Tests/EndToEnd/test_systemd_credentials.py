"""systemd credentials (Docs/configuration.md, Docs/fleet.md): `key export --systemd-creds` with
the real `systemd-creds` (package systemd) and a test host key in SYSTEMD_CREDENTIAL_SECRET, and
the key source `$CREDENTIALS_DIRECTORY/credential_name`, as LoadCredential= leaves it."""
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, account_name, ensure_account, peer_binary, wait_until
from ptyrun import PtySession

SYSTEMD_CREDS = shutil.which("systemd-creds")
CREDENTIAL_KEY = "AQ.Systemd_Credential-0123456789abcdefghijklmnopq"
ENV_KEY = "AQ.Environment_Key-0123456789abcdefghijklmnopqrsklmn"
needs_systemd_creds = pytest.mark.skipif(SYSTEMD_CREDS is None, reason="systemd-creds is not installed (./test installs the package systemd as root)")


@pytest.fixture
def host_key(tmp_path):
    """A host key of our own, so the test neither needs nor touches /var/lib/systemd/credential.secret."""
    path = os.path.join(str(tmp_path), "credential.secret")
    with open(path, "wb") as handle:
        handle.write(os.urandom(4096))
    os.chmod(path, 0o400)
    return {"SYSTEMD_CREDENTIAL_SECRET": path}


@pytest.fixture
def memory_folder(tmp_path):
    """Makes credentials folders on tmpfs, as systemd does (/dev/shm is tmpfs); removed afterwards."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path)
    root = os.path.join(base, "gemvault-test-%d-%s" % (os.getpid(), os.path.basename(str(tmp_path))))

    def make(name="credentials"):
        folder = os.path.join(root, name)
        os.makedirs(folder, mode=0o700)
        return folder
    yield make
    shutil.rmtree(root, ignore_errors=True)


def write_credential(folder, text, name="gemini-api-key", mode=0o400):
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


def file_system(folder):
    """The folder's file system type as stat(1) names it (tmpfs, ext2/ext3, overlayfs, …)."""
    return subprocess.run(["stat", "-f", "-c", "%T", folder], capture_output=True, text=True, check=True).stdout.strip()


def which(env, **extra):
    result = env.run("key", "which", "--json", env=extra, passphrase=False)
    return result, (json.loads(result.out) if result.code == 0 else None)


@needs_systemd_creds
def test_export_writes_a_credential_systemd_decrypts_and_prints_the_unit_lines(env, tmp_path, host_key):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    target = os.path.join(str(tmp_path), "gemini.cred")
    made = env.run("key", "export", "--systemd-creds", "-o", target, env=host_key)
    assert made.code == 0, made
    # As root, systemd-creds runs as gemvault does, not through sudo.
    assert "through sudo" not in made.err
    assert "LoadCredentialEncrypted=gemini-api-key:" + target in made.out
    assert "ExecStart=" in made.out and " ask " in made.out and " exec -- " in made.out
    assert GOOD_KEY not in made.out + made.err
    assert stat.S_IMODE(os.lstat(target).st_mode) == 0o600
    with open(target, "rb") as handle:
        assert GOOD_KEY.encode() not in handle.read()
    opened = subprocess.run([SYSTEMD_CREDS, "decrypt", "--name=gemini-api-key", target, "-"], env=dict(os.environ, **host_key),
                            capture_output=True, text=True)
    assert opened.returncode == 0 and opened.stdout == GOOD_KEY
    # Not over an existing file without --force; with it, replaced.
    again = env.run("key", "export", "--systemd-creds", "-o", target, env=host_key)
    assert again.code == 1 and "exists" in again.err
    assert env.run("key", "export", "--systemd-creds", "-o", target, "--force", env=host_key).code == 0


@needs_systemd_creds
def test_export_without_a_file_prints_the_credential_inline_under_its_configured_name(env, host_key):
    env.init()
    assert env.run("key", "set", "work", input=GOOD_KEY).code == 0
    assert env.run("config", "set", "credential_name", "lab-key").code == 0
    made = env.run("key", "export", "work", "--systemd-creds", env=host_key)
    assert made.code == 0, made
    assert made.out.startswith("# For the [Service] section") and "SetCredentialEncrypted=lab-key:" in made.out
    assert GOOD_KEY not in made.out


def test_export_refusals(env, tmp_path, host_key):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    plain = env.run("key", "export")
    assert plain.code == 64 and "--systemd-creds" in plain.err
    missing = env.run("key", "export", "nope", "--systemd-creds")
    assert missing.code == 1 and "no key named 'nope'" in missing.err
    # Without systemd-creds on PATH: which package has it.
    folder = os.path.join(str(tmp_path), "empty-bin")
    os.mkdir(folder)
    absent = env.run("key", "export", "--systemd-creds", env=dict(host_key, PATH=folder))
    assert absent.code == 1 and "systemd-creds is not installed" in absent.err and "apt install systemd" in absent.err


@needs_systemd_creds
def test_a_tpm2_credential_without_a_tpm_says_why_and_writes_nothing(env, tmp_path, host_key):
    if os.path.exists("/dev/tpmrm0") or os.path.exists("/dev/tpm0"):
        pytest.skip("this machine has a TPM, so --tpm2 succeeds here")
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    target = os.path.join(str(tmp_path), "tpm.cred")
    tpm = env.run("key", "export", "--systemd-creds", "--tpm2", "-o", target, env=host_key)
    assert tpm.code == 1 and "systemd-creds failed" in tpm.err and not os.path.exists(target)
    assert GOOD_KEY not in tpm.err


def test_the_credential_is_a_key_source_after_key_file_and_before_the_environment(env, tmp_path, memory_folder):
    folder = memory_folder()
    path = write_credential(folder, CREDENTIAL_KEY + "\n")
    result, data = which(env, CREDENTIALS_DIRECTORY=folder, GEMINI_API_KEY=ENV_KEY)
    assert result.code == 0, result
    assert data["source"] == "systemd-credential" and path in data["detail"]
    assert data["masked"] == CREDENTIAL_KEY[:4] + "…" + CREDENTIAL_KEY[-4:]
    assert any(s["source"] == "environment" for s in data["shadowed"])
    assert ("not on tmpfs" in result.err) == (file_system(folder) not in ("tmpfs", "ramfs"))
    # The file's time is when systemd decrypted it, not the key's age: none is shown.
    assert data["updated"] is None and data["age_days"] is None
    plain = env.run("key", "which", env={"CREDENTIALS_DIRECTORY": folder}, passphrase=False)
    assert plain.code == 0 and "age:" not in plain.out, plain
    # --key-file still wins.
    key_file = os.path.join(str(tmp_path), "key")
    env.write_private(key_file, GOOD_KEY + "\n")
    _, data = which(env, CREDENTIALS_DIRECTORY=folder)
    assert data["source"] == "systemd-credential"
    flagged = env.run("key", "which", "--json", "--key-file", key_file, env={"CREDENTIALS_DIRECTORY": folder}, passphrase=False)
    assert json.loads(flagged.out)["source"] == "key-file-flag"
    # --key NAME chooses a vault key over it.
    env.init()
    assert env.run("key", "set", "work", input=GOOD_KEY).code == 0
    named = env.run("key", "which", "--json", "--key", "work", env={"CREDENTIALS_DIRECTORY": folder})
    assert json.loads(named.out)["source"] == "vault"
    # Another credential name, by the environment; one the folder lacks falls through.
    write_credential(folder, ENV_KEY, name="other")
    _, data = which(env, CREDENTIALS_DIRECTORY=folder, GEMVAULT_CREDENTIAL="other")
    assert data["masked"] == ENV_KEY[:4] + "…" + ENV_KEY[-4:]
    result, data = which(env, CREDENTIALS_DIRECTORY=folder, GEMVAULT_CREDENTIAL="absent", GEMINI_API_KEY=ENV_KEY)
    assert data["source"] == "environment"


def test_a_credential_is_taken_only_as_systemd_leaves_it(env, tmp_path, memory_folder):
    folder = memory_folder()
    elsewhere = os.path.join(str(tmp_path), "planted")
    with open(elsewhere, "w") as handle:
        handle.write(CREDENTIAL_KEY)
    os.symlink(elsewhere, os.path.join(folder, "gemini-api-key"))
    linked, _ = which(env, CREDENTIALS_DIRECTORY=folder, GEMINI_API_KEY=ENV_KEY)
    assert linked.code == 1 and "link" in linked.err and CREDENTIAL_KEY not in linked.err
    os.unlink(os.path.join(folder, "gemini-api-key"))
    writable = write_credential(folder, CREDENTIAL_KEY, mode=0o620)
    refused, _ = which(env, CREDENTIALS_DIRECTORY=folder)
    assert refused.code == 1 and "gemini-api-key" in refused.err
    os.chmod(writable, 0o440)
    _, data = which(env, CREDENTIALS_DIRECTORY=folder)
    assert data["source"] == "systemd-credential"
    dotted, _ = which(env, CREDENTIALS_DIRECTORY=folder, GEMVAULT_CREDENTIAL="..")
    assert dotted.code != 0
    # Never cut short: a key behind 8 KiB of blanks is refused, not read as its first bytes.
    os.chmod(writable, 0o600)
    with open(writable, "w") as handle:
        handle.write(" " * 8190 + CREDENTIAL_KEY)
    padded, _ = which(env, CREDENTIALS_DIRECTORY=folder)
    assert padded.code == 1 and "larger than 8192 bytes" in padded.err


def test_another_users_credential_is_refused(env, tmp_path, memory_folder):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the credential to another user (chown)")
    folder = memory_folder()
    path = write_credential(folder, CREDENTIAL_KEY, mode=0o440)
    os.chown(path, 65534, 65534)
    foreign, _ = which(env, CREDENTIALS_DIRECTORY=folder)
    assert foreign.code == 1 and CREDENTIAL_KEY not in foreign.err


def test_a_credentials_folder_reached_through_another_users_link_is_refused(env, tmp_path, memory_folder):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a link to another user (chown -h)")
    folder = memory_folder()
    write_credential(folder, CREDENTIAL_KEY)
    link = os.path.join(os.path.dirname(folder), "planted")
    os.symlink(folder, link)
    os.lchown(link, 65534, 65534)
    refused, _ = which(env, CREDENTIALS_DIRECTORY=link, GEMINI_API_KEY=ENV_KEY)
    assert refused.code == 1 and CREDENTIAL_KEY not in refused.err
    open_to_all = memory_folder("open")
    write_credential(open_to_all, CREDENTIAL_KEY)
    os.chmod(open_to_all, 0o777)
    loose, _ = which(env, CREDENTIALS_DIRECTORY=open_to_all)
    assert loose.code == 1


def test_a_credentials_folder_on_a_disk_is_warned_about(env, tmp_path):
    folder = os.path.join(str(tmp_path), "on-disk")
    os.mkdir(folder, 0o700)
    write_credential(folder, CREDENTIAL_KEY)
    result, data = which(env, CREDENTIALS_DIRECTORY=folder)
    assert data["source"] == "systemd-credential"
    assert ("not on tmpfs or ramfs" in result.err) == (file_system(folder) not in ("tmpfs", "ramfs"))


@needs_systemd_creds
def test_a_service_gets_the_key_from_its_encrypted_credential(api, tmp_path, host_key, memory_folder):
    """The whole way: exported by the admin, decrypted as LoadCredentialEncrypted= would, used by
    `ask` in a service that has no vault and no key in its environment."""
    api.init()
    assert api.run("key", "set", input=GOOD_KEY).code == 0
    target = os.path.join(str(tmp_path), "gemini.cred")
    assert api.run("key", "export", "--systemd-creds", "-o", target, env=host_key).code == 0
    folder = memory_folder("service")
    decrypted = subprocess.run([SYSTEMD_CREDS, "decrypt", "--name=gemini-api-key", target, os.path.join(folder, "gemini-api-key")],
                               env=dict(os.environ, **host_key), capture_output=True)
    assert decrypted.returncode == 0, decrypted.stderr
    os.chmod(os.path.join(folder, "gemini-api-key"), 0o400)
    service = dict(api.vars, CREDENTIALS_DIRECTORY=folder, HOME=os.path.join(str(tmp_path), "service-home"))
    service.pop("GEMINI_API_KEY")
    answered = subprocess.run([BIN, "ask", "hello", "--model", "ok"], env=service, capture_output=True, text=True,
                              start_new_session=True, timeout=60)
    assert answered.returncode == 0, answered.stderr
    assert api.server.requests()[-1]["headers"]["x-goog-api-key"] == GOOD_KEY


def test_the_key_reaches_systemd_creds_on_its_stdin_never_in_its_arguments_or_environment(env, tmp_path):
    """A stand-in systemd-creds first on PATH records what it was given."""
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    folder = os.path.join(str(tmp_path), "bin")
    os.mkdir(folder)
    record = os.path.join(str(tmp_path), "record.json")
    script = os.path.join(folder, "systemd-creds")
    with open(script, "w") as handle:
        handle.write("#!/usr/bin/env python3\nimport json, os, sys\n"
                     "json.dump({'argv': sys.argv, 'env': dict(os.environ), 'stdin': sys.stdin.read()}, open(%r, 'w'))\n"
                     "sys.stdout.write('ENCRYPTED')\n" % record)
    os.chmod(script, 0o755)
    target = os.path.join(str(tmp_path), "out.cred")
    made = env.run("key", "export", "--systemd-creds", "-o", target, env={"PATH": folder + ":" + env.vars["PATH"]})
    assert made.code == 0, made
    seen = json.load(open(record))
    assert seen["stdin"] == GOOD_KEY
    assert seen["argv"][1:] == ["encrypt", "--name=gemini-api-key", "--with-key=host", "-", "-"]
    assert GOOD_KEY not in json.dumps(seen["env"]) and "GEMINI_API_KEY" not in seen["env"]
    assert open(target).read() == "ENCRYPTED"
    # Never over a link planted at the target.
    planted = os.path.join(str(tmp_path), "planted.cred")
    os.symlink(os.path.join(str(tmp_path), "elsewhere"), planted)
    refused = env.run("key", "export", "--systemd-creds", "-o", planted, "--force", env={"PATH": folder + ":" + env.vars["PATH"]})
    assert refused.code == 1 and not os.path.exists(os.path.join(str(tmp_path), "elsewhere"))


def test_a_systemd_creds_that_hangs_does_not_hold_the_command(env, tmp_path):
    """Killed after its time (60 s, on the sped-up waiting clock of a debug build), nothing written."""
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    folder = os.path.join(str(tmp_path), "bin")
    os.mkdir(folder)
    script = os.path.join(folder, "systemd-creds")
    with open(script, "w") as handle:
        handle.write("#!/usr/bin/env python3\nimport time\ntime.sleep(600)\n")
    os.chmod(script, 0o755)
    target = os.path.join(str(tmp_path), "out.cred")
    stuck = env.run("key", "export", "--systemd-creds", "-o", target, timeout=30,
                    env={"PATH": folder + ":" + env.vars["PATH"], "GEMVAULT_TEST_WAIT_SPEEDUP": "60"})
    assert stuck.code == 1 and "did not finish within 60 s" in stuck.err and not os.path.exists(target)


# -- A user whose vault is in their home, and whose systemd-creds needs root (issue 40 item 11) ----

SUDOER = account_name("gemvault-sudoer")


class Sudoer:
    """A second account with its vault in its home, a host key it cannot read (so systemd-creds
    needs root, as with /var/lib/systemd/credential.secret) and, while `allow`ed, a real sudoers
    rule for systemd-creds alone; sudo's log records each command line it runs."""

    def __init__(self):
        if os.geteuid() != 0:
            pytest.skip("needs root to make a second account and a sudoers rule")
        for tool in ("sudo", "visudo", "useradd", "runuser"):
            if shutil.which(tool) is None:
                pytest.skip("%s is not installed (BuildSupport/test-packages.txt lists sudo; ./test installs it)" % tool)
        self.account = ensure_account(SUDOER, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin")
        self.binary = peer_binary()
        self.root = tempfile.mkdtemp(prefix="gv-sudoer-")
        os.chmod(self.root, 0o755)
        self.home = os.path.join(self.root, "home")
        os.mkdir(self.home, 0o700)
        os.chown(self.home, self.account.pw_uid, self.account.pw_gid)
        # Root's own: the host key, sudo's log. And a root folder the user cannot write, as /etc/gemvault.
        self.private = tempfile.mkdtemp(prefix="gv-host-")
        self.host_key = os.path.join(self.private, "credential.secret")
        with open(self.host_key, "wb") as handle:
            handle.write(os.urandom(4096))
        os.chmod(self.host_key, 0o400)
        self.sudo_log = os.path.join(self.private, "sudo.log")
        self.etc = os.path.join(self.root, "etc-gemvault")
        os.mkdir(self.etc, 0o755)
        self.rule = "/etc/sudoers.d/" + SUDOER
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": self.home, "LANG": "C.UTF-8", "SWIFT_BACKTRACE": "enable=no",
                    "XDG_RUNTIME_DIR": self.home + "/run", "XDG_STATE_HOME": self.home + "/state",
                    "XDG_DATA_HOME": self.home + "/data", "XDG_CONFIG_HOME": self.home + "/config",
                    "SYSTEMD_CREDENTIAL_SECRET": self.host_key}
        self.passfile = os.path.join(self.home, "pass")
        with open(self.passfile, "w") as handle:
            handle.write(PASSPHRASE + "\n")
        os.chown(self.passfile, self.account.pw_uid, self.account.pw_gid)
        os.chmod(self.passfile, 0o600)
        self.as_user("mkdir", "-m", "700", self.home + "/run")

    def as_user(self, *argv, input=None, env=None):
        return subprocess.run(["runuser", "-u", SUDOER, "--"] + list(argv), env=env or self.env, input=input,
                              capture_output=True, text=True, timeout=120, start_new_session=True)

    def run(self, *args, input=None):
        return self.as_user(self.binary, *args, "--passphrase-file", self.passfile, input=input)

    def allow(self, password=False, extra=""):
        """The sudoers rule (checked by visudo first): systemd-creds as root, the test host key kept."""
        text = ("%s ALL=(root) %s%s\n" % (SUDOER, "" if password else "NOPASSWD: ", os.path.realpath(SYSTEMD_CREDS))
                + 'Defaults:%s env_keep += "SYSTEMD_CREDENTIAL_SECRET", logfile="%s", loglinelen=0\n' % (SUDOER, self.sudo_log) + extra)
        staged = os.path.join(self.private, "rule")
        with open(staged, "w") as handle:
            handle.write(text)
        os.chmod(staged, 0o440)
        checked = subprocess.run(["visudo", "-cf", staged], capture_output=True, text=True)
        assert checked.returncode == 0, checked
        os.rename(staged, self.rule)

    def forbid(self):
        if os.path.exists(self.rule):
            os.unlink(self.rule)
        # sudo's remembered password for this account (a file of its time stamps).
        for folder in ("/run/sudo/ts", "/var/lib/sudo/ts"):
            try:
                os.unlink(os.path.join(folder, SUDOER))
            except OSError:
                pass

    def decrypt(self, path, name="gemini-api-key"):
        opened = subprocess.run([SYSTEMD_CREDS, "decrypt", "--name=" + name, path, "-"], capture_output=True, text=True,
                                env=dict(os.environ, SYSTEMD_CREDENTIAL_SECRET=self.host_key))
        assert opened.returncode == 0, opened.stderr
        return opened.stdout

    def logged(self):
        return open(self.sudo_log).read() if os.path.exists(self.sudo_log) else ""

    def remove(self):
        self.forbid()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.private, ignore_errors=True)


@pytest.fixture
def sudoer():
    if SYSTEMD_CREDS is None:
        pytest.skip("systemd-creds is not installed (./test installs the package systemd as root)")
    user = Sudoer()
    try:
        init = user.run("init", "--kdf", "interactive")
        assert init.returncode == 0, init
        assert user.run("key", "set", "lab", input=GOOD_KEY).returncode == 0
        yield user
    finally:
        user.remove()


def test_a_user_exports_their_own_key_with_only_systemd_creds_run_as_root_through_sudo(sudoer):
    sudoer.allow()
    target = os.path.join(sudoer.etc, "lab.cred")
    made = sudoer.run("key", "export", "lab", "--systemd-creds", "-o", target)
    assert made.returncode == 0, made
    assert "LoadCredentialEncrypted=gemini-api-key:" + target in made.stdout
    assert "systemd-creds ran as root, through sudo" in made.stderr
    # Written by root's systemd-creds, mode 0600 though sudo's own umask is 022.
    written = os.lstat(target)
    assert written.st_uid == 0 and stat.S_IMODE(written.st_mode) == 0o600
    assert sudoer.decrypt(target) == GOOD_KEY
    # sudo ran systemd-creds alone, the key not among its arguments.
    log = sudoer.logged()
    assert "COMMAND=%s encrypt --name=gemini-api-key --with-key=host - %s" % (os.path.realpath(SYSTEMD_CREDS), target) in log
    assert GOOD_KEY not in log and GOOD_KEY not in made.stdout + made.stderr
    # Not over the file without --force (the user can see it); with it, replaced.
    again = sudoer.run("key", "export", "lab", "--systemd-creds", "-o", target)
    assert again.returncode == 1 and "exists" in again.stderr
    before = os.lstat(target).st_ino
    assert sudoer.run("key", "export", "lab", "--systemd-creds", "-o", target, "--force").returncode == 0
    assert os.lstat(target).st_ino != before and sudoer.decrypt(target) == GOOD_KEY
    # Without -o the credential is printed inline, made the same way.
    inline = sudoer.run("key", "export", "lab", "--systemd-creds")
    assert inline.returncode == 0 and "SetCredentialEncrypted=gemini-api-key:" in inline.stdout, inline


def test_a_folder_the_user_cannot_see_into_is_written_only_with_force(sudoer):
    sudoer.allow()
    hidden = os.path.join(sudoer.root, "hidden")
    os.mkdir(hidden, 0o700)
    target = os.path.join(hidden, "lab.cred")
    blind = sudoer.run("key", "export", "lab", "--systemd-creds", "-o", target)
    assert blind.returncode == 1 and "cannot tell whether" in blind.stderr and "--force" in blind.stderr
    assert not os.path.exists(target)
    forced = sudoer.run("key", "export", "lab", "--systemd-creds", "-o", target, "--force")
    assert forced.returncode == 0, forced
    assert sudoer.decrypt(target) == GOOD_KEY


def test_without_sudo_rights_nothing_is_written_and_the_printed_pipe_works(sudoer):
    target = os.path.join(sudoer.etc, "lab.cred")
    refused = sudoer.run("key", "export", "lab", "--systemd-creds", "-o", target)
    assert refused.returncode == 1 and "sudo systemd-creds failed (status 1)" in refused.stderr, refused
    assert "nothing was written" in refused.stderr and not os.path.exists(target)
    assert "sudo: a terminal is required" in refused.stderr or "sudo: a password is required" in refused.stderr
    assert GOOD_KEY not in refused.stderr + refused.stdout
    hint = next(line for line in refused.stderr.splitlines() if line.startswith("gemvault: hint:"))
    pipe = hint[hint.index("(umask 077; "):]
    assert pipe == "(umask 077; %s key get lab | sudo systemd-creds encrypt --name=gemini-api-key --with-key=host - %s)" % (os.path.realpath(sudoer.binary), target)
    # Once sudo may run systemd-creds, the pipe does by hand what the hint says.
    sudoer.allow()
    ran = sudoer.as_user("sh", "-c", pipe.replace(" key get lab", " key get lab --passphrase-file " + sudoer.passfile))
    assert ran.returncode == 0, ran
    assert stat.S_IMODE(os.lstat(target).st_mode) == 0o600
    assert sudoer.decrypt(target).strip() == GOOD_KEY


def test_sudo_asks_for_the_password_on_the_terminal_while_the_key_waits_on_the_pipe(sudoer):
    password = "Pw-" + secrets.token_hex(12)
    subprocess.run(["chpasswd"], input="%s:%s\n" % (SUDOER, password), text=True, check=True)
    sudoer.allow(password=True)
    target = os.path.join(sudoer.etc, "lab.cred")
    session = PtySession(["/usr/sbin/runuser", "-u", SUDOER, "--", sudoer.binary, "key", "export", "lab", "--systemd-creds",
                          "-o", target, "--passphrase-file", sudoer.passfile], sudoer.env)
    session.expect(r"\[sudo\] password for %s, to run systemd-creds for gemvault: " % SUDOER, timeout=30)
    assert not os.path.exists(target)
    session.line(password)
    assert session.wait(timeout=60) == 0, session.text()
    assert "LoadCredentialEncrypted=gemini-api-key:" in session.text()
    assert password not in session.text() and GOOD_KEY not in session.text()
    assert sudoer.decrypt(target) == GOOD_KEY


def test_under_sudo_gemvault_is_root_and_says_how_to_use_ones_own_vault(sudoer):
    """`sudo gemvault key export`: root's vault (sudo resets HOME), or, with the user's HOME and
    XDG folders kept, the user's vault refused because root does not trust another user's folder."""
    binary = os.path.realpath(sudoer.binary)
    root_vault = os.path.join(pwd.getpwuid(0).pw_dir, ".local/share/gemvault/vault")
    if os.path.exists(root_vault):
        pytest.skip("root has a vault of its own here (%s), so sudo gemvault uses it" % root_vault)
    sudoer.allow(extra="%s ALL=(root) NOPASSWD: %s\n" % (SUDOER, binary))
    target = os.path.join(sudoer.etc, "lab.cred")
    as_root = sudoer.as_user("sudo", "-n", binary, "key", "export", "lab", "--systemd-creds", "-o", target)
    assert as_root.returncode == 1, as_root
    assert "no vault at %s (under sudo, gemvault is root and opens root's vault, not %s's)" % (root_vault, SUDOER) in as_root.stderr
    assert "run 'gemvault key export' as %s, without sudo" % SUDOER in as_root.stderr
    sudoer.allow(extra="%s ALL=(root) NOPASSWD: %s\nDefaults:%s env_keep += \"HOME XDG_DATA_HOME XDG_CONFIG_HOME XDG_STATE_HOME XDG_RUNTIME_DIR\"\n"
                 % (SUDOER, binary, SUDOER))
    kept = sudoer.as_user("sudo", "-n", binary, "key", "export", "lab", "--systemd-creds", "-o", target,
                          "--passphrase-file", sudoer.passfile)
    assert kept.returncode == 1, kept
    assert "it is a folder owned by uid %d" % sudoer.account.pw_uid in kept.stderr
    assert "under sudo, gemvault is root, and root does not open a vault in a folder of %s's" % SUDOER in kept.stderr
    assert not os.path.exists(target) and GOOD_KEY not in kept.stdout + kept.stderr


def test_a_systemd_creds_that_hangs_under_sudo_is_stopped_through_sudo(sudoer):
    """sudo passes gemvault's SIGTERM on to root's systemd-creds, which gemvault may not signal:
    a stand-in that never ends, found by sudo's secure_path, on the sped-up clock of a debug build."""
    folder = os.path.join(sudoer.private, "bin")
    os.mkdir(folder, 0o755)
    os.chmod(sudoer.private, 0o711)
    marker = os.path.join(sudoer.private, "hung.pid")
    script = os.path.join(folder, "systemd-creds")
    with open(script, "w") as handle:
        handle.write("#!/bin/sh\necho $$ > %s\nexec sleep 600\n" % marker)
    os.chmod(script, 0o755)
    sudoer.allow(extra='%s ALL=(root) NOPASSWD: %s\nDefaults:%s secure_path="%s:/usr/sbin:/usr/bin:/sbin:/bin"\n'
                 % (SUDOER, script, SUDOER, folder))
    target = os.path.join(sudoer.etc, "lab.cred")
    env = dict(sudoer.env, GEMVAULT_TEST_WAIT_SPEEDUP="60")
    stuck = sudoer.as_user(sudoer.binary, "key", "export", "lab", "--systemd-creds", "-o", target, "--passphrase-file", sudoer.passfile, env=env)
    assert stuck.returncode == 1 and "did not finish within 360 s" in stuck.stderr, stuck
    assert not os.path.exists(target)
    # The stand-in, root's, was ended too (by the SIGTERM sudo relayed).
    pid = int(open(marker).read())
    wait_until(lambda: not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z", "the stand-in to end", limit=10)
