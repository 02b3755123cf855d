"""The config layer: where the key comes from, every settings layer, and doctor."""
import json
import os
import stat
import subprocess

import pytest

from conftest import GOOD_KEY, Env, auth_key

ENV_KEY = "AQ.Environment_Key-0123456789abcdefghijklmnopqrsklmn"
OTHER_KEY = "AQ.Other_Environment-0123456789abcdefghijklmnopqrstu"
FILE_KEY = "AQ.Key_File-0123456789abcdefghijklmnopqrstuvwxyzklmn"


def which(env, *args, extra_env=None, passphrase=True):
    result = env.run("key", "which", "--json", *args, env=extra_env or {}, passphrase=passphrase)
    return result, (json.loads(result.out) if result.code == 0 else None)


def test_no_source_at_all_exits_5_with_hint(env):
    result = env.run("key", "which", passphrase=False)
    assert result.code == 5
    assert "no API key available" in result.err
    assert "gemvault: hint:" in result.err and "key set" in result.err and "GEMINI_API_KEY" in result.err


def test_env_precedence_and_both_variables_warning(env):
    result, data = which(env, extra_env={"GEMINI_API_KEY": ENV_KEY}, passphrase=False)
    assert data["source"] == "environment" and "GEMINI_API_KEY" in data["detail"]
    result, data = which(env, extra_env={"GEMINI_API_KEY": ENV_KEY, "GOOGLE_API_KEY": OTHER_KEY}, passphrase=False)
    assert "GOOGLE_API_KEY" in data["detail"]
    assert result.err.count("both GOOGLE_API_KEY and GEMINI_API_KEY are set; using GOOGLE_API_KEY") == 1
    assert data["masked"] == OTHER_KEY[:4] + "…" + OTHER_KEY[-4:]
    # The same value in both is not a conflict.
    result, _ = which(env, extra_env={"GEMINI_API_KEY": ENV_KEY, "GOOGLE_API_KEY": ENV_KEY}, passphrase=False)
    assert "both GOOGLE_API_KEY" not in result.err


def test_vault_key_and_shadowing_warning(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    env.run("key", "set", "work", input=ENV_KEY.replace("Environment", "WorkVaultKy"))
    result, data = which(env)
    assert data["source"] == "vault" and data["name"] == "default"
    assert data["masked"] == GOOD_KEY[:4] + "…" + GOOD_KEY[-4:] and data["age_days"] == 0
    result, data = which(env, "--key", "work")
    assert data["name"] == "work"
    env.run("config", "set", "key", "work")
    result, data = which(env)
    assert data["name"] == "work"
    missing = env.run("key", "which", "--key", "nope")
    assert missing.code == 1 and "no key named 'nope'" in missing.err
    # An exported key wins, and the vault is reported as shadowed.
    result, data = which(env, extra_env={"GEMINI_API_KEY": ENV_KEY}, passphrase=False)
    assert data["source"] == "environment"
    assert any(s["source"] == "vault" for s in data["shadowed"])
    assert "shadowed by environment variable GEMINI_API_KEY" in result.err


def test_vault_without_terminal_or_passphrase_source_exits_5(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    result = env.run("key", "which", passphrase=False)
    assert result.code == 5
    assert "no terminal to ask for its passphrase" in result.err and "--passphrase-fd" in result.err


def test_key_get_without_terminal_session_or_passphrase_source_exits_5(env):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    result = env.run("key", "get", passphrase=False)
    assert result.code == 5 and result.out == "", result
    assert "no terminal to ask for its passphrase" in result.err and "gemvault unlock" in result.err
    missing = env.run("key", "get", "--vault", os.path.join(env.root, "absent"), passphrase=False)
    assert missing.code == 1 and "no vault at" in missing.err


def test_key_file_flag_wins_and_is_checked(env):
    path = os.path.join(env.root, "k")
    env.write_private(path, FILE_KEY + "\n")
    result, data = which(env, "--key-file", path, extra_env={"GEMINI_API_KEY": ENV_KEY}, passphrase=False)
    assert data["source"] == "key-file-flag"
    assert any(s["source"] == "environment" for s in data["shadowed"])
    os.chmod(path, 0o644)
    loose = env.run("key", "which", "--key-file", path, passphrase=False)
    assert loose.code == 1 and "chmod 600 %s" % path in loose.err
    os.chmod(path, 0o600)
    link = os.path.join(env.root, "klink")
    os.symlink(path, link)
    linked = env.run("key", "which", "--key-file", link, passphrase=False)
    assert linked.code == 1 and "symbolic link" in linked.err


def test_default_key_file_comes_after_vault(env):
    key_file = os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault/api-key")
    env.write_private(key_file, FILE_KEY)
    result, data = which(env, passphrase=False)
    assert data["source"] == "key-file" and data["masked"] == "AQ.K…klmn"
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    result, data = which(env)
    assert data["source"] == "vault"
    assert any(s["source"] == "key-file" for s in data["shadowed"])


def write_script(env, name, body):
    path = os.path.join(env.root, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o700)
    return path


def test_key_command_success_failure_and_timeout(env):
    ok = write_script(env, "ok.sh", 'echo "  %s  "\n' % FILE_KEY)
    env.run("config", "set", "--file", "key_command", "%s --flag 'two words'" % ok)
    result, data = which(env, passphrase=False)
    assert result.code == 0, result
    assert data["source"] == "key-command" and data["masked"] == "AQ.K…klmn"
    fail = write_script(env, "fail.sh", 'echo "vault is sealed" >&2\nexit 3\n')
    result = env.run("key", "which", env={"GEMVAULT_KEY_COMMAND": fail}, passphrase=False)
    assert result.code == 5
    assert "exited with status 3" in result.err and "vault is sealed" in result.err
    slow = write_script(env, "slow.sh", "sleep 30\n")
    result = env.run("key", "which", env={"GEMVAULT_KEY_COMMAND": slow, "GEMVAULT_KEY_COMMAND_TIMEOUT": "1"}, passphrase=False, timeout=20)
    assert result.code == 5 and "timed out after 1 s" in result.err
    empty = write_script(env, "empty.sh", "true\n")
    result = env.run("key", "which", env={"GEMVAULT_KEY_COMMAND": empty}, passphrase=False)
    assert result.code == 5 and "printed nothing" in result.err
    result = env.run("key", "which", env={"GEMVAULT_KEY_COMMAND": "/nonexistent/cmd"}, passphrase=False)
    assert result.code == 5 and "/nonexistent/cmd" in result.err


def test_key_command_runs_without_a_shell(env):
    marker = os.path.join(env.root, "pwned")
    echo = write_script(env, "echo.sh", 'printf "%s" "$1"\n')
    env.run("config", "set", "--file", "key_command", "%s AIzaSyNoShell_0123456789abcdefghijklmnop;touch%s" % (echo, marker))
    result, data = which(env, passphrase=False)
    assert result.code == 0
    assert not os.path.exists(marker)


def explain(env, *args, extra_env=None, passphrase=True):
    result = env.run("config", "explain", "--json", *args, env=extra_env or {}, passphrase=passphrase)
    assert result.code == 0, result
    return {s["name"]: s for s in json.loads(result.out)["settings"]}, result


def test_every_settings_layer_in_order(env):
    settings, _ = explain(env, passphrase=False)
    assert settings["model"]["layer"] == "default" and settings["model"]["value"]
    assert settings["endpoint"]["value"] == "https://generativelanguage.googleapis.com"
    env.run("config", "set", "--file", "model", "from-file")
    env.run("config", "set", "--file", "timeout", "11")
    settings, _ = explain(env, passphrase=False)
    assert settings["model"]["value"] == "from-file" and settings["model"]["layer"] == "config-file"
    env.init()
    env.run("config", "set", "model", "from-vault")
    settings, _ = explain(env)
    assert settings["model"]["value"] == "from-vault" and settings["model"]["layer"] == "vault"
    assert settings["timeout"]["layer"] == "config-file"
    settings, _ = explain(env, extra_env={"GEMVAULT_MODEL": "from-env"})
    assert settings["model"]["value"] == "from-env" and settings["model"]["origin"] == "environment GEMVAULT_MODEL"
    settings, _ = explain(env, "--model", "from-flag", extra_env={"GEMVAULT_MODEL": "from-env"})
    assert settings["model"]["value"] == "from-flag" and settings["model"]["origin"] == "flag --model"
    settings, result = explain(env, "--no-vault")
    assert settings["model"]["value"] == "from-file"


def test_explain_human_output_and_masking(env):
    env.run("config", "set", "--file", "key_command", "op read op://vault/gemini/credential")
    result = env.run("config", "explain", passphrase=False)
    assert result.code == 0
    lines = {line.split()[0]: line for line in result.out.splitlines()[1:]}
    assert "default" in lines["model"]
    assert "op://vault/gemini/credential" not in result.out
    assert "op r…tial" in lines["key_command"]


def test_validation_errors_name_their_layer(env):
    env.run("config", "set", "--file", "temperature", "1")
    path = os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault/config.json")
    with open(path, "w") as handle:
        json.dump({"version": 1, "temperature": 3.5, "mystery": 1}, handle)
    result = env.run("config", "explain", passphrase=False)
    assert result.code == 1
    assert "config.json: temperature: 3.5 is outside 0...2" in result.err
    assert "unknown setting 'mystery'" in result.err
    with open(path, "w") as handle:
        json.dump({"version": 1}, handle)
    result = env.run("config", "explain", env={"GEMVAULT_TOP_P": "2"}, passphrase=False)
    assert result.code == 1 and "GEMVAULT_TOP_P: top_p: 2 is outside 0...1" in result.err
    result = env.run("config", "explain", "--temperature", "hot", passphrase=False)
    assert result.code == 64 and "--temperature: temperature: 'hot' is not a number" in result.err
    with open(path, "w") as handle:
        json.dump({"version": 2}, handle)
    result = env.run("config", "explain", passphrase=False)
    assert result.code == 1 and "version 2 is not supported" in result.err
    with open(path, "w") as handle:
        handle.write("{not json")
    assert env.run("config", "explain", passphrase=False).code == 1


def test_insecure_endpoint_refused_unless_loopback_or_allowed(env):
    # Shown by config explain; refused by a command that sends to it.
    result = env.run("config", "explain", env={"GEMVAULT_ENDPOINT": "http://example.com"}, passphrase=False)
    assert result.code == 0 and "http://example.com" in result.out and "plain http off loopback" in result.err, result
    used = env.run("ask", "hi", env={"GEMVAULT_ENDPOINT": "http://example.com", "GEMINI_API_KEY": auth_key("InsecureEndpoint")}, passphrase=False)
    assert used.code == 64 and "GEMVAULT_ENDPOINT: endpoint" in used.err and "--allow-insecure-endpoint" in used.err, used
    settings, _ = explain(env, extra_env={"GEMVAULT_ENDPOINT": "http://127.0.0.1:9"}, passphrase=False)
    assert settings["endpoint"]["value"] == "http://127.0.0.1:9"
    settings, _ = explain(env, "--allow-insecure-endpoint", extra_env={"GEMVAULT_ENDPOINT": "http://example.com"}, passphrase=False)
    assert settings["endpoint"]["value"] == "http://example.com"
    settings, _ = explain(env, extra_env={"GOOGLE_GEMINI_BASE_URL": "https://proxy.example/"}, passphrase=False)
    assert settings["endpoint"]["value"] == "https://proxy.example"
    assert settings["endpoint"]["origin"] == "environment GOOGLE_GEMINI_BASE_URL"


def test_config_file_is_private_and_versioned(env):
    assert env.run("config", "set", "--file", "temperature", "0.5", passphrase=False).code == 0
    path = os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault/config.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        assert json.load(handle) == {"version": 1, "temperature": 0.5}
    assert env.run("config", "get", "--file", "temperature", passphrase=False).out == "0.5\n"
    assert env.run("config", "unset", "--file", "temperature", passphrase=False).code == 0


def test_dotenv_in_working_directory_is_never_read(env):
    workdir = os.path.join(env.root, "project")
    os.makedirs(workdir)
    with open(os.path.join(workdir, ".env"), "w") as handle:
        handle.write("GEMINI_API_KEY=%s\n" % ENV_KEY)
    proc = subprocess.run([__import__("conftest").BIN, "key", "which"], cwd=workdir, env=env.vars, capture_output=True, text=True)
    assert proc.returncode == 5


def doctor(env, extra_env=None):
    """Runs doctor from a shell whose core-dump limit is 0, whatever the limit of the machine running the tests."""
    full = dict(env.vars)
    full.update(extra_env or {})
    proc = subprocess.run(["bash", "-c", 'ulimit -S -c 0; "$0" "$@"; exit $?', __import__("conftest").BIN, "doctor", "--json"],
                          env=full, capture_output=True, text=True)
    from conftest import Result
    result = Result(proc)
    return result, json.loads(result.out)


def machine_checks(findings):
    return [f for f in findings if f["check"] not in ("hidepid",)]


def test_doctor_on_a_clean_setup(env):
    env.init()
    result, report = doctor(env)
    # hidepid belongs to the machine, not to this user's set-up: it is checked in its own test.
    assert machine_checks(report["findings"]) == [], report
    assert set(report["checks"]) >= {"files", "hidepid", "core-dumps", "swap", "environment", "shell-startup", "dotenv", "endpoint"}
    assert result.code == (0 if report["clean"] else 1)
    human = subprocess.run(["bash", "-c", 'ulimit -S -c 0; "$0" doctor; exit $?', __import__("conftest").BIN],
                           env=env.vars, capture_output=True, text=True)
    assert human.returncode == result.code


def test_doctor_finds_a_loose_setup(env):
    env.init()
    os.chmod(env.vault, 0o644)
    os.chmod(os.path.dirname(env.vault), 0o775)
    key_file = os.path.join(env.vars["XDG_CONFIG_HOME"], "gemvault/api-key")
    env.write_private(key_file, FILE_KEY, mode=0o640)
    with open(os.path.join(env.home, ".bashrc"), "w") as handle:
        handle.write("alias ll='ls -l'\nexport GEMINI_API_KEY=%s\n# GOOGLE_API_KEY=commented\n" % ENV_KEY)
    project = os.path.join(env.home, "code", "app")
    os.makedirs(project)
    with open(os.path.join(project, ".env"), "w") as handle:
        handle.write("GOOGLE_API_KEY=%s\n" % ENV_KEY)
    result, report = doctor(env, {"GEMINI_API_KEY": ENV_KEY, "GEMVAULT_ENDPOINT": "http://127.0.0.1:8080"})
    assert result.code == 1 and not report["clean"]
    messages = "\n".join(f["message"] + " | " + f["fix"] for f in report["findings"])
    assert "chmod 600 %s" % env.vault in messages
    assert "chmod go-w %s" % os.path.dirname(env.vault) in messages
    assert "chmod 600 %s" % key_file in messages
    assert ".bashrc:2 sets GEMINI_API_KEY" in messages
    assert ".bashrc:3" not in messages
    assert os.path.join(project, ".env") in messages
    assert "GEMINI_API_KEY is set in this environment" in messages
    assert "plain http" in messages
    assert ENV_KEY not in result.out and ENV_KEY not in result.err
    human = env.run("doctor", env={"GEMINI_API_KEY": ENV_KEY}, passphrase=False)
    assert human.code == 1 and "fix:" in human.out


def test_doctor_notices_a_shell_that_allows_core_dumps(env):
    env.init()
    script = 'ulimit -S -c 0; "$0" doctor --json; ulimit -S -c unlimited; "$0" doctor --json; true'
    proc = subprocess.run(["bash", "-c", script, __import__("conftest").BIN], env=env.vars, capture_output=True, text=True)
    decoder = json.JSONDecoder()
    first, end = decoder.raw_decode(proc.stdout)
    second, _ = decoder.raw_decode(proc.stdout[end:].lstrip())
    assert not any(f["check"] == "core-dumps" for f in first["findings"])
    assert any(f["check"] == "core-dumps" and "ulimit -c is unlimited" in f["message"] for f in second["findings"])


def test_doctor_hidepid_check_against_a_real_proc_mount(env):
    if os.geteuid() != 0 or subprocess.run(["which", "unshare"], capture_output=True).returncode != 0:
        pytest.skip("needs root and unshare to mount a private /proc with hidepid")
    env.init()
    script = "mount -t proc -o hidepid=invisible proc /proc && exec \"$@\""
    argv = ["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", script, "sh",
            __import__("conftest").BIN, "doctor", "--json"]
    proc = subprocess.run(argv, env=env.vars, capture_output=True, text=True)
    if "Operation not permitted" in proc.stderr or proc.returncode not in (0, 1):
        pytest.skip("this sandbox does not allow mounting /proc: %s" % proc.stderr.strip())
    report = json.loads(proc.stdout)
    assert report["findings"] == [] and report["clean"] and proc.returncode == 0
    plain, report = doctor(env)
    with open("/proc/mounts") as handle:
        hidden = any("hidepid" in line for line in handle if line.split()[2] == "proc")
    assert any(f["check"] == "hidepid" for f in report["findings"]) == (not hidden)


@pytest.mark.parametrize("args, message", [
    (["ask", "--model", "bad?name", "hi"], "--model: 'bad?name' is not a valid model name"),
    (["chat", "--temperature", "9"], "--temperature: temperature: 9 is outside 0...2"),
    (["config", "explain", "--timeout", "soon"], "--timeout: timeout: 'soon' is not a number"),
    (["key", "rotate", "--timeout", "x"], "--timeout: timeout: 'x' is not a number"),
    (["passwd", "--new-passphrase-fd", "x"], "--new-passphrase-fd takes a file descriptor number"),
    (["history", "export", "0000", "--format", "pdf"], "--format takes md or json, not 'pdf'"),
    (["key", "rm", "bad/name"], "'bad/name' is not a valid name"),
    (["unlock", "--idle", "forever"], "--idle takes a duration"),
])
def test_a_bad_option_value_is_refused_before_any_prompt(env, args, message):
    from conftest import BIN
    from ptyrun import PtySession
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    s = PtySession([BIN] + args, env.vars)
    try:
        assert s.wait(timeout=20) == 64, s.text()
        assert message in s.text() and "Passphrase" not in s.text() and "API key" not in s.text(), s.text()
    finally:
        s.close()
