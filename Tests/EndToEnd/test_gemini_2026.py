"""Gemini as it is in December 2026 (issue 41): requests ask Google not to keep them
("store": false) unless the user opts in, and the deprecated sampling parameters are sent only
when set, with a warning."""
import json
import urllib.error
import urllib.request

from conftest import BIN, GOOD_KEY
from ptyrun import PtySession


def bodies(api):
    return [json.loads(r["body"]) for r in api.server.requests() if r["path"].split("?")[0].endswith(("generateContent", "streamGenerateContent"))]


def test_the_fake_refuses_a_request_that_would_be_kept(api):
    """The suite's check is real: a body without "store": false is a 400 unless the test opted in."""
    for store, model, refused in ((None, "ok", True), (True, "ok", True), (False, "ok", False), (True, "ok~store-ok", False)):
        body = {"contents": [{"role": "user", "parts": [{"text": "q"}]}]}
        if store is not None:
            body["store"] = store
        request = urllib.request.Request(api.server.url + "/v1beta/models/%s:generateContent" % model, data=json.dumps(body).encode(),
                                         headers={"x-goog-api-key": GOOD_KEY, "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=10)
            assert not refused, (store, model)
        except urllib.error.HTTPError as error:
            assert refused and error.code == 400 and b"store" in error.read(), (store, model)


def test_ask_and_chat_send_store_false_at_the_top_level_by_default(api):
    assert api.run("ask", "--model", "echo", "hello", passphrase=False).code == 0
    assert api.run("ask", "--model", "echo", "--no-stream", "hello", passphrase=False).code == 0
    assert api.run("chat", "--model", "echo", input="one\ntwo\n", passphrase=False).code == 0
    sent = bodies(api)
    assert len(sent) == 4 and all(body["store"] is False for body in sent), sent
    assert all("store" not in body.get("generationConfig", {}) for body in sent)
    reported = json.loads(api.run("ask", "--model", "echo", "--json", "hello", passphrase=False).out)
    assert reported["store"] is False


def test_store_is_sent_only_when_asked_by_flag_setting_or_environment(api):
    flagged = api.run("ask", "--model", "echo~store-ok", "--store", "--json", "hello", passphrase=False)
    assert flagged.code == 0 and json.loads(flagged.out)["store"] is True, flagged
    assert bodies(api)[-1]["store"] is True
    from_env = api.run("ask", "--model", "echo~store-ok", "hello", passphrase=False, env={"GEMVAULT_STORE": "true"})
    assert from_env.code == 0 and bodies(api)[-1]["store"] is True
    explained = api.run("config", "explain", "--json", passphrase=False, env={"GEMVAULT_STORE": "true"})
    assert explained.code == 0, explained
    assert [s for s in json.loads(explained.out)["settings"] if s["name"] == "store"][0]["value"] == "true", explained.out
    assert "GEMVAULT_STORE" in api.run("config", "explain", passphrase=False, env={"GEMVAULT_STORE": "true"}).out
    # Without the opt-in, the suite's fake refuses anything that would be kept: the default holds.
    assert api.run("ask", "--model", "echo", "hello", passphrase=False).code == 0
    assert bodies(api)[-1]["store"] is False


def test_store_in_a_chat_is_switched_with_a_slash_command(api):
    session = PtySession([BIN, "chat", "--model", "echo~store-ok"], api.vars)
    try:
        session.expect(r"you ›")
        session.line("/store")
        session.expect(r"store: off")
        session.line("first")
        session.expect(r"last=first")
        session.line("/store on")
        session.expect(r"store on: Google may keep")
        session.line("second")
        session.expect(r"last=second")
        session.line("/exit")
        assert session.wait() == 0
    finally:
        session.close()
    assert [body["store"] for body in bodies(api)] == [False, True]


def test_sampling_parameters_are_sent_only_when_set_and_then_warned_about(api):
    plain = api.run("ask", "--model", "echo", "hello", passphrase=False)
    assert plain.code == 0 and "deprecated" not in plain.err
    config = bodies(api)[-1].get("generationConfig", {})
    assert not {"temperature", "topP", "topK"} & set(config), config
    warmed = api.run("ask", "--model", "echo", "--temperature", "0.4", "hello", passphrase=False, env={"GEMVAULT_TOP_K": "20"})
    assert warmed.code == 0, warmed
    assert warmed.err.count("Google deprecated temperature, top_p and top_k on 2026-07-21") == 1, warmed.err
    assert "temperature (flag --temperature)" in warmed.err and "top_k (environment GEMVAULT_TOP_K)" in warmed.err, warmed.err
    config = bodies(api)[-1]["generationConfig"]
    assert config["temperature"] == 0.4 and config["topK"] == 20 and "topP" not in config


def test_doctor_names_store_when_it_is_on(api):
    quiet = api.run("doctor", "--json", passphrase=False)
    assert not [f for f in json.loads(quiet.out)["findings"] if f["check"] == "store"], quiet.out
    loud = api.run("doctor", "--json", passphrase=False, env={"GEMVAULT_STORE": "on"})
    [finding] = [f for f in json.loads(loud.out)["findings"] if f["check"] == "store"]
    assert "tells Google to keep it" in finding["message"] and "GEMVAULT_STORE" in finding["message"]
