"""The versions and sizes Docs/vault-format.md and Docs/history-format.md state, read from the
documents' own words and compared with what the binary writes."""
import os
import re

import nacl.bindings as nacl

from conftest import PASSPHRASE, ROOT
from test_history_keys import SEAL_BYTES, conversation_keys, history_folder, records
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
    written_formats = re.findall(r"^\| (\d+) \| yes, by every save \|", doc, re.M)
    assert written_formats == [str(vault["version"])]
    assert int(stated(r"\| 2 \| yes, by every save \| yes \| (\d+)-byte vault id", doc)) == len(vault["vault_id"])
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
