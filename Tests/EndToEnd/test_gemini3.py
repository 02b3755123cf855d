"""Gemini 3 in chat and ask (Docs/cli.md, Docs/history-format.md): thought signatures kept and
sent back verbatim, thought summaries in the chat."""
import json
import urllib.error
import urllib.request

import fake_gemini
from conftest import BIN, GOOD_KEY
from ptyrun import PtySession
from test_ask import ask
from test_history import conversations


def model_turns(request):
    return [c["parts"] for c in json.loads(request["body"])["contents"] if c["role"] == "model"]


def signed_reply(turn):
    """What the fake's "signed" scenario sent for its turn-th message, merged as a client must."""
    sent = fake_gemini.signed_parts(turn)
    return [sent[0], {"text": sent[1]["text"] + sent[2]["text"]}, sent[3]]


def test_the_fake_refuses_a_turn_whose_signature_was_dropped(api):
    """The check the round trip relies on is real: a model turn without its signature is a 400."""
    turn = {"role": "model", "parts": [{"text": "Signed answer 1: plain middle, 末尾。"}]}
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "q"}]}, turn, {"role": "user", "parts": [{"text": "again"}]}]}).encode()
    request = urllib.request.Request(api.server.url + "/v1beta/models/signed:generateContent", data=body,
                                     headers={"x-goog-api-key": GOOD_KEY, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=10)
        raise AssertionError("the fake accepted a dropped signature")
    except urllib.error.HTTPError as error:
        assert error.code == 400 and b"thought_signature" in error.read()


def test_a_chat_sends_each_signature_back_with_its_part_and_so_does_a_resumed_one(api):
    api.init()
    first = api.run("chat", "--model", "signed", input="one\ntwo\n", passphrase=False)
    assert first.code == 0, first
    assert first.out.count("Signed answer") == 2 and "末尾。" in first.out, first
    requests = api.server.requests()
    assert model_turns(requests[-1]) == [signed_reply(1)]
    api.server.clear()
    # The signatures were kept in the encrypted history byte for byte: the resumed chat sends them.
    resumed = api.run("chat", "--continue", input="three\n")
    assert resumed.code == 0 and "Signed answer 3" in resumed.out, resumed
    [request] = api.server.requests()
    assert model_turns(request) == [signed_reply(1), signed_reply(2)]
    assert conversations(api)[0]["turns"] == 3
    # The signatures never show: not in the chat, not in history show or export.
    shown = api.run("history", "show", conversations(api)[0]["id"])
    exported = api.run("history", "export", conversations(api)[0]["id"], "--format", "json")
    for output in (first.out, resumed.out, shown.out, exported.out):
        assert signed_reply(1)[0]["thoughtSignature"] not in output


def test_a_reply_without_signatures_goes_back_as_one_text_part(api):
    first = api.run("chat", "--model", "ok", input="one\ntwo\n", passphrase=False)
    assert first.code == 0, first
    [parts] = model_turns(api.server.requests()[-1])
    assert parts == [{"text": "Bonjour, the fake server says héllo wörld 你好 🚀.\n"}]


def test_an_ask_keeps_the_signatures_of_a_whole_reply_too(api):
    api.init()
    result = ask(api, "--model", "signed", "--no-stream", "q")
    assert result.code == 0 and result.out == "Signed answer 1: plain middle, 末尾。\n", result
    api.server.clear()
    chat = api.run("chat", "--resume", conversations(api)[0]["id"], "--model", "signed", input="more\n")
    assert chat.code == 0 and "Signed answer 2" in chat.out, chat
    assert model_turns(api.server.requests()[-1]) == [signed_reply(1)]


THOUGHT = "**Weighing the question** I should keep this secret thought"


def chat_session(api, *args):
    session = PtySession([BIN, "chat"] + list(args), dict(api.vars))
    session.expect(r"you ›")
    return session


def include_thoughts(request):
    return json.loads(request["body"]).get("generationConfig", {}).get("thinkingConfig", {}).get("includeThoughts")


def test_a_plain_chat_shows_thoughts_dimmed_above_the_answer(api):
    s = chat_session(api, "--model", "thinking", "--thoughts")
    try:
        s.mark()
        s.line("q")
        s.expect(r"Forty-two\.")
        s.expect(r"you ›")
        lines = [line.rstrip() for line in s.screen.all_lines() if line.strip()]
        thought_row = lines.index("thinking: " + THOUGHT)
        assert "Forty-two." in lines[thought_row + 1], lines
        # Dimmed (SGR 2), and asked for.
        assert "\x1b[2mthinking: " in s.raw()
        assert include_thoughts(api.server.requests()[-1]) is True
        # /thoughts off stops asking; /thoughts shows the last reply's in full.
        s.line("/thoughts off")
        s.expect(r"thought summaries off")
        s.line("again")
        s.expect(r"you ›.*\n(.*\n)*.*Forty-two\.")
        assert include_thoughts(api.server.requests()[-1]) is None
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_bubbles_fold_the_thoughts_into_one_line_that_slash_thoughts_expands(api):
    s = chat_session(api, "--model", "thinking", "--bubbles", "--thoughts")
    try:
        s.mark()
        s.line("q")
        s.expect(r"Forty-two\.")
        s.expect(r"you ›")
        screen = "\n".join(s.screen.all_lines())
        assert "💭 thought summary, 9 words: /thoughts shows it" in screen, screen
        assert "I should keep this secret thought" not in screen, screen
        s.mark()
        s.line("/thoughts")
        s.expect(r"thinking: \*\*Weighing the question\*\* I should keep this secret thought")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()


def test_a_chat_whose_model_refuses_thoughts_names_the_option(api):
    result = api.run("chat", "--model", "no-thinking", "--thoughts", input="q\n", passphrase=False)
    assert "include_thoughts" in result.err and "/thoughts off" in result.err and "--thoughts" in result.err, result
    api.vars["GEMVAULT_SHOW_THOUGHTS"] = "on"
    piped = api.run("chat", "--model", "thinking", input="q\n", passphrase=False)
    # Without a terminal the thoughts go to stderr, the answer to stdout.
    assert "thinking: " + THOUGHT in piped.err and THOUGHT not in piped.out and "Forty-two." in piped.out, piped
