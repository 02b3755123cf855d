"""The versions and sizes Docs/vault-format.md and Docs/history-format.md state, read from the
documents' own words and compared with what the binary writes."""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys

import nacl.bindings as nacl
import pytest

from conftest import BIN, PASSPHRASE, ROOT
from test_history_keys import SEAL_BYTES, conversation_keys, history_folder, records, write_records
from test_vault_format import decrypt, parse, slot_of, unpad, unwrap, PASSPHRASE_SLOT


def document(name):
    with open(os.path.join(ROOT, "Docs", name)) as handle:
        return handle.read()


def stated(pattern, text):
    match = re.search(pattern, text)
    assert match, "the document no longer says: %s" % pattern
    return match.group(1)


def test_the_vault_document_states_what_the_binary_writes(api):
    api.init()
    assert api.run("key", "set", input="AQ." + "d" * 50).code == 0
    doc = document("vault-format.md")
    vault = parse(api.vault_bytes())
    written_formats = re.findall(r"^\| (\d+) \| yes, by every save \(of a vault without an ssh-agent or age slot\) \|", doc, re.M)
    assert written_formats == [str(vault["version"])]
    assert int(stated(r"\| 2 \| yes, by every save \(of a vault without an ssh-agent or age slot\) \| yes \| (\d+)-byte vault id", doc)) == len(vault["vault_id"])
    slot_sizes = {int(kind): int(size) for kind, size in re.findall(r"^\| (\d) \| [a-z ]+ slot \| (\d+) \|", doc, re.M)}
    for slot in vault["slots"]:
        assert len(slot["raw"]) == slot_sizes[slot["kind"]]
    block = int(stated(r"to a multiple of \*\*(\d+) bytes\*\*", doc))
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), PASSPHRASE.encode())
    padded = decrypt(vault, data_key)
    assert len(padded) % block == 0
    payload = unpad(padded)
    assert payload[0] == int(stated(r"Payload version (\d+) is written now", doc))
    assert payload[0] == int(stated(r"\| 1 \| payload version: (\d+) ", doc))
    assert "(%d now;" % payload[0] in doc


def test_the_history_document_states_what_the_binary_writes(api):
    api.init()
    assert api.run("chat", "--model", "echo", input="one\ntwo\n", passphrase=False).code == 0
    assert api.run("history", "list").code == 0
    doc = document("history-format.md")
    assert stated(r"^# The conversation history format \(version (\d+)\)", doc) == "2"
    folder = history_folder(api)
    assert len(os.path.basename(folder)) == int(stated(r"as (\d+) lowercase hex\s+digits", doc))
    with open(os.path.join(folder, "recipient"), "rb") as handle:
        recipient = handle.read()
    assert recipient[:4] == b"GVHR" and len(recipient) == 4 + int(stated(r"`GVHR`, the (\d+)-byte public key", doc)) + 1
    [path] = [os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".chat")]
    stored = records(path)
    assert stored[0][:4] == b"GVCH" and len(stored[0]) == 36
    [key] = conversation_keys(api.vault_bytes(), PASSPHRASE)
    public_key, secret_key = nacl.crypto_box_seed_keypair(key)
    version = int(stated(r"\| 1 \| record version, (\d+) \|", doc))
    smallest = int(stated(r"padded length is the smallest of (\d+),", doc))
    for position, record in enumerate(stored[1:], 1):
        plain = nacl.crypto_box_seal_open(record, public_key, secret_key)
        assert len(record) - SEAL_BYTES == len(plain) and len(plain) >= smallest and len(plain) & (len(plain) - 1) == 0
        assert plain[0] == version and int.from_bytes(plain[1:9], "little") == position
    with open(os.path.join(folder, "index"), "rb") as handle:
        index = handle.read()
    assert index[:4] == b"GVHI"
    assert int(stated(r"`GVHI`, then a (\d+)-byte nonce", doc)) == 24
    # The index's plaintext: its version, and padded to a record's bucket (the same smallest bucket).
    key = hashlib.blake2b(b"gemvault history index 1", digest_size=32, key=secret_key).digest()
    plain = nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(index[28:], b"gemvault history index 1", index[4:28], key)
    assert plain[0] == int(stated(r"The plaintext is version (\d+) \(one byte\)", doc))
    assert len(plain) >= smallest and len(plain) & (len(plain) - 1) == 0, len(plain)


# What a reader written from the documents alone got wrong: each claim is read from the
# document's words and held against what the binary does.

def flat(text):
    """The document with its line breaks folded, so a claim may wrap anywhere."""
    return re.sub(r"\s+", " ", text)


def section(doc, heading):
    start = doc.index(heading)
    end = doc.find("\n## ", start + len(heading))
    return doc[start:end if end >= 0 else len(doc)]


def seal_vault(data, passphrase, payload):
    """A vault file with `payload` in place of its own, written from the document: padded to
    512 bytes, sealed under the same data key with a new nonce, the length and checksum anew."""
    vault = parse(data)
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), passphrase.encode())
    padded = payload + b"\x80" + bytes(-(len(payload) + 1) % 512)
    nonce = nacl.randombytes(24)
    header = vault["header"][:-28] + nonce + struct.pack("<I", len(padded) + 16)
    body = header + nacl.crypto_aead_xchacha20poly1305_ietf_encrypt(padded, header, nonce, data_key)
    return body + hashlib.blake2b(body, digest_size=32).digest()


def replace_vault(env, payload):
    sealed = seal_vault(env.vault_bytes(), PASSPHRASE, payload)
    with open(env.vault, "wb") as handle:
        handle.write(sealed)


def payload_v5(conversation_key, name, secret, created, google=(b"", b""), earlier=()):
    """A version 5 payload with one key and no settings; `earlier` holds (value, replaced,
    set, google) of its earlier values."""
    def text(value):
        return struct.pack("<H", len(value)) + value
    out = bytes([5]) + conversation_key + struct.pack("<H", 1) + text(name) + text(secret)
    out += struct.pack("<qqq", created, created, 0) + text(google[0]) + text(google[1])
    out += bytes([len(earlier)])
    for value, replaced, set_at, record in earlier:
        out += text(value) + struct.pack("<qq", replaced, set_at) + text(record[0]) + text(record[1])
    return out + struct.pack("<H", 0) + struct.pack("<H", 0)


def test_the_last_reader_step_names_every_payload_version_the_binary_writes(api):
    api.init()
    assert api.run("key", "set", input="AQ." + "d" * 50).code == 0
    vault = parse(api.vault_bytes())
    written = unpad(decrypt(vault, unwrap(slot_of(vault, [PASSPHRASE_SLOT]), PASSPHRASE.encode())))[0]
    steps = section(document("vault-format.md"), "## What a reader checks, in order")
    assert int(stated(r"has version 1 to (\d+)", flat(steps))) == written


KEY_VALUE = b"AQ." + b"e" * 50
# A Google key record, whether a reader takes it, and the words of the document's writer rules
# that say so (None: a record the rules allow).
GOOGLE_RECORDS = [
    ((b"projects/12/locations/global/keys/k1", b"sa@p.iam.gserviceaccount.com"), None),
    ((b"projects/12/locations/global/keys/k1", b""), None),
    ((b"", b"sa@p.iam.gserviceaccount.com"), "names a service account but has an empty resource name"),
    ((b"projects//locations/global/keys/k1", b""), "each of `P`, `L` and `K` non-empty"),
    ((b"projects/12/locations//keys/k1", b""), "each of `P`, `L` and `K` non-empty"),
    ((b"projects/12/locations/global/keys/", b""), "each of `P`, `L` and `K` non-empty"),
    ((b"projects/12/locations/glo/bal/keys/k1", b""), "free of `/`"),
    ((b"projects/12/locations/global/keys/k1", b"sa with space@p"), "(printable ASCII without the space)"),
    ((b"projects/12/locations/global/keys/k1", b"a" * 513), "longer than 512 bytes"),
]


@pytest.mark.parametrize("record,rule", GOOGLE_RECORDS)
def test_the_google_key_rules_a_reader_enforces_are_the_documented_ones(env, record, rule):
    env.init()
    conversation_key = conversation_keys(env.vault_bytes(), PASSPHRASE)[0]
    rules = flat(document("vault-format.md").split("**Writer rules a reader enforces.**")[1].split("A payload version other")[0])
    if rule:
        assert rule in rules
    replace_vault(env, payload_v5(conversation_key, b"default", KEY_VALUE, 1796106314, record))
    listed = env.run("key", "list", "--json")
    if rule is None:
        assert listed.code == 0, listed
    else:
        assert listed.code == 4 and "its encrypted contents are not what gemvault writes" in listed.err, (record, listed)


def test_the_set_date_of_an_earlier_value_is_described_not_enforced(env):
    env.init()
    conversation_key = conversation_keys(env.vault_bytes(), PASSPHRASE)[0]
    payload_doc = flat(section(document("vault-format.md"), "## Payload (plaintext, before padding)"))
    assert "a reader does not check it" in payload_doc
    created = 1796106314
    # Set before the key was created and after it was replaced: outside what writers keep.
    earlier = [(b"AQ." + b"f" * 50, created + 100, created - 5000, (b"", b"")),
               (b"AQ." + b"g" * 50, created + 50, created + 9000, (b"", b""))]
    replace_vault(env, payload_v5(conversation_key, b"default", KEY_VALUE, created, earlier=earlier))
    shown = env.run("key", "history", "default", "--json")
    assert shown.code == 0, shown
    assert len(json.loads(shown.out)["values"]) == 3


def data_key_of(data, passphrase):
    return unwrap(slot_of(parse(data), [PASSPHRASE_SLOT]), passphrase.encode())


def test_every_command_said_to_change_the_data_key_does_and_leaves_the_new_vault_as_backup(env):
    code = env.init()
    changing = section(document("vault-format.md"), "## Changing the data key")
    sentence = stated(r"\n((?:`[a-z-]+`,? (?:and )?)+)put the vault under a \*\*new random data key\*\*", changing)
    commands = re.findall(r"`([a-z-]+)`", sentence)
    assert "recovery-code" in commands and len(commands) == int({"three": 3, "four": 4}[stated(r"For these (\w+) commands", changing)])
    passphrase = PASSPHRASE
    for command in commands:
        before = data_key_of(env.vault_bytes(), passphrase)
        new_pass = os.path.join(env.root, "pass-" + command)
        if command == "passwd":
            env.write_private(new_pass, "the passphrase after passwd\n")
            result = env.run("passwd", "--new-passphrase-file", new_pass)
        elif command == "recover":
            env.write_private(new_pass, "the passphrase after recover\n")
            result = env.run("recover", "--new-passphrase-file", new_pass, input=code + "\n", passphrase=False)
        elif command == "recovery-code":
            result = env.run("recovery-code", "--json")
            code = json.loads(result.out)["recovery_code"] if result.code == 0 else code
        else:
            result = env.run(command)
        assert result.code == 0, (command, result)
        if command in ("passwd", "recover"):
            env.passfile = new_pass
            passphrase = open(new_pass).read().strip()
        assert data_key_of(env.vault_bytes(), passphrase) != before, command
        with open(env.vault + ".bak", "rb") as handle:
            assert handle.read() == env.vault_bytes(), command


def test_list_and_search_skip_a_damaged_conversation_as_the_document_says(history_env):
    env = history_env
    assert env.run("ask", "--model", "echo", "an intact question", passphrase=False).code == 0
    assert env.run("chat", "--model", "echo", input="turn one\nturn two\n", passphrase=False).code == 0
    [damaged] = [path for path in history_files(env) if len(records(path)) == 4]
    intact = records(damaged)
    write_records(damaged, intact[:2] + [intact[3], intact[2]])
    order = flat(stated(r"(\*\*Order\.\*\*[^\n]*(?:\n[^\n]+)*)", document("history-format.md")))
    code = int(stated(r"`history list` and `history search` warn on stderr, skip the file and go on with the others, and exit (\d)", order))
    for args in (["history", "list", "--json"], ["history", "search", "question", "--json"]):
        result = env.run(*args)
        assert result.code == code and "cannot be read" in result.err, (args, result)
        assert [c["title"] for c in json.loads(result.out)["conversations"]] == ["an intact question"], result
    assert "`list` report" not in order


def history_files(env):
    folder = history_folder(env)
    return [os.path.join(folder, name) for name in sorted(os.listdir(folder)) if name.endswith(".chat")]


@pytest.fixture
def history_env(api):
    api.init()
    return api


def sealed_plain(plain, public_key):
    return nacl.crypto_box_seal(plain, public_key)


def numbered(body, sequence, previous, bucket=256, length=None, padding=b""):
    """A version 2 plaintext from the document, with the parts a test may break."""
    plain = bytes([2]) + struct.pack("<Q", sequence) + hashlib.blake2b(previous, digest_size=32).digest()
    plain += struct.pack("<I", len(body) if length is None else length) + body + padding
    return plain + bytes(max(bucket - len(plain), 0))


META = json.dumps({"meta": {"_0": {"title": "crafted", "model": "echo", "created": 1796111103, "kind": "chat"}}}).encode()
TURN = json.dumps({"turn": {"_0": {"user": "q", "model": "a", "interrupted": False, "time": 1796111104}}}).encode()
# A second record as a reader must refuse it, and the words of the document's list that say so.
REFUSED_RECORDS = [
    ("version 3", lambda prev: bytes([3]) + numbered(TURN, 2, prev)[1:], "its first byte is neither 2 nor `{`"),
    ("shorter than its header", lambda prev: numbered(b"", 2, prev, bucket=0)[:30], "it is shorter than the 45 bytes before the JSON"),
    ("not a padded length", lambda prev: numbered(TURN, 2, prev, bucket=300), "its length is not a padded length"),
    ("JSON past the end", lambda prev: numbered(TURN, 2, prev, length=5000), "its JSON length runs past the end of the record"),
    ("non-zero padding", lambda prev: numbered(TURN, 2, prev, padding=b"\x01"), "a byte of the padding after the JSON is not zero"),
    ("unknown kind", lambda prev: numbered(b'{"other": {}}', 2, prev), "its JSON is not one of the three kinds below"),
    ("a bare JSON record", lambda prev: TURN, "its JSON is not one of the three kinds below"),
]


@pytest.mark.parametrize("name,make,rule", REFUSED_RECORDS, ids=[case[0] for case in REFUSED_RECORDS])
def test_the_records_a_reader_refuses_are_the_documented_ones(history_env, name, make, rule):
    env = history_env
    doc = flat(document("history-format.md"))
    assert rule in doc
    assert env.run("history", "list").code == 0  # writes the recipient
    [key] = conversation_keys(env.vault_bytes(), PASSPHRASE)
    public_key, _ = nacl.crypto_box_seed_keypair(key)
    header = b"GVCH" + public_key
    meta = sealed_plain(numbered(META, 1, header), public_key)
    folder = history_folder(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, "00112233445566ff.chat")
    write_records(path, [header, meta, sealed_plain(make(meta), public_key)])
    os.chmod(path, 0o600)
    shown = env.run("history", "show", "0011")
    assert shown.code == 4, (name, shown)
    if name == "a bare JSON record":
        assert "old, unnumbered kind among numbered ones" in shown.err, shown
    else:
        assert "record 2 is not what gemvault writes" in shown.err, (name, shown)


def test_a_file_sealed_to_another_key_exits_as_documented(history_env):
    env = history_env
    assert env.run("history", "list").code == 0
    other_public, _ = nacl.crypto_box_seed_keypair(nacl.randombytes(32))
    header = b"GVCH" + other_public
    folder = history_folder(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, "aabbccddeeff0011.chat")
    write_records(path, [header, sealed_plain(numbered(META, 1, header), other_public)])
    os.chmod(path, 0o600)
    files_doc = flat(section(document("history-format.md"), "## A conversation file"))
    code = int(stated(r"is refused as `sealed for another conversation key` by `history show`, `export` and `--continue`/`--resume` \(exit (\d)", files_doc))
    for args in (["history", "show", "aabb"], ["history", "export", "aabb", "--format", "json"], ["chat", "--resume", "aabb"]):
        result = env.run(*args, input="")
        assert result.code == code and "sealed for another conversation key" in result.err, (args, result)
    listed = env.run("history", "list", "--json")
    assert listed.code == 0 and "aabbccddeeff0011" in listed.err and json.loads(listed.out)["conversations"] == [], listed


def test_model_name_is_on_every_turn_and_what_shows_without_the_key_is_listed(history_env):
    env = history_env
    assert env.run("chat", "--model", "echo", input="one\ntwo\n", passphrase=False).code == 0
    doc = flat(document("history-format.md"))
    assert "`modelName` is written on every turn" in doc
    [path] = history_files(env)
    [key] = conversation_keys(env.vault_bytes(), PASSPHRASE)
    public_key, secret_key = nacl.crypto_box_seed_keypair(key)
    turns = []
    for record in records(path)[1:]:
        plain = nacl.crypto_box_seal_open(record, public_key, secret_key)
        (length,) = struct.unpack_from("<I", plain, 41)
        document_ = json.loads(plain[45:45 + length])
        if "turn" in document_:
            turns.append(document_["turn"]["_0"])
    assert len(turns) == 2 and all(turn.get("modelName") == "echo" for turn in turns), turns
    # Read without the key: the header's public key, the recipient's history byte, the index's size.
    with open(os.path.join(history_folder(env), "recipient"), "rb") as handle:
        recipient = handle.read()
    assert records(path)[0][4:] == recipient[4:36] and recipient[36] in (0, 1, 2)
    assert env.run("history", "list").code == 0 and os.path.getsize(os.path.join(history_folder(env), "index")) > 0
    visible = stated(r"(\*\*What is visible without the key:\*\*.*?)\*\*What is not protected", doc)
    for seen in ("each file's header key", "the vault's `history` byte", "of the index, its size"):
        assert seen in visible, seen


def test_the_architecture_names_every_target_package_swift_declares():
    import re
    with open(os.path.join(ROOT, "Package.swift")) as handle:
        package = handle.read()
    with open(os.path.join(ROOT, "Docs", "architecture.md")) as handle:
        architecture = handle.read()
    targets = re.findall(r'\.(?:target|executableTarget|systemLibrary)\(name: "([^"]+)"', package)
    assert len(targets) > 15
    missing = [name for name in targets if "`%s`" % name not in architecture]
    assert not missing, missing


# What a target may import without declaring it: the toolchain's own modules.
SYSTEM_MODULES = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Dispatch", "XCTest", "Testing", "Synchronization"}


def declared_dependencies(package):
    """Each target's name and its dependency list, from Package.swift's `.target(name:dependencies:)` lines."""
    declared = {}
    for kind, name, rest in re.findall(r'\.(target|executableTarget|testTarget|systemLibrary)\(name: "([^"]+)"(.*)', package):
        match = re.match(r', dependencies: \[([^\]]*)\]', rest)
        declared[name] = (kind, set(re.findall(r'"([^"]+)"', match.group(1))) if match else set())
    return declared


def imported_modules(folder):
    modules = set()
    for directory, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(directory, name)) as handle:
                    modules.update(re.findall(r"^(?:@\w+(?:\([^)]*\))? )*(?:public |package |internal |fileprivate |private )?import (?:(?:struct|class|enum|protocol|typealias|func|var|let) )?(\w+)", handle.read(), re.M))
    return modules - SYSTEM_MODULES


def test_package_swift_declares_exactly_what_each_target_imports():
    with open(os.path.join(ROOT, "Package.swift")) as handle:
        declared = declared_dependencies(handle.read())
    differences = []
    for name, (kind, dependencies) in sorted(declared.items()):
        if kind == "systemLibrary":
            continue
        folder = os.path.join(ROOT, "Tests" if kind == "testTarget" else "Sources", name)
        imported = imported_modules(folder) - {name}
        if imported - dependencies:
            differences.append("%s imports %s without declaring it" % (name, ", ".join(sorted(imported - dependencies))))
        if dependencies - imported:
            differences.append("%s declares %s without importing it" % (name, ", ".join(sorted(dependencies - imported))))
    assert not differences, "Package.swift and the imports differ:\n" + "\n".join(differences)


def test_the_blowfish_tables_are_the_digits_of_pi_their_generator_computes():
    """Sources/AgeFormat/BlowfishTables.swift is what BuildSupport/blowfish_tables.py makes."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("blowfish_tables", os.path.join(ROOT, "BuildSupport", "blowfish_tables.py"))
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    with open(os.path.join(ROOT, "Sources", "AgeFormat", "BlowfishTables.swift")) as handle:
        written = [int(word, 16) for word in re.findall(r"0x([0-9A-F]{8})", handle.read())]
    assert written == generator.pi_fraction_words()


def test_the_man_page_names_every_guide_and_where_it_is_installed():
    with open(os.path.join(ROOT, "Docs", "gemvault.1")) as handle:
        page = handle.read()
    see_also = page.split(".SH SEE ALSO", 1)[1]
    assert "share/doc/gemvault" in see_also
    guides = sorted(name for name in os.listdir(os.path.join(ROOT, "Docs")) if name.endswith(".md"))
    assert guides and all("\\fB%s\\fR" % name in see_also for name in guides), see_also


def test_configuration_md_lists_every_setting_and_its_environment_variable(env):
    """Every setting config explain knows has its row in configuration.md's table and its
    variable among the environment variables (credential_name's is GEMVAULT_CREDENTIAL, workload_identity_provider's GEMVAULT_WIF_PROVIDER)."""
    explained = env.run("config", "explain", "--json", passphrase=False)
    names = [setting["name"] for setting in json.loads(explained.out)["settings"]]
    text = document("configuration.md")
    for name in names:
        assert "| `%s` |" % name in text, name
        variable = {"credential_name": "GEMVAULT_CREDENTIAL", "workload_identity_provider": "GEMVAULT_WIF_PROVIDER"}.get(name, "GEMVAULT_" + name.upper())
        assert "`%s`" % variable in text, variable


def documented_import_arrows(architecture):
    """The `Imports` section's graph: each `Module ─▶ A, B` line and its indented continuations."""
    block = re.search(r"## Imports\n.*?```\n(.*?)```", architecture, re.S).group(1)
    arrows, current = {}, None
    for line in block.splitlines():
        head = re.match(r"(\S+) ─*▶ ?(.*)", line)
        if head:
            current = head.group(1)
            assert current not in arrows, "%s is drawn twice" % current
            arrows[current] = set()
            rest = head.group(2)
        elif current and line.startswith(" "):
            rest = line
        else:
            continue
        arrows[current].update(word.strip() for word in rest.split(",") if word.strip())
    return arrows


def test_the_architecture_draws_every_import_arrow_package_swift_declares():
    """Docs/architecture.md's graph is compared arrow by arrow, not only by the names it mentions."""
    with open(os.path.join(ROOT, "Package.swift")) as handle:
        declared = declared_dependencies(handle.read())
    with open(os.path.join(ROOT, "Docs", "architecture.md")) as handle:
        drawn = documented_import_arrows(handle.read())
    differences = []
    for name, (kind, dependencies) in sorted(declared.items()):
        if kind in ("testTarget", "systemLibrary") or not dependencies:
            continue
        arrows = drawn.get(name)
        if arrows is None:
            differences.append("%s is not drawn" % name)
        elif arrows != dependencies:
            for missing in sorted(dependencies - arrows):
                differences.append("%s ─▶ %s is missing" % (name, missing))
            for extra in sorted(arrows - dependencies):
                differences.append("%s ─▶ %s is drawn but not declared" % (name, extra))
    for name in sorted(set(drawn) - set(declared)):
        differences.append("%s is drawn but is no target" % name)
    assert not differences, "Docs/architecture.md's import graph and Package.swift differ:\n" + "\n".join(differences)


def test_the_walk_counts_in_the_architecture_are_what_bench_walks_measures():
    """Docs/architecture.md's table of walks is bench/walks' output, measured now under strace."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed, so bench/walks cannot count the walks")
    measured = json.loads(subprocess.run([sys.executable, os.path.join(ROOT, "bench", "walks"), "--binary", BIN, "--json"],
                                         check=True, capture_output=True, text=True, timeout=600).stdout)
    with open(os.path.join(ROOT, "Docs", "architecture.md")) as handle:
        table = re.search(r"<!-- BEGIN WALK COUNTS -->\n(.*?)<!-- END WALK COUNTS -->", handle.read(), re.S).group(1)
    documented = {}
    for row in table.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        documented[cells[0]] = dict(zip(("agent_connections", "vault_opens", "tty_opens", "argon2id_runs"), map(int, cells[1:])))
    assert documented == measured


def test_the_files_an_addition_took_are_what_its_commit_shows():
    """"Adding things" cites commits as `commit `abc1234`: N source files`; git must agree."""
    with open(os.path.join(ROOT, "Docs", "architecture.md")) as handle:
        cited = re.findall(r"commit `([0-9a-f]{7,40})`:\s+(\d+)\s+source\s+files?", handle.read())
    assert len(cited) >= 3
    for commit, count in cited:
        shown = subprocess.run(["git", "-C", ROOT, "show", "--stat=200", "--format=", commit, "--", "Sources"],
                               capture_output=True, text=True)
        if shown.returncode != 0:
            pytest.skip("commit %s is not in this clone's history (a shallow clone?), so its files cannot be counted" % commit)
        files = [line for line in shown.stdout.splitlines() if "|" in line]
        assert len(files) == int(count), (commit, files)
