"""./test sets itself up on a fresh machine: the Debian packages the tests need are installed as
root, and named with the one command that installs them otherwise, before anything is built.
dpkg-query and apt-get are stand-ins on PATH here, so nothing on the machine changes."""
import os
import shutil
import stat
import subprocess

import pytest

from conftest import ROOT


def stand_ins(folder, missing):
    """A dpkg-query that reports `missing` as not installed, and an apt-get that records its
    arguments and fails to install, so that ./test stops right after it."""
    os.makedirs(folder)
    scripts = {
        "dpkg-query": "#!/bin/sh\nfor p in %s; do [ \"$3\" = \"$p\" ] && exit 1; done\nprintf 'install ok installed'\n" % " ".join(missing),
        "apt-get": "#!/bin/sh\necho \"$@\" >> %s/apt-get.log\n[ \"$1\" = update ] || exit 3\n" % folder,
    }
    for name, text in scripts.items():
        path = os.path.join(folder, name)
        with open(path, "w") as handle:
            handle.write(text)
        os.chmod(path, 0o755)


def run_test_script(tmp_path, missing, user=None):
    fake = str(tmp_path / "fake-bin")
    stand_ins(fake, missing)
    # A copy of the script and its package list: it must stop before it builds anything.
    checkout = tmp_path / "checkout"
    os.makedirs(checkout / "BuildSupport")
    shutil.copy(os.path.join(ROOT, "test"), checkout)
    shutil.copy(os.path.join(ROOT, "BuildSupport", "test-packages.txt"), checkout / "BuildSupport")
    environment = {"PATH": fake + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)}
    argv = ["bash", str(checkout / "test")]
    if user:
        for folder in (tmp_path, checkout, checkout / "BuildSupport"):
            os.chmod(folder, 0o755)
        argv = [shutil.which("runuser"), "-u", user, "--", "env", "-i"] + ["%s=%s" % item for item in environment.items()] + argv
    return subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=60, cwd=checkout), fake


def test_as_root_the_missing_packages_are_installed_before_anything_runs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the install path is taken as root")
    result, fake = run_test_script(tmp_path, ["age", "softhsm2"])
    assert result.returncode == 3, result
    assert "test: installing age softhsm2" in result.stderr
    with open(os.path.join(fake, "apt-get.log")) as handle:
        calls = handle.read().splitlines()
    assert calls[0].split() == ["update", "-qq"]
    assert calls[1].split()[-2:] == ["age", "softhsm2"] and "install" in calls[1].split()
    assert "debug build" not in result.stderr


def test_as_a_user_the_missing_packages_are_named_with_one_command():
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("needs root to run the script as another account (nobody)")
    import pathlib
    import tempfile
    # Outside root's home, which the other account cannot enter.
    reachable = pathlib.Path(tempfile.mkdtemp(prefix="gemvault-test-script-"))
    try:
        result, fake = run_test_script(reachable, ["age"], user="nobody")
        assert result.returncode == 1, result
        assert "test: missing packages: age" in result.stderr
        assert "  sudo apt-get install -y age" in result.stderr
        assert os.path.isdir(fake) and not os.path.exists(os.path.join(fake, "apt-get.log"))
        assert "debug build" not in result.stderr
    finally:
        shutil.rmtree(reachable, ignore_errors=True)


def test_the_package_list_names_what_the_suite_uses():
    with open(os.path.join(ROOT, "BuildSupport", "test-packages.txt")) as handle:
        listed = {line.split()[0] for line in handle if line.strip() and not line.startswith("#")}
    for package in ("age", "openssh-client", "softhsm2", "tmux", "libsodium-dev", "python3-venv"):
        assert package in listed
    with open(os.path.join(ROOT, ".ci", "run")) as handle:
        assert "./test" in handle.read()
