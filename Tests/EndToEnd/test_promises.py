"""Promises the docs make about the vault's records, key choice, rotation, the recovery code and
secret files, each checked as a user meets it."""
import json
import os
import shutil
import stat

from conftest import GOOD_KEY, PASSPHRASE, auth_key
from test_hardening import FIXTURES, install_format_1_vector
from test_vault_format import LEGACY_RECOVERY_SLOT, RECOVERY_SLOT, canonical_code, open_recovery, parse, slot_of


def other_vault_bytes(env):
    """A second vault, made at another path with the same passphrase."""
    path = os.path.join(env.root, "other", "vault")
    os.makedirs(os.path.dirname(path), mode=0o700)
    assert env.run("--vault", path, "init", "--kdf", "interactive", "--json").code == 0
    assert env.run("--vault", path, "key", "set", input=auth_key("other-vault")).code == 0
    with open(path, "rb") as handle:
        return handle.read()


def put(env, data):
    with open(env.vault, "wb") as handle:
        handle.write(data)
    os.chmod(env.vault, 0o600)


def test_another_vault_at_the_path_is_reported_and_never_lowers_the_record(env):
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    old_copy = env.vault_bytes()
    for n in range(3):
        assert env.run("key", "set", "k%d" % n, input=auth_key("k%d" % n)).code == 0
    other = other_vault_bytes(env)
    put(env, other)
    refused = env.run("key", "list")
    assert refused.code == 4 and "is not the vault seen there before" in refused.err and "--accept-rollback" in refused.err, refused
    # The record stayed where it was: the old copy of the first vault is still refused.
    put(env, old_copy)
    again = env.run("key", "list")
    assert again.code == 4 and "an old copy was restored" in again.err, again
    # Adopting the other vault is a choice made once, on purpose.
    put(env, other)
    assert env.run("--accept-rollback", "key", "list").code == 0
    assert env.run("key", "list").code == 0
    put(env, old_copy)
    assert env.run("key", "list").code == 4


def test_an_old_format_1_copy_stays_refused_after_another_vault_was_tried_at_the_path(env):
    install_format_1_vector(env)
    assert env.run("key", "set", "newer", input=GOOD_KEY).code == 0
    env.write_private(env.passfile, PASSPHRASE + "\n")
    put(env, other_vault_bytes(env))
    assert env.run("key", "list").code == 4
    shutil.copyfile(os.path.join(FIXTURES, "vector-v1.vault"), env.vault)
    result = env.run("key", "list")
    assert result.code == 4 and "an old copy was restored" in result.err, result


def test_an_explicit_key_name_wins_over_the_environment_and_which_says_so(api):
    api.init()
    work = auth_key("work-key")
    assert api.run("key", "set", "work", input=work).code == 0
    assert api.run("ask", "--key", "work", "--model", "echo", "hi").code == 0
    assert api.server.requests()[-1]["headers"]["x-goog-api-key"] == work
    which = api.run("key", "which", "--key", "work", "--json")
    data = json.loads(which.out)
    assert data["source"] == "vault" and data["name"] == "work", which
    assert "GEMINI_API_KEY is set (--key work chooses a vault key over it)" in which.err
    assert api.run("ask", "--model", "echo", "hi", passphrase=False).code == 0
    assert api.server.requests()[-1]["headers"]["x-goog-api-key"] == GOOD_KEY


def test_rotate_checks_the_new_key_against_the_vaults_own_endpoint(api):
    api.init()
    assert api.run("key", "set", input=GOOD_KEY).code == 0
    endpoint = api.vars.pop("GEMVAULT_ENDPOINT")
    del api.vars["GEMINI_API_KEY"]
    assert api.run("config", "set", "endpoint", endpoint).code == 0
    new = auth_key("rotated-in")
    result = api.run("key", "rotate", input=new)
    assert result.code == 0 and "which the API accepted" in result.err, result
    checks = [r for r in api.server.requests() if r["path"].startswith("/v1beta/models")]
    assert checks and checks[-1]["headers"]["x-goog-api-key"] == new
    assert api.run("key", "get").out == new + "\n"


def test_recovery_code_replaces_the_code_and_the_old_one_stops_working(env):
    old_code = env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    old_copy = env.vault_bytes()
    result = env.run("recovery-code", "--json")
    assert result.code == 0, result
    new_code = json.loads(result.out)["recovery_code"]
    assert new_code != old_code and old_code not in result.out + result.err
    # A reader written from the document: the new file's slot opens with the new code only.
    slot = slot_of(parse(env.vault_bytes()), [RECOVERY_SLOT, LEGACY_RECOVERY_SLOT])
    assert open_recovery(slot, canonical_code(old_code)) is None
    assert open_recovery(slot, canonical_code(new_code)) is not None
    assert parse(env.vault_bytes())["slots"][0]["raw"] != parse(old_copy)["slots"][0]["raw"]
    refused = env.run("recover", "--new-passphrase-file", env.passfile, input=old_code + "\n", passphrase=False)
    assert refused.code == 3, refused
    recovered = env.run("recover", "--new-passphrase-file", env.passfile, input=new_code + "\n", passphrase=False)
    assert recovered.code == 0, recovered
    assert env.run("key", "get").out == GOOD_KEY + "\n"
    text = env.run("recovery-code")
    assert text.code == 0 and len(text.out.strip()) == 39 and "shown only this once" in text.err


def test_key_and_passphrase_files_get_the_vaults_folder_checks(env):
    env.init()
    open_folder = os.path.join(env.root, "shared")
    os.makedirs(open_folder)
    os.chmod(open_folder, 0o777)
    passfile = os.path.join(open_folder, "pass")
    keyfile = os.path.join(open_folder, "key")
    env.write_private(passfile, PASSPHRASE + "\n")
    env.write_private(keyfile, GOOD_KEY + "\n")
    refused = env.run("key", "list", "--passphrase-file", passfile, passphrase=False)
    assert refused.code == 1 and "refusing to use %s: it is a folder" % open_folder in refused.err, refused
    which = env.run("key", "which", "--key-file", keyfile, passphrase=False)
    assert which.code in (1, 5) and open_folder in which.err, which
    os.chmod(open_folder, 0o700)
    assert env.run("key", "list", "--passphrase-file", passfile, passphrase=False).code == 0
    assert json.loads(env.run("key", "which", "--key-file", keyfile, "--json", passphrase=False).out)["source"] == "key-file-flag"
    assert stat.S_IMODE(os.stat(open_folder).st_mode) == 0o700
