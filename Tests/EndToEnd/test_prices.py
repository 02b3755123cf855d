"""Prices with dates, for the model that really ran (Docs/usage.md): a turn is priced at the
period of its own UTC day, as the model the reply's modelVersion names, at the service tier that
served it; search queries past the month's free ones; `gemvault prices`; thinking levels checked
against the model; `models` with what gemvault knows of each."""
import json
import time

from test_fit_in import valid

NEW_YEAR = 1798761600  # 2027-01-01T00:00:00Z


def at(env, epoch):
    """Moves this user's clock to `epoch` (a debug build adds the offset to the wall clock)."""
    env.vars["GEMVAULT_TEST_CLOCK_OFFSET"] = str(epoch - int(time.time()))


def cost(usage, input, output, cached):
    prompt, hit = usage.get("promptTokenCount", 0), usage.get("cachedContentTokenCount", 0)
    tokens_in = (prompt - hit + usage.get("toolUsePromptTokenCount", 0)) * input + hit * cached
    return (tokens_in + (usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)) * output) / 1e6


def ask_json(env, *args):
    result = env.run("ask", "--json", *args, "q", passphrase=False)
    assert result.code == 0, result
    return valid("ask", result.out), result


def test_turns_either_side_of_new_year_are_priced_at_their_periods(api):
    api.init()
    at(api, NEW_YEAR - 60)  # 2026-12-31 23:59 UTC
    december, _ = ask_json(api, "--model", "gemini-3.8-flash")
    at(api, NEW_YEAR)  # 2027-01-01 00:00 UTC
    january, _ = ask_json(api, "--model", "gemini-3.8-flash")
    assert december["usage"] == january["usage"] and december["usage"]["totalTokenCount"] > 0
    assert abs(december["cost"]["amount"] - cost(december["usage"], 0.75, 3.75, 0.075)) < 1e-12
    assert abs(january["cost"]["amount"] - cost(january["usage"], 1.50, 7.50, 0.15)) < 1e-12
    assert january["cost"]["amount"] == 2 * december["cost"]["amount"]
    # The ledger keeps each turn's day, and key usage prices each at its own.
    report = valid("key-usage", api.run("key", "usage", "--json").out)
    costs = {row["day"]: row["cost"] for row in report["rows"]}
    assert costs == {"2026-12-31": december["cost"]["amount"], "2027-01-01": january["cost"]["amount"]}


def test_a_routed_request_is_priced_and_filed_as_the_model_that_ran(api):
    api.init()
    answer, result = ask_json(api, "--model", "gemini-3.7-flash")
    assert answer["model"] == "gemini-3.8-flash"
    assert "gemini-3.7-flash is served by gemini-3.8-flash since 2026-10-08" in result.err, result
    assert result.err.count("is served by") == 1
    [row] = valid("key-usage", api.run("key", "usage", "--json").out)["rows"]
    assert row["model"] == "gemini-3.8-flash"
    # 3.5 Flash goes to 3.6 Flash, which costs less: the price is the one of the model that ran.
    at(api, NEW_YEAR - 86400 * 30)
    cheaper, result = ask_json(api, "--model", "gemini-3.5-flash")
    assert cheaper["model"] == "gemini-3.6-flash" and "gemini-3.5-flash is served by gemini-3.6-flash" in result.err
    assert abs(cheaper["cost"]["amount"] - cost(cheaper["usage"], 0.75, 3.75, 0.075)) < 1e-12


def test_the_tier_that_served_a_request_is_recorded_and_priced(api):
    api.init()
    at(api, NEW_YEAR)
    standard, _ = ask_json(api, "--model", "gemini-3.8-flash")
    flex, result = ask_json(api, "--model", "gemini-3.8-flash~tier-flex")
    priority, _ = ask_json(api, "--model", "gemini-3.8-flash~tier-priority")
    assert "served by" not in result.err, result
    assert abs(flex["cost"]["amount"] - standard["cost"]["amount"] / 2) < 1e-12
    assert abs(priority["cost"]["amount"] - standard["cost"]["amount"] * 1.8) < 1e-12
    models = {row["model"] for row in valid("key-usage", api.run("key", "usage", "--json").out)["rows"]}
    assert models == {"gemini-3.8-flash", "gemini-3.8-flash:flex", "gemini-3.8-flash:priority"}


def test_search_queries_are_counted_and_those_past_the_free_ones_cost(api):
    api.init()
    api.vars["GEMVAULT_PRICES"] = "grounded=1/10/0.1/14"
    api.vars["GEMVAULT_SEARCH_FREE_QUERIES"] = "0"
    answer, _ = ask_json(api, "--model", "grounded", "--search")
    queries = len(answer["grounding"]["queries"])
    assert queries > 0
    assert abs(answer["cost"]["amount"] - (cost(answer["usage"], 1, 10, 0.1) + queries * 14 / 1000)) < 1e-12
    report = valid("key-usage", api.run("key", "usage", "--json").out)
    assert report["rows"][0]["searchQueries"] == queries and report["keys"][0]["searchQueries"] == queries
    assert abs(report["keys"][0]["cost"] - answer["cost"]["amount"]) < 1e-12
    assert "SEARCHES" in api.run("key", "usage").out
    # Within the month's free queries, they cost nothing.
    api.vars["GEMVAULT_SEARCH_FREE_QUERIES"] = "5000"
    report = valid("key-usage", api.run("key", "usage", "--json").out)
    assert abs(report["keys"][0]["cost"] - cost(answer["usage"], 1, 10, 0.1)) < 1e-12


def test_prices_shows_the_table_in_use_with_sources_and_end_dates(api):
    report = valid("prices", api.run("prices", "--json", passphrase=False).out)
    rows = {(row["model"], row["to"]): row for row in report["rows"]}
    assert report["prices"].startswith("built-in prices of 2026-12-07") and report["searchFreeQueries"] == 5000
    assert rows[("gemini-3.6-flash", "2026-12-31")]["input"] == 0.75 and rows[("gemini-3.6-flash", None)]["from"] == "2027-01-01"
    assert rows[("gemini-3.7-flash", "2026-12-31")]["servedBy"] == "gemini-3.8-flash"
    assert rows[("gemini-3-pro", None)]["stage"] == "retired"
    assert all(row["source"] for row in report["rows"])
    shown = api.run("prices", passphrase=False)
    assert shown.code == 0 and "gemini-4-argon" in shown.out and "2026-11-30" in shown.out, shown
    api.vars["GEMVAULT_PRICES"] = "mine=1/2@..2026-12-31,mine=2/4@2027-01-01.."
    mine = [row for row in valid("prices", api.run("prices", "--json", passphrase=False).out)["rows"] if row["model"] == "mine"]
    assert [(row["from"], row["to"], row["input"], row["source"]) for row in mine] == [
        (None, "2026-12-31", 1, "the prices setting"), ("2027-01-01", None, 2, "the prices setting")]
    api.vars["GEMVAULT_PRICES"] = "mine=1/2@..2027-01-31,mine=2/4@2027-01-01.."
    overlap = api.run("prices", passphrase=False)
    assert overlap.code == 64 and "overlap" in overlap.err, overlap


def test_a_thinking_level_the_model_refuses_is_sent_as_one_it_takes(api):
    result = api.run("ask", "--model", "gemini-3.8-flash", "--think", "minimal", "q", passphrase=False)
    assert result.code == 0, result
    assert "'low' is sent instead" in result.err
    sent = json.loads(api.server.requests()[-1]["body"])
    assert sent["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "low"}
    strict = api.run("ask", "--model", "gemini-3.8-flash", "--think", "minimal", "--strict", "q", passphrase=False)
    assert strict.code == 64 and "low, medium, high" in strict.err, strict
    # A model that takes it gets it as given.
    api.server.clear()
    assert api.run("ask", "--model", "gemini-3.6-flash", "--think", "minimal", "q", passphrase=False).code == 0
    assert json.loads(api.server.requests()[-1]["body"])["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "minimal"}


def test_thinking_on_a_model_without_it_gets_the_developer_apis_hint(api):
    result = api.run("ask", "--model", "no-thinking-dev", "--think-budget", "0", "q", passphrase=False)
    assert result.code == 6 and "Thinking is not enabled for models/no-thinking-dev" in result.err, result
    assert "hint: this model does not think" in result.err


def test_no_request_carries_sampling_fields_unless_set(api):
    api.run("ask", "--model", "gemini-3.8-flash", "q", passphrase=False)
    config = json.loads(api.server.requests()[-1]["body"]).get("generationConfig", {})
    assert not {"temperature", "topP", "topK"} & set(config)


def test_models_shows_thinking_stage_and_prices(api):
    at(api, NEW_YEAR - 86400)
    data = {m["name"]: m for m in valid("models", api.run("models", "--json", passphrase=False).out)["models"]}
    flash = data["gemini-3.6-flash"]
    assert flash["thinkingLevels"] == ["minimal", "low", "medium", "high"] and flash["stage"] == "GA"
    assert flash["priceToday"] == {"input": 0.75, "output": 3.75} and flash["price2027"] == {"input": 1.5, "output": 7.5}
    assert data["gemini-3.1-pro-preview"]["stage"] == "preview" and "minimal" not in data["gemini-3.1-pro-preview"]["thinkingLevels"]
    shown = api.run("models", passphrase=False)
    assert "THINKING" in shown.out and "FROM 2027-01-01" in shown.out and "$0.75/$3.75" in shown.out, shown
