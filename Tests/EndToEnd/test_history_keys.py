"""What Docs/history-format.md promises of the conversation keys and records, checked with a reader
written from the documents alone (PyNaCl, no gemvault code): a passphrase change retires the
conversation key, records are padded, numbered and chained, and `history off` holds while locked."""
import glob
import hashlib
import json
import os
import shutil
import struct

import pytest

import nacl.bindings as nacl

from conftest import PASSPHRASE
from test_vault_format import PASSPHRASE_SLOT, decode_payload, decrypt, parse, slot_of, unpad, unwrap

SEAL_BYTES = 48  # crypto_box_SEALBYTES
INDEX_PURPOSE = b"gemvault history index 1"


@pytest.fixture
def history(api):
    api.code = api.init()
    return api


def conversation_keys(vault_bytes, passphrase):
    """The conversation keys of a vault, current first, from Docs/vault-format.md."""
    vault = parse(vault_bytes)
    data_key = unwrap(slot_of(vault, [PASSPHRASE_SLOT]), passphrase.encode())
    keys = []
    decode_payload(unpad(decrypt(vault, data_key)), keys)
    return keys


def history_folder(env):
    """`$XDG_STATE_HOME/gemvault/history/` and the first 8 bytes of BLAKE2b-256 of the vault's
    absolute path (its folder with links resolved), as 16 hex digits."""
    path = os.path.join(os.path.realpath(os.path.dirname(env.vault)), os.path.basename(env.vault))
    name = hashlib.blake2b(path.encode(), digest_size=32).hexdigest()[:16]
    return os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", name)


def records(path):
    with open(path, "rb") as handle:
        data = handle.read()
    found, offset = [], 0
    while len(data) - offset >= 4:
        (length,) = struct.unpack_from("<I", data, offset)
        if len(data) - offset - 4 < length:
            break
        found.append(data[offset + 4:offset + 4 + length])
        offset += 4 + length
    return found


def write_records(path, items):
    with open(path, "wb") as handle:
        for item in items:
            handle.write(struct.pack("<I", len(item)) + item)


def opens(sealed, seed):
    public_key, secret_key = nacl.crypto_box_seed_keypair(seed)
    try:
        nacl.crypto_box_seal_open(sealed, public_key, secret_key)
        return True
    except Exception:
        return False


def index_opens(folder, seed):
    path = os.path.join(folder, "index")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:4] == b"GVHI"
    _, secret_key = nacl.crypto_box_seed_keypair(seed)
    key = hashlib.blake2b(INDEX_PURPOSE, digest_size=32, key=secret_key).digest()
    try:
        nacl.crypto_aead_xchacha20poly1305_ietf_decrypt(data[28:], INDEX_PURPOSE, data[4:28], key)
        return True
    except Exception:
        return False


def files(env):
    return {os.path.basename(p)[:-5]: p for p in glob.glob(os.path.join(history_folder(env), "*.chat"))}


@pytest.mark.parametrize("command", ["passwd", "rekey", "recover"])
def test_an_old_vault_copy_opens_nothing_written_after_a_passphrase_change(history, command):
    env = history
    assert env.run("ask", "--model", "echo", "before the change", passphrase=False).code == 0
    [before_id] = files(env)
    written_before = len(records(files(env)[before_id]))
    old_copy = env.vault_bytes()
    [old_key] = conversation_keys(old_copy, PASSPHRASE)

    new_pass = os.path.join(env.root, "new-pass")
    env.write_private(new_pass, "a new passphrase, long enough\n")
    if command == "passwd":
        result = env.run(command, "--new-passphrase-file", new_pass)
        passphrase = "a new passphrase, long enough"
    elif command == "recover":
        result = env.run(command, "--new-passphrase-file", new_pass, input=env.code + "\n", passphrase=False)
        passphrase = "a new passphrase, long enough"
    else:
        result = env.run(command)
        passphrase = PASSPHRASE
    assert result.code == 0, result
    env.passfile = new_pass if passphrase != PASSPHRASE else env.passfile

    # Written after the change, while locked: a new conversation, and a turn added to the old one.
    assert env.run("ask", "--model", "echo", "after the change", passphrase=False).code == 0
    assert env.run("chat", "--model", "echo", "--resume", before_id, input="more, after the change\n").code == 0
    listing = env.run("history", "list", "--json")
    assert listing.code == 0 and sorted(c["turns"] for c in json.loads(listing.out)["conversations"]) == [1, 2], listing

    conversations = files(env)
    assert len(conversations) == 2
    for conversation_id, path in conversations.items():
        sealed = records(path)[1:]
        opened_with_old = [opens(record, old_key) for record in sealed]
        if conversation_id == before_id:
            assert opened_with_old == [True] * (written_before - 1) + [False] * (len(sealed) - written_before + 1)
        else:
            assert not any(opened_with_old)
    assert index_opens(history_folder(env), old_key) is False

    # The vault as it is now opens everything, through its earlier keys.
    new_keys = conversation_keys(env.vault_bytes(), passphrase)
    assert new_keys[1:] == [old_key] and new_keys[0] != old_key
    for path in conversations.values():
        assert all(any(opens(record, key) for key in new_keys) for record in records(path)[1:])
    assert index_opens(history_folder(env), new_keys[0]) is True
    shown = env.run("history", "show", before_id)
    assert shown.code == 0 and "before the change" in shown.out and "more, after the change" in shown.out


def test_records_are_padded_so_lengths_show_only_their_bucket(history):
    env = history
    assert env.run("chat", "--model", "echo", input="hi\n/undo\n" + "long " * 300 + "\n", passphrase=False).code == 0
    [path] = files(env).values()
    sizes = [len(record) - SEAL_BYTES for record in records(path)[1:]]
    assert len(sizes) == 4, sizes  # meta, a short turn, its undo, a long turn
    assert sizes[:3] == [256, 256, 256] and sizes[3] in (2048, 4096), sizes


def test_the_index_size_shows_only_its_bucket_not_a_title_length(history):
    """Two conversations whose titles differ in length within a bucket leave indexes of one size;
    the index is still one the vault's holder opens, padded as records are."""
    env = history
    sizes = []
    for title in ("hi", "a title of quite another length than the first one"):
        assert env.run("history", "rm", "--all", "--yes").code == 0
        assert env.run("ask", "--model", "echo", title, passphrase=False).code == 0
        listed = env.run("history", "list", "--json")
        assert [c["title"] for c in json.loads(listed.out)["conversations"]] == [title], listed
        path = os.path.join(history_folder(env), "index")
        sizes.append(os.path.getsize(path))
        [key] = conversation_keys(env.vault_bytes(), PASSPHRASE)
        assert index_opens(history_folder(env), key) is True
    assert sizes[0] == sizes[1], sizes


def test_a_dropped_reordered_or_repeated_record_is_reported_and_what_came_before_shown(history):
    env = history
    assert env.run("chat", "--model", "echo", input="turn one\nturn two\nturn three\n", passphrase=False).code == 0
    [(conversation_id, path)] = files(env).items()
    intact = records(path)
    assert len(intact) == 5  # the header, meta, three turns
    for name, broken in [("dropped", intact[:3] + intact[4:]), ("reordered", intact[:3] + [intact[4], intact[3]]),
                         ("repeated", intact[:4] + [intact[3], intact[4]])]:
        write_records(path, broken)
        shown = env.run("history", "show", conversation_id)
        assert shown.code == 4, (name, shown)
        assert "turn one" in shown.out and "turn three" not in shown.out, (name, shown)
        assert "dropped, reordered or repeated" in shown.err, (name, shown)
        resumed = env.run("chat", "--model", "echo", "--resume", conversation_id, input="go on\n")
        assert resumed.code == 4 and "dropped, reordered or repeated" in resumed.err, (name, resumed)
    write_records(path, intact)
    assert env.run("history", "show", conversation_id).code == 0


def test_history_off_holds_while_the_vault_is_locked(history):
    env = history
    assert env.run("config", "set", "history", "off").code == 0
    assert env.run("ask", "--model", "echo", "not to be kept", passphrase=False).code == 0
    assert env.run("chat", "--model", "echo", input="nor this\n", passphrase=False).code == 0
    assert files(env) == {}
    # A higher layer still wins, as for every setting.
    assert env.run("ask", "--model", "echo", "kept", passphrase=False, env={"GEMVAULT_HISTORY": "on"}).code == 0
    assert len(files(env)) == 1
    assert env.run("config", "set", "history", "on").code == 0
    assert env.run("ask", "--model", "echo", "kept again", passphrase=False).code == 0
    assert len(files(env)) == 2
    # The choice is kept beside the conversations, in the checked recipient file, not in plain config.
    with open(os.path.join(history_folder(env), "recipient"), "rb") as handle:
        recipient = handle.read()
    assert recipient[:4] == b"GVHR" and len(recipient) == 37 and recipient[36] == 2


def sealed_record(document, sequence, previous, public_key):
    """A record as Docs/history-format.md describes it: version 2, sequence, the hash of the record
    before it as stored, the JSON's length, the JSON, zeros to the bucket; sealed to the key."""
    body = json.dumps(document).encode()
    plain = bytes([2]) + struct.pack("<Q", sequence) + hashlib.blake2b(previous, digest_size=32).digest() + struct.pack("<I", len(body)) + body
    bucket = 256
    while bucket < len(plain):
        bucket *= 2
    return nacl.crypto_box_seal(plain + bytes(bucket - len(plain)), public_key)


def write_conversation(env, conversation_id, documents):
    """A conversation file written from Docs/history-format.md alone: the header, then each
    document sealed to the vault's current conversation key. Returns its path and records."""
    assert env.run("history", "list").code == 0  # writes the recipient
    [key] = conversation_keys(env.vault_bytes(), PASSPHRASE)
    public_key, _ = nacl.crypto_box_seed_keypair(key)
    stored = [b"GVCH" + public_key]
    for sequence, document in enumerate(documents, 1):
        stored.append(sealed_record(document, sequence, stored[-1], public_key))
    folder = history_folder(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, conversation_id + ".chat")
    write_records(path, stored)
    os.chmod(path, 0o600)
    return path, stored


def test_turns_written_before_models_and_files_were_recorded_still_read_and_resume(history):
    """A conversation in the older turn shape (no modelName, system or attachments), written from
    the document alone, is shown, exported and resumed with its meta's model."""
    env = history
    write_conversation(env, "0123456789abcdef", [
        {"meta": {"_0": {"title": "from an older gemvault", "model": "echo~older", "created": 1796111103, "kind": "chat"}}},
        {"turn": {"_0": {"user": "older question", "model": "older answer", "interrupted": False, "time": 1796111104}}}])
    shown = env.run("history", "show", "0123")
    assert shown.code == 0 and "you › older question" in shown.out and "older answer" in shown.out and "(model:" not in shown.out, shown
    [turn] = json.loads(env.run("history", "export", "0123", "--format", "json").out)["turns"]
    assert turn["modelName"] is None and turn["system"] is None and turn["attachments"] == []
    env.server.clear()
    resumed = env.run("chat", "--continue", input="newer question\n")
    assert resumed.code == 0 and "turns=3" in resumed.out, resumed
    assert env.server.requests()[-1]["path"].startswith("/v1beta/models/echo~older:")
    turns = json.loads(env.run("history", "export", "0123", "--format", "json").out)["turns"]
    assert [t["modelName"] for t in turns] == [None, "echo~older"]


def test_a_long_conversation_is_read_whole_and_goes_on_where_it_ended(history):
    """Past 64 records a conversation is opened on every core (Docs/performance.md): 150 turns
    written from the document alone come back whole and in order, and a resumed chat sends
    them all and chains its new record after the last one."""
    env = history
    documents = [{"meta": {"_0": {"title": "a long one", "model": "echo", "created": 1796111103, "kind": "chat"}}}]
    documents += [{"turn": {"_0": {"user": "question %d" % n, "model": "answer %d" % n, "interrupted": False, "time": 1796111104 + n}}}
                  for n in range(150)]
    path, stored = write_conversation(env, "fedcba9876543210", documents)
    turns = json.loads(env.run("history", "export", "fedc", "--format", "json").out)["turns"]
    assert [t["user"] for t in turns] == ["question %d" % n for n in range(150)]
    env.server.clear()
    resumed = env.run("chat", "--resume", "fedc", input="one more\n")
    assert resumed.code == 0 and "turns=301" in resumed.out, resumed
    after = records(path)
    assert len(after) == len(stored) + 1 and after[:-1] == stored
    shown = env.run("history", "show", "fedc")
    assert shown.code == 0 and "question 149" in shown.out and "one more" in shown.out, shown
