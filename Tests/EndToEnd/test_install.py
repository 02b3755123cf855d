"""install.sh as a real unprivileged user: the default and --prefix layouts, --uninstall,
--purge (which asks first), and a machine missing the build packages.

The install step is given the already-built binary (--binary), so these tests do not run a
second, release build; everything else install.sh does runs as it would for a user. The
exceptions check the binary install.sh builds itself (a release build of this checkout, made
once by ./test's release stage).
"""
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, ROOT, account_name
from ptyrun import PtySession

USER = account_name("gemvault-installer")


@pytest.fixture(scope="module")
def user():
    if os.geteuid() != 0:
        pytest.skip("needs root to create an unprivileged account to install as")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("useradd and runuser are not installed")
    base = tempfile.mkdtemp(prefix="gemvault-install-")
    os.chmod(base, 0o755)
    home = os.path.join(base, "home")
    subprocess.run(["userdel", "-r", USER], capture_output=True)
    subprocess.run(["useradd", "--home-dir", home, "--create-home", "--shell", "/bin/bash", USER], check=True)
    entry = pwd.getpwnam(USER)
    # A checkout of the user's own: install.sh, the man page it installs, and the binary.
    checkout = os.path.join(base, "checkout")
    os.makedirs(os.path.join(checkout, "Docs"))
    shutil.copy(os.path.join(ROOT, "install.sh"), checkout)
    for name in os.listdir(os.path.join(ROOT, "Docs")):
        if name == "gemvault.1" or name.endswith(".md"):
            shutil.copy(os.path.join(ROOT, "Docs", name), os.path.join(checkout, "Docs"))
    shutil.copy(BIN, os.path.join(checkout, "gemvault"))
    for folder, _, files in os.walk(checkout):
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(os.path.join(folder, name), entry.pw_uid, entry.pw_gid)
    yield {"home": home, "checkout": checkout, "base": base}
    subprocess.run(["userdel", "-r", USER], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


def as_user(user, *argv, path="/usr/local/bin:/usr/bin:/bin", stdin=subprocess.DEVNULL):
    environment = ["HOME=" + user["home"], "PATH=" + path, "LANG=C.UTF-8", "USER=" + USER, "SWIFT_BACKTRACE=enable=no"]
    return subprocess.run(["runuser", "-u", USER, "--", "env", "-i"] + environment + list(argv),
                          capture_output=True, text=True, timeout=120, stdin=stdin, cwd=user["checkout"])


def install(user, *args):
    return as_user(user, "bash", os.path.join(user["checkout"], "install.sh"), "--binary", os.path.join(user["checkout"], "gemvault"), *args)


def installed_files(prefix):
    files = ["bin/gemvault", "share/man/man1/gemvault.1"]
    for shell, path in [("bash", "share/bash-completion/completions/gemvault"), ("zsh", "share/zsh/site-functions/_gemvault"),
                        ("fish", "share/fish/vendor_completions.d/gemvault.fish")]:
        if shutil.which(shell):
            files.append(path)
    files += ["share/doc/gemvault/" + name for name in sorted(os.listdir(os.path.join(ROOT, "Docs"))) if name.endswith(".md")]
    return [os.path.join(prefix, f) for f in files]


def test_a_user_install_goes_under_local_and_uninstall_keeps_the_vault(user):
    local = os.path.join(user["home"], ".local")
    result = install(user)
    assert result.returncode == 0, result
    for path in installed_files(local):
        assert os.path.isfile(path), path
        assert os.stat(path).st_uid == pwd.getpwnam(USER).pw_uid
    assert "is not on your PATH" in result.stdout
    version = as_user(user, os.path.join(local, "bin", "gemvault"), "--version")
    assert version.returncode == 0 and version.stdout.startswith("gemvault ")
    # Help names the installed guides, which are there to read.
    helped = as_user(user, os.path.join(local, "bin", "gemvault"), "help", "slot", "add")
    guide = os.path.join(local, "share/doc/gemvault/quick-unlock.md")
    assert guide in helped.stdout and "Docs/" not in helped.stdout, helped.stdout
    assert os.path.isfile(guide)
    # The installed completion script works with the installed binary.
    if shutil.which("bash"):
        probe = as_user(user, "bash", "-c", "source %s; COMP_WORDS=(gemvault hist); COMP_CWORD=1; _gemvault; echo ${COMPREPLY[@]}"
                        % os.path.join(local, "share/bash-completion/completions/gemvault"), path=os.path.join(local, "bin") + ":/usr/bin:/bin")
        assert probe.stdout.split() == ["history"], probe
    # A vault of the user's, which --uninstall must keep.
    passfile = os.path.join(user["home"], "pass")
    with open(passfile, "w") as handle:
        handle.write(PASSPHRASE + "\n")
    os.chown(passfile, pwd.getpwnam(USER).pw_uid, -1)
    os.chmod(passfile, 0o600)
    made = as_user(user, os.path.join(local, "bin", "gemvault"), "init", "--kdf", "interactive", "--passphrase-file", passfile)
    assert made.returncode == 0, made
    vault = os.path.join(local, "share", "gemvault", "vault")
    assert os.path.isfile(vault)

    removed = install(user, "--uninstall")
    assert removed.returncode == 0, removed
    for path in installed_files(local):
        assert not os.path.exists(path), path
    assert os.path.isfile(vault) and "were kept" in removed.stdout


def test_prefix_installs_and_uninstalls_there(user):
    prefix = os.path.join(user["home"], "opt", "gemvault")
    result = install(user, "--prefix", prefix)
    assert result.returncode == 0, result
    for path in installed_files(prefix):
        assert os.path.isfile(path), path
    again = install(user, "--prefix=" + prefix)
    assert again.returncode == 0, "installing over an installed copy works"
    removed = install(user, "--uninstall", "--prefix", prefix)
    assert removed.returncode == 0, removed
    for path in installed_files(prefix):
        assert not os.path.exists(path), path
    nothing = install(user, "--uninstall", "--prefix", prefix)
    assert nothing.returncode == 0 and "nothing of gemvault's was installed" in nothing.stdout


def test_missing_packages_are_named_and_nothing_is_installed(user, tmp_path):
    fake_bin = os.path.join(user["base"], "fake-bin")
    os.makedirs(fake_bin, exist_ok=True)
    with open(os.path.join(fake_bin, "dpkg-query"), "w") as handle:
        handle.write("#!/bin/sh\necho \"dpkg-query: no packages found matching $3\" >&2\nexit 1\n")
    os.chmod(os.path.join(fake_bin, "dpkg-query"), 0o755)
    prefix = os.path.join(user["home"], "missing")
    result = as_user(user, "bash", os.path.join(user["checkout"], "install.sh"), "--prefix", prefix, path=fake_bin + ":/usr/bin:/bin")
    assert result.returncode == 1, result
    assert "sudo apt-get install -y libsodium-dev libedit-dev libcurl4-openssl-dev libcmark-gfm-dev" in result.stderr
    assert "libssl-dev" in result.stderr
    assert not os.path.exists(prefix)


def test_purge_asks_first_and_then_deletes_the_users_data(user):
    local = os.path.join(user["home"], ".local")
    assert install(user).returncode == 0
    passfile = os.path.join(user["home"], "pass")
    with open(passfile, "w") as handle:
        handle.write(PASSPHRASE + "\n")
    os.chown(passfile, pwd.getpwnam(USER).pw_uid, -1)
    os.chmod(passfile, 0o600)
    data = os.path.join(local, "share", "gemvault")
    if not os.path.exists(os.path.join(data, "vault")):
        assert as_user(user, os.path.join(local, "bin", "gemvault"), "init", "--kdf", "interactive", "--passphrase-file", passfile).returncode == 0
    # No terminal: it cannot ask, so it removes nothing.
    blind = install(user, "--uninstall", "--purge")
    assert blind.returncode == 1 and "there is no terminal to ask on" in blind.stderr
    assert os.path.isfile(os.path.join(data, "vault")) and os.path.isfile(os.path.join(local, "bin", "gemvault"))

    # A relative XDG folder does not count, for gemvault or for --purge.
    unrelated = os.path.join(user["checkout"], "notes", "gemvault")
    os.makedirs(unrelated)
    open(os.path.join(unrelated, "important.txt"), "w").close()

    def purge(answer):
        environment = {"HOME": user["home"], "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "XDG_DATA_HOME": "notes"}
        s = PtySession(["/usr/sbin/runuser", "-u", USER, "--", "bash", os.path.join(user["checkout"], "install.sh"),
                        "--binary", os.path.join(user["checkout"], "gemvault"), "--uninstall", "--purge"], environment)
        try:
            s.expect(r'Type "delete" to delete them: ')
            assert data in s.text()
            s.line(answer)
            return s.wait(timeout=60), s.text()
        finally:
            s.close()
    code, screen = purge("no")
    assert code == 1 and "nothing was removed" in screen
    assert os.path.isfile(os.path.join(data, "vault"))
    code, screen = purge("delete")
    assert code == 0, screen
    assert not os.path.exists(data) and not os.path.exists(os.path.join(local, "bin", "gemvault"))
    assert os.path.exists(os.path.join(unrelated, "important.txt"))


def test_root_refuses_a_prefix_another_user_could_change(user):
    """Someone who can rename entries in the prefix could swap a file for a symbolic link, or
    the binary for theirs just before it runs: as root, such a prefix is refused."""
    shared = os.path.join(user["base"], "shared")
    os.makedirs(os.path.join(shared, "share"))
    os.chmod(shared, 0o2775)
    refused = subprocess.run(["bash", os.path.join(ROOT, "install.sh"), "--binary", BIN, "--prefix", shared],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "writable by group or others" in refused.stderr, refused
    assert not os.path.exists(os.path.join(shared, "bin"))
    theirs = os.path.join(user["home"], "tools")
    os.makedirs(theirs)
    os.chown(theirs, pwd.getpwnam(USER).pw_uid, -1)
    refused = subprocess.run(["bash", os.path.join(ROOT, "install.sh"), "--binary", BIN, "--prefix", theirs],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "belongs to uid %d" % pwd.getpwnam(USER).pw_uid in refused.stderr, refused
    assert os.listdir(theirs) == []


def library_paths(binary):
    """What the dynamic loader would map for `binary`, by library name (ldd)."""
    listing = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return dict(re.findall(r"^\s*(\S+) => (\S+)", listing, re.M))


@pytest.fixture(scope="module")
def release_install(tmp_path_factory):
    """The prefix install.sh's own build went into, as a user would run it: ./test's release
    stage makes it once (GEMVAULT_RELEASE_BIN); a run of this file alone builds it here."""
    made = os.environ.get("GEMVAULT_RELEASE_BIN")
    if made:
        return os.path.dirname(os.path.dirname(made))
    prefix = str(tmp_path_factory.mktemp("release") / "prefix")
    result = subprocess.run(["bash", os.path.join(ROOT, "install.sh"), "--prefix", prefix], capture_output=True, text=True,
                            timeout=1800, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result
    return prefix


def test_the_installed_binary_loads_no_library_from_its_own_folder(release_install):
    """SwiftPM links executables with RUNPATH $ORIGIN: a library planted in the binary's folder
    would be loaded before the system's. install.sh builds without it, and with the static Swift
    runtime needs no RUNPATH at all. This checks the binary install.sh built itself."""
    installed = os.path.join(release_install, "bin", "gemvault")
    dynamic = subprocess.run(["readelf", "-d", installed], capture_output=True, text=True, check=True).stdout
    assert "NEEDED" in dynamic and "$ORIGIN" not in dynamic and "RUNPATH" not in dynamic and "RPATH" not in dynamic, dynamic
    before = library_paths(installed)
    # Only the C library is loaded: the Swift runtime, libstdc++, libsodium, libedit, cmark-gfm
    # and libcrypto are linked in (Docs/performance.md, "Build configuration").
    assert "not found" not in before.values() and set(before) == {"libc.so.6", "libm.so.6"}, before
    # A copy of a library it needs, planted beside it, is not the one it loads.
    planted = os.path.join(release_install, "bin", "libm.so.6")
    shutil.copy(before["libm.so.6"], planted)
    try:
        assert library_paths(installed) == before
    finally:
        os.remove(planted)
    version = subprocess.run([installed, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("gemvault "), version


@pytest.mark.real_kdf  # a vault the release binary opens
def test_a_release_build_holds_no_test_hook_and_keeps_real_time(release_install, env):
    """Every GEMVAULT_TEST_ variable (SystemIO's TestHooks) is read by debug builds only: the
    release binary holds none of their names, and with the clock moved on ten years it still
    counts a key's age from the real time, where the debug binary does not."""
    release = os.path.join(release_install, "bin", "gemvault")
    with open(BIN, "rb") as handle:
        in_debug = set(re.findall(rb"GEMVAULT_TEST_[A-Z_]+", handle.read()))
    assert {b"GEMVAULT_TEST_KDF_FLOOR", b"GEMVAULT_TEST_CLOCK_OFFSET", b"GEMVAULT_TEST_WAIT_SPEEDUP"} <= in_debug, in_debug
    with open(release, "rb") as handle:
        assert b"GEMVAULT_TEST_" not in handle.read()
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    later = dict(env.vars, GEMVAULT_TEST_CLOCK_OFFSET=str(10 * 365 * 86400))
    moved = env.run("key", "which", "--json", env=later)
    assert moved.code == 0 and json.loads(moved.out)["age_days"] == 3650, moved
    real = subprocess.run([release, "key", "which", "--json", "--passphrase-file", env.passfile], env=later,
                          capture_output=True, text=True, timeout=120)
    assert real.returncode == 0 and json.loads(real.stdout)["age_days"] == 0, real


def test_a_release_build_ignores_the_test_kdf_floor_and_refuses_vaults_made_with_it(release_install, env):
    """The suite's cheap Argon2 floor is compiled into debug builds only: with the variable set,
    the release binary still writes libsodium's presets and refuses a floor vault from disk."""
    assert env.vars.get("GEMVAULT_TEST_KDF_FLOOR") == "1"
    release = os.path.join(release_install, "bin", "gemvault")
    made = subprocess.run([release, "init", "--kdf", "interactive", "--json", "--passphrase-file", env.passfile],
                          env=env.vars, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made
    slot = json.loads(env.run("inspect", "--json", passphrase=False).out)["slots"][0]
    assert (slot["ops_limit"], slot["mem_limit_bytes"]) == (2, 64 << 20), slot
    # The debug binary under the floor writes a vault the release binary will not open.
    floor_vault = os.path.join(env.root, "floor-vault")
    assert env.run("--vault", floor_vault, "init", "--kdf", "interactive", "--json").code == 0
    floor_slot = json.loads(env.run("--vault", floor_vault, "inspect", "--json", passphrase=False).out)["slots"][0]
    assert floor_slot["mem_limit_bytes"] < 64 << 20, floor_slot
    refused = subprocess.run([release, "--vault", floor_vault, "key", "list", "--passphrase-file", env.passfile],
                             env=env.vars, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 4 and "below the accepted minimum" in refused.stderr, refused
