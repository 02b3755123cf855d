"""The vault as a user meets it: init, keys, settings, passphrases, recovery, damage and permissions."""
import json
import os
import re
import select
import signal
import stat
import subprocess
import time

import pytest

from conftest import BIN, GOOD_KEY, PASSPHRASE, Env

RECOVERY_FORMAT = re.compile(r"^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){7}$")


def test_init_prints_recovery_code_once_and_creates_private_files(env):
    result = env.run("init", "--kdf", "interactive")
    assert result.code == 0, result
    code = result.out.strip()
    assert RECOVERY_FORMAT.match(code), result.out
    assert "shown only this once" in result.err
    assert stat.S_IMODE(os.stat(env.vault).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(env.vault)).st_mode) == 0o700
    # The code is never written anywhere on disk.
    with open(env.vault, "rb") as handle:
        assert code.encode() not in handle.read()


def test_init_json_and_refusal_to_overwrite(env):
    code = env.init()
    assert RECOVERY_FORMAT.match(code)
    again = env.run("init", "--kdf", "interactive")
    assert again.code == 1 and "already exists" in again.err and "--force" in again.err
    forced = env.run("init", "--kdf", "interactive", "--force")
    assert forced.code == 0
    assert os.path.exists(env.vault + ".bak")


@pytest.mark.real_kdf
def test_default_kdf_is_moderate(env):
    assert env.run("init").code == 0
    info = json.loads(env.run("inspect", "--json", passphrase=False).out)
    assert info["slots"][0]["preset"] == "moderate"
    assert info["slots"][0]["mem_limit_bytes"] == 268435456


def test_key_round_trip_list_and_remove(env):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY + "\n").code == 0
    second = "AQ.Other-Key_0123456789abcdefghijklmnopqrstuvwxyklmn"
    assert env.run("key", "set", "work", input=second).code == 0
    got = env.run("key", "get")
    assert got.code == 0 and got.out == GOOD_KEY + "\n"
    assert env.run("key", "get", "work").out == second + "\n"
    listing = env.run("key", "list")
    assert "AQ.A…MhKp" in listing.out and "AQ.O…klmn" in listing.out and GOOD_KEY not in listing.out
    entries = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert [e["name"] for e in entries] == ["default", "work"]
    assert entries[0]["masked"] == "AQ.A…MhKp"
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entries[0]["created"])
    assert env.run("key", "rm", "work").code == 0
    missing = env.run("key", "get", "work")
    assert missing.code == 1 and "no key named 'work'" in missing.err


def test_key_set_warns_on_odd_values_and_refuses_empty(env):
    env.init()
    odd = env.run("key", "set", input="not-a-gemini-key-but-stored\n")
    assert odd.code == 0 and "does not look like a Google API key" in odd.err
    assert env.run("key", "set", input="   \n").code == 64
    good = env.run("key", "set", input=GOOD_KEY)
    assert "does not look like" not in good.err


def test_replacing_a_key_keeps_history_count(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    env.run("key", "set", input=GOOD_KEY.replace("D3", "E4"))
    entries = json.loads(env.run("key", "list", "--json").out)["keys"]
    assert entries[0]["previous_versions"] == 1


def test_wrong_passphrase_exits_3_and_changes_nothing(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    before = env.vault_bytes()
    env.write_private(env.passfile + "2", "not the right one at all\n")
    for args in (["key", "get"], ["key", "set"], ["config", "set", "model", "x"], ["passwd"]):
        result = env.run(*args, "--passphrase-file", env.passfile + "2", input=GOOD_KEY,
                         env={}, passphrase=False) if args[0] != "passwd" else \
            env.run("passwd", "--passphrase-file", env.passfile + "2", "--new-passphrase-file", env.passfile, passphrase=False)
        assert result.code == 3, (args, result)
        assert "wrong passphrase" in result.err
        assert env.vault_bytes() == before


def test_passphrase_from_fd(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    read_end, write_end = os.pipe()
    os.write(write_end, (PASSPHRASE + "\n").encode())
    os.close(write_end)
    result = env.run("key", "get", "--passphrase-fd", str(read_end), pass_fds=(read_end,), passphrase=False)
    os.close(read_end)
    assert result.code == 0 and result.out == GOOD_KEY + "\n"


def test_no_terminal_and_no_passphrase_source(env):
    env.init()
    result = env.run("key", "list", passphrase=False)
    assert result.code == 1
    assert "no terminal" in result.err and "--passphrase-fd" in result.err


def test_empty_passphrase_refused_and_short_one_warned(env):
    env.write_private(env.passfile, "\n")
    assert env.run("init", "--kdf", "interactive").code == 64
    assert not os.path.exists(env.vault)
    env.write_private(env.passfile, "short\n")
    result = env.run("init", "--kdf", "interactive")
    assert result.code == 0 and "shorter than 12 characters" in result.err


def test_passwd_keeps_every_key_and_recovery_still_works(env):
    code = env.init()
    env.run("key", "set", input=GOOD_KEY)
    env.run("config", "set", "model", "gemini-test")
    new = os.path.join(env.root, "new")
    env.write_private(new, "a brand new passphrase\n")
    result = env.run("passwd", "--new-passphrase-file", new)
    assert result.code == 0, result
    assert env.run("key", "get").code == 3
    assert env.run("key", "get", "--passphrase-file", new, passphrase=False).out == GOOD_KEY + "\n"
    assert env.run("config", "get", "model", "--passphrase-file", new, passphrase=False).out == "gemini-test\n"
    # The recovery code outlives a passphrase change.
    third = os.path.join(env.root, "third")
    env.write_private(third, "third passphrase here\n")
    assert env.run("recover", "--new-passphrase-file", third, input=code.lower() + "\n", passphrase=False).code == 0


def test_recover_with_code_and_wrong_code(env):
    code = env.init()
    env.run("key", "set", input=GOOD_KEY)
    before = env.vault_bytes()
    new = os.path.join(env.root, "new")
    env.write_private(new, "recovered passphrase 123\n")
    wrong = "0000-0000-0000-0000-0000-0000-0000-0000"
    bad = env.run("recover", "--new-passphrase-file", new, input=wrong + "\n", passphrase=False)
    assert bad.code == 3 and "wrong recovery code" in bad.err
    assert env.vault_bytes() == before
    good = env.run("recover", "--new-passphrase-file", new, input=code.replace("-", " ") + "\n", passphrase=False)
    assert good.code == 0, good
    assert env.run("key", "get", "--passphrase-file", new, passphrase=False).out == GOOD_KEY + "\n"


def test_inspect_needs_no_passphrase(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    result = env.run("inspect", passphrase=False)
    assert result.code == 0
    assert "format version: 2" in result.out and "passphrase" in result.out and "recovery" in result.out
    info = json.loads(env.run("inspect", "--json", passphrase=False).out)
    assert info["format_version"] == 2 and info["generation"] == 2 and len(info["vault_id"]) == 32
    assert [s["kind"] for s in info["slots"]] == ["passphrase", "recovery"]
    assert info["file_bytes"] == os.path.getsize(env.vault)


def test_generation_grows_on_every_save_and_size_hides_key_length(env):
    env.init()
    sizes = set()
    for i, key in enumerate([GOOD_KEY[:20], GOOD_KEY, GOOD_KEY + "x" * 60]):
        env.run("key", "set", input=key)
        sizes.add(os.path.getsize(env.vault))
        info = json.loads(env.run("inspect", "--json", passphrase=False).out)
        assert info["generation"] == i + 2
    assert len(sizes) == 1, sizes


def test_every_byte_change_and_truncation_is_detected(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    original = env.vault_bytes()
    with open(env.vault + ".orig", "wb") as handle:
        handle.write(original)
    seen_codes = set()
    for index in range(len(original)):
        damaged = bytearray(original)
        damaged[index] ^= 0x01 << (index % 8)
        with open(env.vault, "wb") as handle:
            handle.write(damaged)
        result = env.run("inspect", passphrase=False)
        assert result.code == 4, (index, result)
        assert "Fatal error" not in result.err and GOOD_KEY not in result.err
        seen_codes.add(result.code)
    for length in list(range(0, 64)) + list(range(64, len(original), 7)):
        with open(env.vault, "wb") as handle:
            handle.write(original[:length])
        result = env.run("key", "get")
        assert result.code == 4, (length, result)
        assert "damaged" in result.err
    with open(env.vault, "wb") as handle:
        handle.write(original)
    assert env.run("key", "get").out == GOOD_KEY + "\n"


def test_tampering_with_recomputed_checksum_is_reported_as_tampering(env):
    import hashlib
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    data = bytearray(env.vault_bytes())
    data[26] ^= 1  # the generation counter, covered only by the AEAD
    body = bytes(data[:-32])
    forged = body + hashlib.blake2b(body, digest_size=32).digest()
    with open(env.vault, "wb") as handle:
        handle.write(forged)
    result = env.run("key", "get")
    assert result.code == 4 and "failed authentication" in result.err


def test_kdf_downgrade_and_memory_bomb_are_refused(env):
    import hashlib, struct
    env.init()
    original = env.vault_bytes()
    # Slot 0 starts at offset 35: kind, algorithm, opslimit (u32), memlimit (u64).
    for ops, mem, word in ((1, 8192, "below"), (2, 1 << 40, "above")):
        data = bytearray(original)
        data[37:41] = struct.pack("<I", ops)
        data[41:49] = struct.pack("<Q", mem)
        body = bytes(data[:-32])
        with open(env.vault, "wb") as handle:
            handle.write(body + hashlib.blake2b(body, digest_size=32).digest())
        result = env.run("key", "list")
        assert result.code == 4, result
        assert word in result.err


def test_unsupported_version(env):
    import hashlib
    env.init()
    data = bytearray(env.vault_bytes())
    data[8] = 9
    body = bytes(data[:-32])
    with open(env.vault, "wb") as handle:
        handle.write(body + hashlib.blake2b(body, digest_size=32).digest())
    result = env.run("inspect", passphrase=False)
    assert result.code == 4 and "format version 9" in result.err


def test_not_a_vault(env):
    os.makedirs(os.path.dirname(env.vault), mode=0o700)
    env.write_private(env.vault, "hello, I am a text file\n")
    result = env.run("key", "list")
    assert result.code == 4 and "not a gemvault vault" in result.err


def test_group_readable_vault_and_symlink_are_refused(env):
    env.init()
    os.chmod(env.vault, 0o640)
    result = env.run("key", "list")
    assert result.code == 1
    assert "refusing to use %s" % env.vault in result.err
    assert "chmod 600 %s" % env.vault in result.err
    os.chmod(env.vault, 0o600)
    link = os.path.join(env.root, "link-vault")
    os.symlink(env.vault, link)
    result = env.run("--vault", link, "key", "list")
    assert result.code == 1 and "symbolic link" in result.err


def test_group_readable_passphrase_file_is_refused(env):
    env.init()
    os.chmod(env.passfile, 0o644)
    result = env.run("key", "list")
    assert result.code == 1 and "chmod 600 %s" % env.passfile in result.err


def test_vault_path_overrides(env):
    custom = os.path.join(env.root, "elsewhere", "my.vault")
    assert env.run("init", "--kdf", "interactive", env={"GEMVAULT_VAULT": custom}).code == 0
    assert os.path.exists(custom) and not os.path.exists(env.vault)
    flag = os.path.join(env.root, "flag.vault")
    assert env.run("--vault", flag, "init", "--kdf", "interactive", env={"GEMVAULT_VAULT": custom}).code == 0
    assert os.path.exists(flag)


def test_ten_concurrent_writers_lose_nothing(env):
    env.init()
    procs = []
    for i in range(10):
        argv = [BIN, "key", "set", "k%d" % i, "--passphrase-file", env.passfile]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env.vars)
        procs.append(p)
    for i, p in enumerate(procs):
        p.communicate(("AIzaSyConcurrent%02d" % i + "x" * 20).encode(), timeout=120)
        assert p.returncode == 0
    names = [e["name"] for e in json.loads(env.run("key", "list", "--json").out)["keys"]]
    assert names == ["k%d" % i for i in range(10)]
    info = json.loads(env.run("inspect", "--json", passphrase=False).out)
    assert info["generation"] == 11


def test_failing_write_leaves_old_vault_intact(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    before = env.vault_bytes()
    # A file size limit below the vault's size makes the temp-file write fail with EFBIG.
    argv = ["bash", "-c", 'trap "" XFSZ; ulimit -f 0; exec "$@"', "limit", BIN, "key", "set", "other",
            "--passphrase-file", env.passfile]
    proc = subprocess.run(argv, input="AIzaSyAnother_Key-0123456789abcdefghijk", env=env.vars, capture_output=True, text=True)
    assert proc.returncode == 1, proc
    # (It once asserted "write", which only the pytest folder's name held.)
    assert "could not save the vault" in proc.stderr and "File too large; the vault is unchanged" in proc.stderr, proc.stderr
    assert env.vault_bytes() == before
    leftovers = [n for n in os.listdir(os.path.dirname(env.vault)) if ".tmp" in n]
    assert leftovers == []
    assert env.run("key", "get").out == GOOD_KEY + "\n"


def test_kill_9_during_saves_always_leaves_an_openable_vault(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    for round_ in range(12):
        p = subprocess.Popen([BIN, "key", "set", "r%d" % round_, "--passphrase-file", env.passfile],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env.vars)
        p.stdin.write(b"AIzaSyCrashTest-0123456789abcdefghijklm")
        p.stdin.close()
        time.sleep(0.03 * (round_ % 6))
        p.send_signal(signal.SIGKILL)
        p.wait()
        result = env.run("key", "get")
        assert result.code == 0 and result.out == GOOD_KEY + "\n", (round_, result)


def test_config_settings_in_vault(env):
    env.init()
    assert env.run("config", "set", "model", "gemini-custom").code == 0
    assert env.run("config", "set", "temperature", "0.25").code == 0
    assert env.run("config", "get", "model").out == "gemini-custom\n"
    assert json.loads(env.run("config", "list", "--json").out)["settings"] == {"model": "gemini-custom", "temperature": "0.25"}
    bad = env.run("config", "set", "temperature", "3.5")
    assert bad.code == 64 and "temperature: 3.5 is outside 0...2" in bad.err
    unknown = env.run("config", "set", "colour", "red")
    assert unknown.code == 64 and "unknown setting 'colour'" in unknown.err
    assert env.run("config", "unset", "model").code == 0
    assert env.run("config", "get", "model").code == 1


def test_help_for_every_command_and_usage_errors():
    env_vars = {"PATH": os.environ["PATH"], "HOME": "/nonexistent"}
    top = subprocess.run([BIN, "--help"], capture_output=True, text=True, env=env_vars)
    assert top.returncode == 0 and "Commands:" in top.stdout
    commands = [line.split()[0:2] for line in top.stdout.splitlines() if line.startswith("  ") and not line.strip().startswith("--")]
    assert len(commands) >= 15
    for words in (["init"], ["key", "set"], ["key", "get"], ["key", "list"], ["key", "rm"], ["config", "set"],
                  ["passwd"], ["recover"], ["inspect"], ["chat"], ["ask"], ["models"], ["doctor"], ["key", "which"], ["config", "explain"]):
        for form in (words + ["--help"], ["help"] + words):
            out = subprocess.run([BIN] + form, capture_output=True, text=True, env=env_vars)
            assert out.returncode == 0 and out.stdout.startswith("Usage: gemvault " + " ".join(words)), (form, out)
    version = subprocess.run([BIN, "--version"], capture_output=True, text=True)
    assert re.match(r"^gemvault \d+\.\d+\.\d+\n$", version.stdout)
    for bad in (["frobnicate"], ["key"], ["key", "get", "a", "b"], ["init", "--kdf"], ["init", "--kdf", "fast"], ["key", "list", "--bogus"]):
        out = subprocess.run([BIN] + bad, capture_output=True, text=True, env=env_vars)
        assert out.returncode == 64, (bad, out)
        assert out.stderr.startswith("gemvault: error: ")


def test_vault_commands_never_load_the_network_stack(env):
    env.init()
    env.run("key", "set", input=GOOD_KEY)
    for args in (["--version"], ["key", "get"], ["key", "list"], ["inspect"]):
        result = env.run(*args, env={"LD_DEBUG": "libs"}, passphrase=args != ["--version"])
        assert result.code == 0, result
        assert "libcurl" not in result.err, args
        assert "libFoundationNetworking" not in result.err


def test_ask_starts_loading_the_network_library_as_soon_as_it_is_parsed(env):
    """ask, chat and models load libcurl on a second thread from the moment argv is parsed
    (Docs/performance.md): while ask still waits for its standard input, the library is
    already being loaded; the process waits for the load before it exits."""
    proc = subprocess.Popen([BIN, "ask"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(env.vars, LD_DEBUG="libs"), start_new_session=True)
    seen, deadline = b"", time.time() + 10
    try:
        while b"libcurl.so.4" not in seen and time.time() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 0.5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
        assert b"libcurl.so.4" in seen, seen[-2000:]
        assert proc.poll() is None  # still reading standard input
        _, err = proc.communicate(b"hello\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # No key anywhere: the documented exit code, after the load has finished.
    assert proc.returncode == 5 and b"gemvault: error:" in err, err[-2000:]


def test_core_dumps_are_off_while_waiting_for_input(env):
    env.init()
    p = subprocess.Popen([BIN, "key", "set", "--passphrase-file", env.passfile], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env.vars)
    try:
        deadline = time.time() + 5
        limits = ""
        while time.time() < deadline:
            with open("/proc/%d/limits" % p.pid) as handle:
                limits = handle.read()
            if re.search(r"Max core file size\s+0\s+0", limits):
                break
            time.sleep(0.02)
        assert re.search(r"Max core file size\s+0\s+0", limits), limits
    finally:
        p.communicate(GOOD_KEY.encode())


def test_secrets_never_reach_argv_or_errors(env):
    code = env.init()
    env.run("key", "set", input=GOOD_KEY)
    p = subprocess.Popen([BIN, "key", "set", "x", "--passphrase-file", env.passfile], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env.vars)
    time.sleep(0.2)
    with open("/proc/%d/cmdline" % p.pid, "rb") as handle:
        cmdline = handle.read()
    p.communicate(GOOD_KEY.encode())
    assert GOOD_KEY.encode() not in cmdline and PASSPHRASE.encode() not in cmdline
    wrong = env.run("key", "get", "--passphrase-file", env.passfile + ".nope", passphrase=False)
    assert GOOD_KEY not in wrong.err and code not in wrong.err


def test_cli_reference_in_docs_matches_the_command_table():
    generated = subprocess.run([BIN, "help", "--reference"], capture_output=True, text=True).stdout
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "Docs", "cli.md")) as handle:
        doc = handle.read()
    section = doc.split("<!-- BEGIN GENERATED REFERENCE -->\n")[1].split("<!-- END GENERATED REFERENCE -->")[0]
    assert section == generated


def test_vault_owned_by_someone_else_is_refused(env):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the vault to another uid")
    env.init()
    os.chown(env.vault, 54321, 54321)
    result = env.run("key", "list")
    assert result.code == 1
    assert "owned by uid 54321, not by you" in result.err and "use a file of your own" in result.err and "chown" not in result.err


def test_key_get_without_a_session_reads_the_vault_once_and_opens_the_terminal_once(env):
    """issue 26: the passphrase walk of `key get` reads the vault file once and opens /dev/tty
    once (it was twice each: a check and the open, a probe and the prompt), counted by strace."""
    import re
    import shutil
    from ptyrun import PtySession
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed, so the opens cannot be counted")
    env.init()
    assert env.run("key", "set", input=GOOD_KEY + "\n").code == 0
    trace = os.path.join(env.root, "opens")
    session = PtySession([strace, "-f", "-qq", "-e", "trace=open,openat", "-o", trace, BIN, "key", "get"], env.vars)
    session.expect("Passphrase for")
    session.line(PASSPHRASE)
    assert session.wait(60) == 0, session.text()
    assert GOOD_KEY in session.text()
    with open(trace) as handle:
        opens = [line for line in handle if "= -1" not in line or "/dev/tty" in line]
    assert len([line for line in opens if '"/dev/tty"' in line]) == 1, opens
    assert len([line for line in opens if re.search(r'open(at)?\([^,]*, ?"vault", ', line)]) == 1, opens
