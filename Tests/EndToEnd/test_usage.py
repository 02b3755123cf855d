"""What each key spends (Docs/usage.md): the usage ledger written without an unlock, `key usage`,
prices, budgets refused before a request (exit 6), the 80 % warning, an unusual day, the chat's
status line and `ask --json`'s usage and cost."""
import glob
import json
import os

import pytest

from conftest import BIN, GOOD_KEY
from ptyrun import PtySession
from test_fit_in import valid
from test_session import session  # noqa: F401  (the fixture)

# metered: prompt 1000 (200 of them cached), tool use 300, answer 400, thinking 500.
PRICES = "metered=1/10,echo=1/10"
METERED_COST = (800 * 1 + 300 * 1 + 200 * 0.1 + (400 + 500) * 10) / 1e6


def ledger_files(env):
    return glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "history", "*", "usage*"))


def usage(env, *args):
    result = env.run("key", "usage", "--json", *args)
    assert result.code == 0, result
    return valid("key-usage", result.out)


@pytest.fixture
def priced(session):  # noqa: F811
    session.vars["GEMVAULT_PRICES"] = PRICES
    return session


def test_every_reply_is_in_the_ledger_without_an_unlock_and_nothing_of_it_in_the_clear(api):
    api.init()
    api.vars["GEMVAULT_PRICES"] = PRICES
    for _ in range(2):
        result = api.run("ask", "--model", "metered", "--json", "q", passphrase=False)
        assert result.code == 0, result
    answer = valid("ask", result.out)
    assert answer["usage"] == {"promptTokenCount": 1000, "cachedContentTokenCount": 200, "toolUsePromptTokenCount": 300,
                               "candidatesTokenCount": 400, "thoughtsTokenCount": 500, "totalTokenCount": 2200}
    assert answer["cost"]["currency"] == "USD" and abs(answer["cost"]["amount"] - METERED_COST) < 1e-12
    assert answer["cost"]["prices"] == "the prices setting"
    for path in ledger_files(api):
        with open(path, "rb") as handle:
            data = handle.read()
        assert b"metered" not in data and b"GEMINI_API_KEY" not in data and os.stat(path).st_mode & 0o777 == 0o600
    # Read with the vault: both replies, every count, priced.
    report = usage(api)
    [row] = report["rows"]
    assert row["key"] == "$GEMINI_API_KEY" and row["model"] == "metered" and row["requests"] == 2
    assert (row["promptTokens"], row["cachedTokens"], row["toolUseTokens"], row["outputTokens"], row["thoughtsTokens"]) == (2000, 400, 600, 800, 1000)
    assert abs(row["cost"] - 2 * METERED_COST) < 1e-12 and report["prices"] == "the prices setting"
    # Read again: nothing counted twice.
    assert usage(api)["rows"] == [row]
    # A model without a price: tokens counted, cost null, named.
    api.run("ask", "--model", "ok", "q", passphrase=False)
    [unpriced] = [r for r in usage(api)["rows"] if r["model"] == "ok"]
    assert unpriced["cost"] is None and usage(api)["keys"][0]["unpriced"] == ["ok"]
    shown = api.run("key", "usage")
    assert "metered" in shown.out and "$0.0202" in shown.out and "no price" in shown.out, shown


def test_the_built_in_prices_are_dated_and_the_ledger_survives_a_passphrase_change(api):
    api.init()
    api.run("ask", "--model", "metered", "q", passphrase=False)
    report = usage(api)
    assert report["prices"].startswith("built-in prices of 20") and report["rows"][0]["cost"] is None
    new = os.path.join(api.root, "new-pass")
    api.write_private(new, "a brand new passphrase\n")
    assert api.run("passwd", "--new-passphrase-file", new).code == 0
    api.passfile = new
    api.run("ask", "--model", "metered", "q", passphrase=False)
    assert usage(api)["rows"][0]["requests"] == 2


def test_a_budget_warns_at_80_percent_refuses_past_it_and_over_budget_sends(priced):
    env = priced
    assert env.run("unlock").code == 0
    env.vars["GEMVAULT_MAX_OUTPUT_TOKENS"] = "100"
    assert env.run("key", "budget", "default", "--daily", "0.025").out.strip() == "default: daily $0.0250, monthly none"
    for _ in range(2):
        assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 0
    env.server.clear()
    near = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert near.code == 0 and "of its daily budget" in near.err and "85%" in near.err, near
    # The estimate asked countTokens first.
    assert [r["path"].split(":")[-1] for r in env.server.requests()] == ["countTokens", "streamGenerateContent?alt=sse"]
    env.server.clear()
    refused = env.run("ask", "--model", "metered", "--json", "q", passphrase=False)
    assert refused.code == 6, refused
    error = valid("ask", refused.out)["error"]
    assert "past its daily budget" in error["message"] and "spent $0.0304 of $0.0250 today" in error["message"], error
    assert not [r for r in env.server.requests() if "generateContent" in r["path"]]
    forced = env.run("ask", "--model", "metered", "--over-budget", "q", passphrase=False)
    assert forced.code == 0 and "sent anyway (--over-budget)" in forced.err and "past its daily budget" in forced.err, forced
    # The monthly budget, from the setting, counts the month.
    assert env.run("key", "budget", "default", "--daily", "none", "--monthly", "0.04").code == 0
    assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 6
    totals = usage(env)["keys"][0]
    assert totals["budgetDaily"] is None and totals["budgetMonthly"] == 0.04 and abs(totals["spentToday"] - 4 * METERED_COST) < 1e-12


def test_a_budget_setting_applies_to_a_key_from_elsewhere_even_with_the_vault_locked(priced):
    env = priced
    env.vars["GEMINI_API_KEY"] = GOOD_KEY
    env.vars["GEMVAULT_BUDGET_DAILY"] = "0.001"
    # Locked: the key's meter, not the vault's ledger, holds what it spent; the budget is checked.
    locked = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert locked.code == 6 and "key '$GEMINI_API_KEY'" in locked.err and "--over-budget" in locked.err, locked
    assert env.run("unlock").code == 0
    refused = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert refused.code == 6 and "past its daily budget" in refused.err, refused


def test_a_chat_refuses_a_turn_past_the_budget_and_shows_what_it_spent(priced):
    env = priced
    assert env.run("unlock").code == 0
    env.vars["GEMVAULT_MAX_OUTPUT_TOKENS"] = "100"
    assert env.run("key", "budget", "default", "--daily", "0.011").code == 0
    s = PtySession([BIN, "chat", "--model", "metered"], dict(env.vars))
    try:
        s.expect(r"you ›")
        s.line("first")
        s.expect(r"this chat: 2200 tokens, about \$0\.0101")
        s.expect(r"you ›")
        s.mark()
        s.line("second")
        s.expect(r"not sent: this request could take key 'default' past its daily budget")
        s.expect(r"you ›")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_a_warning_printed_after_enter_stays_on_screen_above_the_bubbles(priced):
    env = priced
    assert env.run("unlock").code == 0
    assert env.run("key", "budget", "default", "--daily", "1").code == 0
    # 'ok' has no price: the budget cannot be checked, so the message is refused; /over-budget
    # sends it, and a warning says so after Enter.
    s = PtySession([BIN, "chat", "--no-save", "--bubbles", "--model", "ok"], dict(env.vars, TERM="xterm"), columns=80)
    try:
        s.expect(r"you ›")
        s.line("hello there")
        s.expect(r"/over-budget")
        s.expect(r"you ›")
        s.line("/over-budget")
        s.expect(r"you ›")
        s.read_available(0.2)
        screen = "\n".join(s.screen.all_lines())
        # The warning is whole on the screen (the bubble's redraw once erased it), and the bubbles follow it.
        assert "gemvault: warning: sent anyway (--over-budget): there is no price for model 'ok'" in " ".join(screen.split()), screen
        warning_at = screen.index("sent anyway")
        assert screen.index("hello there", warning_at) > warning_at and "╭" in screen[warning_at:], screen
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_key_usage_and_key_list_fit_a_60_column_window(priced):
    from vt import widest_line
    env = priced
    assert env.run("unlock").code == 0
    assert env.run("key", "budget", "default", "--daily", "5").code == 0
    assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 0
    for argv in (["key", "usage"], ["key", "list"]):
        wide = env.run(*argv)
        assert wide.code == 0 and len(wide.out.splitlines()[0]) > 60, wide
        s = PtySession([BIN] + argv, dict(env.vars), columns=60)
        try:
            assert s.wait() == 0
            # A record per row, and wrapped lines: nothing wider than the window.
            assert widest_line(s.raw()) <= 60, s.raw()
            words = " ".join(s.text().split())
            assert ("metered" in words and "COST" in words) if argv[1] == "usage" else ("default" in words and "LAST USED" in words), words
        finally:
            s.close()


def test_a_day_far_above_the_keys_usual_one_is_named(priced):
    env = priced
    assert env.run("unlock", "--idle", "7d", "--max", "30d").code == 0
    for _ in range(3):
        assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 0
        env.advance_clock(86400)
    # Checked before each request: the fifth of the day sees four days' worth already spent.
    for _ in range(4):
        quiet = env.run("ask", "--model", "metered", "q", passphrase=False)
        assert "usual day" not in quiet.err, quiet
    loud = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert "key 'default' spent $0.0405 today, more than 3× its usual day ($0.0101" in loud.err, loud
    [key] = usage(env)["keys"]
    assert len(key["unusualDays"]) == 1


def test_a_damaged_summary_is_set_aside_and_rebuilt(api):
    api.init()
    api.vars["GEMVAULT_PRICES"] = PRICES
    api.run("ask", "--model", "metered", "q", passphrase=False)
    usage(api)
    [summary] = [p for p in ledger_files(api) if p.endswith("usage-summary")]
    with open(summary, "r+b") as handle:
        handle.seek(10)
        handle.write(b"\x00\x01")
    result = api.run("key", "usage", "--json")
    assert result.code == 0 and "set aside" in result.err, result
    assert valid("key-usage", result.out)["rows"][0]["requests"] == 1
    assert [p for p in ledger_files(api) if ".set-aside-" in p]


def test_bad_prices_and_budgets_are_usage_errors(priced):
    env = priced
    env.vars["GEMVAULT_PRICES"] = "metered=cheap"
    bad = env.run("ask", "--model", "metered", "q")
    assert bad.code == 64 and "'prices' setting" in bad.err, bad
    assert env.run("key", "budget", "default", "--daily", "-1").code == 64
    assert env.run("key", "budget", "nosuchkey", "--daily", "1").code == 1
    assert env.run("key", "usage", "--days", "0").code == 64


# -- Budgets that fail closed (issue 41) ---------------------------------------------------------

OTHER_KEY = "AQ.Zz8RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"


def meters(env):
    """The key meters (not their lock files)."""
    return [p for p in glob.glob(os.path.join(env.vars["XDG_STATE_HOME"], "gemvault", "meters", "*")) if "." not in os.path.basename(p)]


def sent_generate(env):
    return [r for r in env.server.requests() if "generateContent" in r["path"]]


def test_a_script_with_only_an_env_key_and_a_budget_in_config_json_is_checked(api):
    # No vault at all: the key's meter, sealed with a key derived from the key itself, holds what it spent.
    api.vars["GEMVAULT_PRICES"] = PRICES
    api.vars["GEMVAULT_MAX_OUTPUT_TOKENS"] = "100"
    assert api.run("config", "set", "--file", "budget_daily", "0.025", passphrase=False).code == 0
    for _ in range(3):
        assert api.run("ask", "--model", "metered", "q", passphrase=False).code == 0
    api.server.clear()
    refused = api.run("ask", "--model", "metered", "q", passphrase=False)
    assert refused.code == 6 and "key '$GEMINI_API_KEY' past its daily budget: spent $0.0304 of $0.0250" in refused.err, refused
    assert "--max-output-tokens" in refused.err and "--over-budget" in refused.err and not sent_generate(api), refused
    [meter] = meters(api)
    with open(meter, "rb") as handle:
        data = handle.read()
    assert GOOD_KEY.encode() not in data and b"metered" not in data and os.stat(meter).st_mode & 0o777 == 0o600
    # Another key is another count.
    assert api.run("ask", "--model", "metered", "q", passphrase=False, env={"GEMINI_API_KEY": OTHER_KEY}).code == 0


def test_a_vault_budget_covers_the_same_key_reached_through_the_environment(session):  # noqa: F811
    env = session
    env.vars["GEMVAULT_PRICES"] = PRICES
    env.vars["GEMVAULT_MAX_OUTPUT_TOKENS"] = "100"
    assert env.run("key", "budget", "default", "--daily", "0.015").code == 0
    env.vars["GEMINI_API_KEY"] = GOOD_KEY
    # Locked: the vault keeps a budget for this very key, which cannot be read: refused, not sent.
    locked = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert locked.code == 6 and "has a budget kept in the vault, which cannot be read while it is locked" in locked.err and "gemvault unlock" in locked.err, locked
    assert not sent_generate(env)
    assert env.run("unlock").code == 0
    for _ in range(2):
        assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 0
    refused = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert refused.code == 6 and "key 'default' past its daily budget" in refused.err and "gemvault key budget default --daily" in refused.err, refused
    # The spending is filed under the vault's name, matched by the key's value.
    assert [row["key"] for row in usage(env)["rows"]] == ["default"]
    # A key of another value has no such budget.
    assert env.run("ask", "--model", "metered", "q", passphrase=False, env={"GEMINI_API_KEY": OTHER_KEY}).code == 0
    # A budget the vault keeps for every key covers it, and is not skipped while the vault is locked.
    assert env.run("config", "set", "budget_monthly", "100").code == 0
    assert env.run("lock").code == 0
    wide = env.run("ask", "--model", "metered", "q", passphrase=False, env={"GEMINI_API_KEY": OTHER_KEY})
    assert wide.code == 6 and "the vault keeps a budget for every key" in wide.err, wide


def test_an_unpriced_model_under_a_budget_is_refused_and_key_budget_warns(priced):
    env = priced
    assert env.run("unlock").code == 0
    env.vars["GEMVAULT_MODEL"] = "ok"
    set_budget = env.run("key", "budget", "default", "--daily", "1")
    assert set_budget.code == 0 and "the model 'ok' has no price" in set_budget.err and "prices" in set_budget.err, set_budget
    env.server.clear()
    refused = env.run("ask", "q", passphrase=False)
    assert refused.code == 6 and "not sent: there is no price for model 'ok'" in refused.err and "--over-budget" in refused.err, refused
    assert not sent_generate(env)
    forced = env.run("ask", "--over-budget", "q", passphrase=False)
    assert forced.code == 0 and "sent anyway (--over-budget): there is no price for model 'ok'" in forced.err, forced


def test_an_unreadable_ledger_or_a_damaged_meter_refuses_under_a_budget(priced):
    env = priced
    assert env.run("unlock").code == 0
    assert env.run("key", "budget", "default", "--daily", "1").code == 0
    assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 0
    [records] = [p for p in ledger_files(env) if p.endswith("/usage")]
    os.rename(records, records + ".kept")
    os.symlink(records + ".kept", records)
    unreadable = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert unreadable.code == 6 and "the usage ledger could not be read" in unreadable.err, unreadable
    os.remove(records)
    os.rename(records + ".kept", records)
    [meter] = meters(env)
    with open(meter, "r+b") as handle:
        handle.seek(-1, os.SEEK_END)
        last = handle.read(1)
        handle.seek(-1, os.SEEK_END)
        handle.write(bytes([last[0] ^ 1]))
    damaged = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert damaged.code == 6 and "spending meter" in damaged.err and "is damaged" in damaged.err and "remove " + meter in damaged.err, damaged
    os.remove(meter)
    assert env.run("ask", "--model", "metered", "q", passphrase=False).code == 0


def test_the_estimate_counts_the_whole_request_and_the_models_output_limit(priced):
    env = priced
    env.vars["GEMVAULT_PRICES"] = PRICES + ",metered~out-1000=1/10"
    assert env.run("unlock").code == 0
    assert env.run("key", "budget", "default", "--daily", "0.005").code == 0
    env.server.clear()
    refused = env.run("ask", "--model", "metered~out-1000", "--system", "be brief please", "--search", "q", passphrase=False)
    # 1 word, 3 of the system instruction, 10 for the tool; the model's output limit, under 8192.
    assert refused.code == 6 and "14 prompt tokens counted, 1000 reply tokens allowed: the model's output limit, 1000" in refused.err, refused
    [count, get] = env.server.requests()
    assert get["method"] == "GET" and get["path"] == "/v1beta/models/metered~out-1000"
    body = json.loads(count["body"])
    assert list(body) == ["generateContentRequest"], body
    inner = body["generateContentRequest"]
    assert inner["model"] == "models/metered~out-1000" and inner["store"] is False and inner["tools"] == [{"googleSearch": {}}]
    assert inner["systemInstruction"]["parts"][0]["text"] == "be brief please"
    # The limit is kept a day: not asked again.
    env.server.clear()
    assert env.run("ask", "--model", "metered~out-1000", "q", passphrase=False).code == 6
    assert [r["method"] for r in env.server.requests()] == ["POST"]
    # The setting caps the allowance; a thinking budget adds to it; --max-output-tokens sets it.
    env.vars["GEMVAULT_BUDGET_REPLY_ESTIMATE"] = "200"
    capped = env.run("ask", "--model", "metered", "q", passphrase=False)
    assert capped.code == 0, capped
    thinking = env.run("ask", "--model", "metered", "--think-budget", "1000", "q", passphrase=False)
    assert thinking.code == 6 and "1200 reply tokens allowed: budget_reply_estimate 200 + thinking budget 1000" in thinking.err, thinking
    lowered = env.run("ask", "--model", "metered~out-1000", "--max-output-tokens", "10", "q", passphrase=False)
    assert lowered.code == 6 and "10 reply tokens allowed: max_output_tokens 10" in lowered.err, lowered


def test_the_fake_refuses_a_store_beside_the_counted_request(api):
    import urllib.error
    import urllib.request
    def post(body):
        request = urllib.request.Request(api.server.url + "/v1beta/models/ok:countTokens", data=json.dumps(body).encode(),
                                         headers={"x-goog-api-key": GOOD_KEY, "Content-Type": "application/json"})
        try:
            return 200, json.loads(urllib.request.urlopen(request, timeout=10).read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
    contents = [{"role": "user", "parts": [{"text": "two words"}]}]
    assert post({"contents": contents}) == (200, {"totalTokens": 2})
    status, answer = post({"contents": contents, "store": False})
    assert status == 400 and 'Unknown name "store"' in answer["error"]["message"]
    status, answer = post({"generateContentRequest": {"model": "models/ok", "contents": contents}})
    assert status == 400 and "store" in answer["error"]["message"]
    assert post({"generateContentRequest": {"model": "models/ok", "contents": contents, "store": False}}) == (200, {"totalTokens": 2})


def test_chat_budget_over_budget_and_a_budget_raised_in_another_terminal(priced):
    env = priced
    assert env.run("unlock").code == 0
    env.vars["GEMVAULT_MAX_OUTPUT_TOKENS"] = "100"
    assert env.run("key", "budget", "default", "--daily", "0.011").code == 0
    s = PtySession([BIN, "chat", "--no-save", "--model", "metered"], dict(env.vars))
    try:
        s.expect(r"you ›")
        s.line("first")
        s.expect(r"this chat: 2200 tokens")
        s.expect(r"you ›")
        s.line("/budget")
        s.expect(r"key 'default': today \$0\.0101 of \$0\.0110, this month \$0\.0101 \(no budget\)")
        s.expect(r"you ›")
        s.line("second")
        s.expect(r"not sent: this request could take key 'default' past its daily budget")
        s.expect(r"/over-budget")
        s.expect(r"you ›")
        # Raised in another terminal: the retried message goes.
        assert env.run("key", "budget", "default", "--daily", "1").code == 0
        s.line("/retry")
        s.expect(r"this chat: 4400 tokens")
        s.expect(r"you ›")
        assert env.run("key", "budget", "default", "--daily", "0.011").code == 0
        s.line("third")
        s.expect(r"not sent")
        s.expect(r"you ›")
        s.line("/retry --over-budget")
        s.expect(r"sent anyway \(--over-budget\)")
        s.expect(r"this chat: 6600 tokens")
        s.expect(r"you ›")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_a_vault_budget_is_checked_when_the_key_comes_from_the_vault_without_a_session(session):  # noqa: F811
    env = session
    env.vars["GEMVAULT_PRICES"] = PRICES
    assert env.run("key", "budget", "default", "--daily", "0.001").code == 0
    # The passphrase opens the vault for the key, and with it the budget and the ledger.
    refused = env.run("ask", "--model", "metered", "q")
    assert refused.code == 6 and "key 'default' past its daily budget" in refused.err, refused
    assert not sent_generate(env)
