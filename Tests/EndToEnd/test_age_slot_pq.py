"""The age slot sealed to a hybrid post-quantum recipient (`age1pq1…`, mlkem768x25519): the
identity made by age_pq.py (an independent reader and writer from the specs), the slot's age
file opened by it too."""
import os

import age_pq
from conftest import GOOD_KEY


def test_a_hybrid_recipients_slot_opens_with_its_identity_and_a_rekey_keeps_it(env):
    import test_age_slot
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    identity = age_pq.HybridIdentity()
    path = os.path.join(env.root, "pq-identity.txt")
    env.write_private(path, identity.text + "\n")
    added = env.run("slot", "add", "age", identity.recipient)
    assert added.code == 0 and "mlkem768x25519" in added.err, added.err
    [slot] = test_age_slot.age_slots(env)
    assert slot["recipient"] == identity.recipient and age_pq.stanza_types(slot["sealed"]) == ["mlkem768x25519"]
    data_key = age_pq.decrypt(slot["sealed"], [identity])
    assert len(data_key) == 32
    use = {"GEMVAULT_AGE_IDENTITY": path}
    assert env.run("key", "get", passphrase=False, env=use).out == GOOD_KEY + "\n"
    assert env.run("rekey").code == 0
    [again] = test_age_slot.age_slots(env)
    assert age_pq.decrypt(again["sealed"], [identity]) != data_key
    assert env.run("key", "get", passphrase=False, env=use).out == GOOD_KEY + "\n"


def test_slot_rm_takes_the_full_hybrid_recipient_and_a_wrong_one_is_named_short(env):
    import test_age_slot
    env.init()
    identity = age_pq.HybridIdentity()
    assert env.run("slot", "add", "age", identity.recipient).code == 0
    other = age_pq.HybridIdentity().recipient
    missing = env.run("slot", "rm", other)
    assert missing.code == 1 and "the vault has no slot" in missing.err, missing.err
    assert other not in missing.err and len(missing.err) < 400, missing.err
    removed = env.run("slot", "rm", identity.recipient)
    assert removed.code == 0, removed.err
    assert test_age_slot.age_slots(env) == []


def test_slot_rm_takes_the_recipient_as_slot_list_shortens_it(env):
    """A long recipient is shown short (its first 24 characters, …, its last 12): that form,
    copied from 'slot list', names the slot for 'slot rm'."""
    import test_age_slot
    env.init()
    kept = age_pq.HybridIdentity().recipient
    identity = age_pq.HybridIdentity()
    assert env.run("slot", "add", "age", kept).code == 0
    assert env.run("slot", "add", "age", identity.recipient).code == 0
    short = identity.recipient[:24] + "…" + identity.recipient[-12:]
    listed = env.run("slot", "list", passphrase=False)
    assert listed.code == 0 and short in listed.out and identity.recipient not in listed.out, listed.out
    removed = env.run("slot", "rm", short)
    assert removed.code == 0, removed.err
    assert [slot["recipient"] for slot in test_age_slot.age_slots(env)] == [kept]
