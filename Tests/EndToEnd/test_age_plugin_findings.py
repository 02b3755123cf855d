"""Review findings on the age plugin client (issue 45): a plugin another account could have changed
is refused and never run (Docs/security.md, threat 12); `age1pq1…`, `age1tag1…` and `age1tagpq1…`
never name a plugin; `--pq-only` judges a plugin recipient by the labels it gives when it wraps."""
import json
import os
import pwd
import sys

from test_age_plugins import NO_HANG, PLUGIN, device_slot, install_plugin, plugin_identity, plugin_log, shared  # noqa: F401 (a fixture)
from test_sharing import vault_with_key


def plant(folder, marker, folder_mode=0o755, file_mode=0o755, owner=None):
    """age-plugin-gvtest in `folder`, with the given modes and owner; it leaves `marker` when run."""
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, folder_mode)
    path = os.path.join(folder, "age-plugin-gvtest")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\ntouch %s\nexec %s %s \"$@\"\n" % (marker, sys.executable, PLUGIN))
    os.chmod(path, file_mode)
    if owner is not None:
        os.chown(path, owner, -1)
    return path


def test_a_plugin_another_account_could_change_is_refused_and_never_run(env, tmp_path):
    vault_with_key(env)
    _, recipient = plugin_identity(env, tmp_path)
    nobody = pwd.getpwnam("nobody").pw_uid
    out = os.path.join(str(tmp_path), "lab.age")
    base_path = env.vars["PATH"]
    cases = [
        # The review's repro: a world-writable folder, a world-writable plugin owned by nobody.
        ("ww", dict(folder_mode=0o777, file_mode=0o777, owner=nobody), "ww is a folder that group or others can write to (mode 0777)"),
        ("foreign", dict(owner=nobody), "age-plugin-gvtest is a program owned by uid %d, not by you" % nobody),
        ("writable", dict(file_mode=0o777), "age-plugin-gvtest is writable by group or others (mode 0777)"),
        ("group", dict(file_mode=0o775), "age-plugin-gvtest is writable by group or others (mode 0775)"),
        ("groupfolder", dict(folder_mode=0o775), "groupfolder is a folder that group or others can write to (mode 0775)"),
    ]
    for name, how, said in cases:
        folder = os.path.join(str(tmp_path), name)
        marker = os.path.join(str(tmp_path), name + ".ran")
        path = plant(folder, marker, **how)
        env.vars["PATH"] = folder + ":" + base_path
        result = env.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG)
        assert result.code == 1, (name, result)
        assert "gemvault: error: refusing to run the age plugin %s: " % path in result.err and said in result.err, (name, result.err)
        assert not os.path.exists(marker), "%s: the refused plugin was run" % name
        assert not os.path.exists(out)


def test_a_sticky_shared_folder_and_links_of_the_user_or_root_are_trusted(env, tmp_path):
    vault_with_key(env)
    _, recipient = plugin_identity(env, tmp_path)
    base_path = env.vars["PATH"]
    # A sticky folder others can write (like /tmp): nobody else can rename or replace the user's plugin there.
    sticky = os.path.join(str(tmp_path), "sticky")
    marker = os.path.join(str(tmp_path), "sticky.ran")
    plant(sticky, marker, folder_mode=0o1777)
    env.vars["PATH"] = sticky + ":" + base_path
    out = os.path.join(str(tmp_path), "lab.age")
    result = env.run("key", "share", "lab", "--to", recipient, "-o", out, timeout=NO_HANG)
    assert result.code == 0 and os.path.exists(marker), result
    # A link of the user's to that plugin is followed; one another account owns is not.
    links = os.path.join(str(tmp_path), "links")
    os.makedirs(links)
    os.symlink(os.path.join(sticky, "age-plugin-gvtest"), os.path.join(links, "age-plugin-gvtest"))
    env.vars["PATH"] = links + ":" + base_path
    os.unlink(marker)
    assert env.run("key", "share", "lab", "--to", recipient, "-o", out, "--force", timeout=NO_HANG).code == 0 and os.path.exists(marker)
    os.lchown(os.path.join(links, "age-plugin-gvtest"), pwd.getpwnam("nobody").pw_uid, -1)
    os.unlink(marker)
    planted = env.run("key", "share", "lab", "--to", recipient, "-o", out, "--force", timeout=NO_HANG)
    assert planted.code == 1 and "is a symbolic link owned by uid" in planted.err and not os.path.exists(marker), planted
    # A link of the user's to a plugin in a folder others can write is refused for the target's folder.
    open_folder = os.path.join(str(tmp_path), "open")
    plant(open_folder, marker, folder_mode=0o777)
    os.unlink(os.path.join(links, "age-plugin-gvtest"))
    os.symlink(os.path.join(open_folder, "age-plugin-gvtest"), os.path.join(links, "age-plugin-gvtest"))
    through = env.run("key", "share", "lab", "--to", recipient, "-o", out, "--force", timeout=NO_HANG)
    assert through.code == 1 and "open is a folder that group or others can write to" in through.err and not os.path.exists(marker), through


def test_the_plugin_checked_is_the_plugin_run(env, tmp_path):
    # The plugin runs from the descriptor that was checked: it sees /proc/self/fd/3 as its path.
    vault_with_key(env)
    _, recipient = plugin_identity(env, tmp_path)
    folder = install_plugin(env, tmp_path)
    seen = os.path.join(str(tmp_path), "seen")
    with open(os.path.join(folder, "age-plugin-gvtest"), "w") as handle:
        handle.write("#!/bin/sh\necho \"$0\" > %s\nexec %s %s \"$@\"\n" % (seen, sys.executable, PLUGIN))
    result = env.run("key", "share", "lab", "--to", recipient, "-o", os.path.join(str(tmp_path), "lab.age"), timeout=NO_HANG)
    assert result.code == 0, result
    assert open(seen).read().strip() == "/proc/self/fd/3"


def test_a_malformed_post_quantum_or_tagged_recipient_never_names_a_plugin(env, tmp_path):
    import age_pq
    vault_with_key(env)
    # age-plugin-pq, -tag and -tagpq, ready to be (wrongly) run for age's own prefixes.
    folder = os.path.join(str(tmp_path), "plugins")
    marker = os.path.join(str(tmp_path), "ran")
    for name in ("pq", "tag", "tagpq"):
        path = plant(folder, marker)
        os.rename(path, os.path.join(folder, "age-plugin-" + name))
    env.vars["PATH"] = folder + ":" + env.vars["PATH"]

    def failing_modulus(public):
        # The first ML-KEM coefficient set to 4095, which is not below q = 3329.
        return bytes([0xFF, public[1] | 0x0F]) + public[2:]
    hybrid = age_pq.HybridIdentity()
    tagged = age_pq.TagIdentity(True)
    malformed = [
        ("age1pq1", age_pq.bech32_encode("age1pq", b"\x00" * 100)),
        ("age1pq1", age_pq.bech32_encode("age1pq", failing_modulus(age_pq.bech32_decode(hybrid.recipient)[1]))),
        ("age1tag1", age_pq.bech32_encode("age1tag", b"\x02" + b"\x00" * 10)),
        ("age1tagpq1", age_pq.bech32_encode("age1tagpq", failing_modulus(tagged.public))),
    ]
    out = os.path.join(str(tmp_path), "lab.age")
    for prefix, text in malformed:
        result = env.run("key", "share", "lab", "--to", text, "-o", out, timeout=NO_HANG)
        assert result.code == 64 and "not a valid %s… recipient: " % prefix in result.err, (prefix, result)
        recipients = os.path.join(str(tmp_path), "team.txt")
        with open(recipients, "w") as handle:
            handle.write(text + "\n")
        from_file = env.run("key", "share", "lab", "-R", recipients, "-o", out, timeout=NO_HANG)
        assert from_file.code == 64 and "line 1: not a valid %s… recipient" % prefix in from_file.err, (prefix, from_file)
        assert not os.path.exists(marker), "a plugin was run for " + prefix
        assert not os.path.exists(out)
    # The well-formed ones are age's own: shared with no plugin.
    assert env.run("key", "share", "lab", "--to", hybrid.recipient, "--to", tagged.recipient, "-o", out, timeout=NO_HANG).code == 0
    assert not os.path.exists(marker)


def test_pq_only_judges_a_plugin_recipient_by_the_labels_it_gives_when_it_wraps(shared, tmp_path):
    import age_pq
    alice, bob, id_path, recipient = shared
    out = os.path.join(str(tmp_path), "lab.age")
    # A plugin that labels its stanzas postquantum is post-quantum: --pq-only shares to it.
    pq = alice.run("key", "share", "lab", "--to", recipient, "--pq-only", "-o", out, timeout=NO_HANG, env={"GVTEST_MODE": "postquantum"})
    assert pq.code == 0 and "warning" not in pq.err, pq
    assert bob.run("key", "import", out, "--yes", "--no-verify", "-i", id_path, timeout=NO_HANG).code == 0
    # One that does not is refused after it wrapped (it was asked), and nothing is written or recorded.
    os.unlink(out)
    os.unlink(alice.vars["GVTEST_LOG"])
    secret_out = os.path.join(str(tmp_path), "lab2.age")
    classic = alice.run("key", "share", "lab", "--to", recipient, "--pq-only", "-o", secret_out, timeout=NO_HANG)
    assert classic.code == 64 and "--pq-only: %s is a classic recipient, not post-quantum; nothing was written" % recipient in classic.err, classic
    assert any(line.startswith("wrap-file-key") for line in plugin_log(alice)), "the plugin was asked before it was judged"
    assert not os.path.exists(secret_out)
    assert [r["path"] for r in json.loads(alice.run("key", "share", "lab", "--list", "--json").out)["recipients"]] == [out]
    # The mixed warning counts a plugin by its labels too: beside a hybrid recipient, a
    # postquantum plugin is no weak link, one without the label is.
    hybrid = age_pq.HybridIdentity().recipient
    both = os.path.join(str(tmp_path), "both.age")
    labelled = alice.run("key", "share", "lab", "--to", recipient, "--to", hybrid, "-o", both, "--force", timeout=NO_HANG,
                         env={"GVTEST_MODE": "postquantum"})
    assert labelled.code == 0 and "classic recipients mixed" not in labelled.err, labelled
    unlabelled = alice.run("key", "share", "lab", "--to", recipient, "--to", hybrid, "-o", both, "--force", timeout=NO_HANG)
    assert unlabelled.code == 0 and "classic recipients mixed" in unlabelled.err and recipient in unlabelled.err.split("weak link:")[1], unlabelled


def test_pq_only_for_a_secret_share_waits_for_the_plugins_labels(shared, tmp_path):
    alice, _, _, recipient = shared
    assert alice.run("secret", "set", "gh", input="ghp_pluginToken0123456789abcdefghijklmn\n").code == 0
    out = os.path.join(str(tmp_path), "gh.age")
    refused = alice.run("secret", "share", "gh", "--to", recipient, "--pq-only", "-o", out, timeout=NO_HANG)
    assert refused.code == 64 and "is a classic recipient" in refused.err and not os.path.exists(out), refused
    shared_pq = alice.run("secret", "share", "gh", "--to", recipient, "--pq-only", "-o", out, timeout=NO_HANG, env={"GVTEST_MODE": "postquantum"})
    assert shared_pq.code == 0 and os.path.exists(out), shared_pq


def test_the_review_repro_a_vault_opening_command_never_runs_a_planted_plugin(env, tmp_path):
    """The age slot's default identity runs the plugin on every vault-opening command: one
    planted where another account could change it is refused and passed over, never run."""
    vault_with_key(env)
    install_plugin(env, tmp_path)
    device_slot(env, tmp_path)
    assert env.run("key", "list", passphrase=False, timeout=NO_HANG).code == 0, "the slot opens through the trusted plugin"
    planted = os.path.join(str(tmp_path), "ww")
    marker = os.path.join(str(tmp_path), "ran-as-root")
    path = plant(planted, marker, folder_mode=0o777, file_mode=0o777, owner=pwd.getpwnam("nobody").pw_uid)
    env.vars["PATH"] = planted + ":/usr/bin:/bin"
    result = env.run("key", "list", passphrase=False, timeout=NO_HANG)
    assert result.code != 0 and "refusing to run the age plugin %s" % path in result.err, result
    assert not os.path.exists(marker), "the planted plugin was run"
