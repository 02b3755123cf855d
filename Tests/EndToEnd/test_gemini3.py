"""Gemini 3 in chat and ask (Docs/cli.md, Docs/history-format.md): thought signatures kept and
sent back verbatim, thought summaries in the chat."""
import json
import urllib.error
import urllib.request

import fake_gemini
from conftest import BIN, GOOD_KEY
from ptyrun import PtySession
from test_ask import ask
from test_fit_in import valid
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
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "q"}]}, turn, {"role": "user", "parts": [{"text": "again"}]}],
                       "store": False}).encode()
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
        # Rendered as markdown: the heading's ** are not shown.
        thought_row = lines.index("thinking: " + THOUGHT.replace("**", ""))
        assert "Forty-two." in lines[thought_row + 1], lines
        # Dimmed (SGR 2), and asked for.
        assert "\x1b[2mthinking:" in s.raw()
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


def test_thought_summaries_are_rendered_as_markdown_dimmed_and_wrapped_to_the_window(api):
    words = " ".join(fake_gemini.THOUGHT_PARTS).replace("**", " ").replace("*", "").split()
    s = PtySession([BIN, "chat", "--no-save", "--model", "thinking-long", "--thoughts"], dict(api.vars), columns=60)
    try:
        s.expect(r"you ›")
        s.mark()
        s.line("q")
        s.expect(r"The answer\.")
        s.expect(r"you ›")
        lines = [line.rstrip() for line in s.screen.all_lines()]
        start = next(i for i, line in enumerate(lines) if line.startswith("thinking: "))
        end = next(i for i, line in enumerate(lines) if "The answer." in line)
        shown = lines[start:end]
        # Markdown rendered: no literal **, and the glued second summary starts a paragraph of its own.
        assert lines[start] == "thinking: Reading the question" and "Planning the answer" in shown, shown
        assert not any("*" in line for line in shown), shown
        # Wrapped to the window between words: no line wider than it, no word split.
        assert all(len(line) <= 60 for line in shown), shown
        assert " ".join(shown).replace("thinking:", "").split() == words, shown
        # Dimmed, the headings bold as well.
        assert "\x1b[1;2mReading the question" in s.raw() or "\x1b[2;1mReading" in s.raw(), repr(s.raw())
        s.mark()
        s.line("/thoughts")
        s.expect(r"thinking: Reading the question")
        s.expect(r"you ›")
        assert "**" not in s.text()
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()
    piped = api.run("ask", "--thoughts", "--model", "thinking-long", "q", passphrase=False)
    assert piped.code == 0 and piped.out == "The answer.\n", piped
    assert piped.err.startswith("thinking: Reading the question\n\nThe user asks"), piped.err
    assert "\n\nPlanning the answer\n\nI will answer briefly.\n" in piped.err and "*" not in piped.err, piped.err


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
        s.expect(r"thinking: Weighing the question I should keep this secret thought")
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
    assert "thinking: " + THOUGHT.replace("**", "") in piped.err and "secret thought" not in piped.out and "Forty-two." in piped.out, piped


EIFFEL = "The Eiffel Tower is 330 metres tall.[1] It was finished in 1889.[1][2]"
TOKYO = "東京タワーの高さは333メートルです。[1]1958年に完成しました。[1]"


def tools_sent(request):
    return json.loads(request["body"]).get("tools")


def test_search_sends_the_tool_and_places_citations_by_byte_offsets_latin_and_cjk(api):
    for model, cited in (("grounded", EIFFEL), ("grounded-cjk", TOKYO)):
        for streaming in ([], ["--no-stream"]):
            api.server.clear()
            result = ask(api, "--model", model, "--search", "q", *streaming)
            assert result.code == 0 and result.out.startswith(cited + "\n"), (streaming, result)
            assert tools_sent(api.server.requests()[-1]) == [{"googleSearch": {}}]
            assert "warning" not in result.err, result
    # Sources and searches under the answer, as plain URLs off a terminal.
    out = ask(api, "--model", "grounded", "--search", "q").out
    assert " [1] Eiffel Tower - Wikipedia — en.wikipedia.org\n     https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQFwiki" in out
    # Each search's results page on a line of its own, as the doc says.
    assert "\nSearches\n eiffel tower height\n     https://www.google.com/search?q=eiffel+tower+height\n" in out, out
    assert "\x1b" not in out
    cjk = ask(api, "--model", "grounded-cjk", "--search", "q").out
    # Readable as typed: the query's letters are not percent-encoded.
    assert "\n 東京タワー 高さ\n     https://www.google.com/search?q=東京タワー+高さ\n" in cjk, cjk
    # --json: the text without marks, the grounding with offsets into it.
    data = valid("ask", ask(api, "--model", "grounded-cjk", "--search", "--json", "q").out)
    text = data["text"].encode()
    assert data["grounding"]["queries"] == ["東京タワー 高さ"] and data["grounding"]["sources"][0]["domain"] == "tokyotower.co.jp"
    assert [text[s["start"]:s["end"]].decode() for s in data["grounding"]["supports"]] == ["東京タワーの高さは333メートルです。", "1958年に完成しました。"]
    # The setting does what the flag does; without either, no tool and no marks.
    api.vars["GEMVAULT_SEARCH"] = "on"
    assert ask(api, "--model", "grounded", "q").out.startswith(EIFFEL)
    del api.vars["GEMVAULT_SEARCH"]
    api.server.clear()
    plain = ask(api, "--model", "grounded", "--json", "q")
    assert tools_sent(api.server.requests()[-1]) is None and "grounding" not in valid("ask", plain.out)


def test_on_a_narrow_terminal_citation_marks_stay_with_their_sentence_and_the_footer_wraps_between_words(api):
    for model, columns in (("grounded-cjk", 19), ("grounded-cjk", 31), ("grounded-cjk", 36), ("grounded", 30), ("grounded", 36)):
        s = PtySession([BIN, "ask", "--no-save", "--search", "--model", model, "q"], dict(api.vars, FORCE_HYPERLINK="0"), columns=columns)
        try:
            assert s.wait(timeout=30) == 0
            lines = [line.rstrip() for line in s.screen.all_lines()]
            assert not [line for line in lines if line.startswith("[")], (columns, lines)
            # Titles and domains break between words; only URLs, on their own lines, may run past the edge.
            for line in lines:
                if "https://" not in line:
                    assert len(line) <= columns or any(ord(c) > 0x2e80 for c in line), (columns, lines)
            assert "en.w" not in lines and not any(line.startswith("ikipedia") for line in lines), lines
        finally:
            s.close()


def test_offsets_that_do_not_fit_leave_their_marks_out_with_a_warning_never_shifted(api):
    result = ask(api, "--model", "grounded-bad", "--search", "q")
    assert result.code == 0, result
    assert result.out.startswith("Ünïcode answer: 東京タワー.[1] Second sentence.\n"), result
    assert "4 citations were left out" in result.err
    # Google's text reaches the terminal neutralised, and a link that is not http(s) is not written.
    assert "\x1b" not in result.out and "\x07" not in result.out and "javascript:" not in result.out
    assert " [2] Bad link — bad.example\n" in result.out


def test_links_are_osc_8_hyperlinks_where_the_terminal_shows_them_and_never_from_model_text(api):
    api.vars["FORCE_HYPERLINK"] = "1"
    out = ask(api, "--model", "grounded", "--search", "q").out
    assert "\x1b]8;;https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQFwiki\x1b\\Eiffel Tower - Wikipedia\x1b]8;;\x1b\\" in out
    assert "\x1b]8;;https://www.google.com/search?q=eiffel+tower+built\x1b\\eiffel tower built\x1b]8;;\x1b\\" in out
    assert out.startswith(EIFFEL + "\n")
    bad = ask(api, "--model", "grounded-bad", "--search", "q").out
    assert bad.count("\x1b]8;;") == 4 and "\x1b]8;;javascript" not in bad, bad
    # A model's own escape sequences stay neutralised in the answer.
    assert "\x1b]8" not in ask(api, "--model", "escape", "q").out


def test_url_context_lists_the_pages_it_could_not_read(api):
    api.server.clear()
    result = ask(api, "--model", "url-read", "--url-context", "read https://example.com/hello and https://news.example/paid")
    assert result.code == 0 and result.out.startswith("The page says hello.\n"), result
    assert "Not read\n https://news.example/paid (paywall)\n" in result.out and "example.com/hello" not in result.out
    assert tools_sent(api.server.requests()[-1]) == [{"urlContext": {}}]
    data = valid("ask", ask(api, "--model", "url-read", "--url-context", "--json", "q").out)
    assert data["urlContext"][1] == {"url": "https://news.example/paid", "status": "URL_RETRIEVAL_STATUS_PAYWALL"}
    assert data["usage"]["toolUsePromptTokenCount"] == 900


def test_code_run_at_google_shows_as_a_code_block_and_its_output_with_a_failed_outcome(api):
    for streaming in ([], ["--no-stream"]):
        api.server.clear()
        result = ask(api, "--model", "code-run", "--code", "q", *streaming)
        assert result.code == 0, result
        assert tools_sent(api.server.requests()[-1]) == [{"codeExecution": {}}]
        assert "```python\nprint(sum(range(10)))\n```\n```output\n45\n```\nThe sum is 45." in result.out, result
        assert "```output\nZeroDivisionError: division by zero\n```\n*OUTCOME_FAILED*" in result.out
        # The first block's outcome was OK: not shown.
        assert result.out.count("OUTCOME") == 1


def test_a_model_without_a_tool_names_the_option_to_leave_out(api):
    for flag, option in (("--search", "leave out --search"), ("--url-context", "leave out --url-context"), ("--code", "leave out --code")):
        refused = ask(api, "--model", "no-tools", flag, "q")
        assert refused.code == 6 and option in refused.err, (flag, refused)


def test_a_chat_with_search_shows_marks_and_sources_and_its_history_keeps_them(api):
    api.init()
    s = chat_session(api, "--model", "grounded")
    try:
        s.line("/search on")
        s.expect(r"search on")
        s.mark()
        s.line("how tall?")
        s.expect(r"330 metres tall\.\[1\] It was finished in 1889\.\[1\]\[2\]")
        s.expect(r"Sources")
        s.expect(r"you ›")
        s.line("/exit")
        assert s.wait() == 0
    finally:
        s.close()
    [conversation] = conversations(api)
    exported = json.loads(api.run("history", "export", conversation["id"], "--format", "json").out)
    grounding = exported["turns"][0]["grounding"]
    assert grounding["queries"] == ["eiffel tower height", "eiffel tower built"] and len(grounding["supports"]) == 2
    shown = api.run("history", "show", conversation["id"])
    assert EIFFEL in shown.out and "Eiffel Tower - Wikipedia" in shown.out, shown


def test_the_fake_refuses_a_field_googles_types_do_not_have(api):
    """Every request gemvault sends passes this check (the whole suite runs through it); a field
    the API does not know gets Google's 400."""
    for body in ({"contents": [], "generationConfig": {"thinkingConfig": {"level": "high"}}},
                 {"contents": [{"role": "user", "parts": [{"txt": "q"}]}]},
                 {"contents": [], "tools": [{"googleSearch": True}]}):
        request = urllib.request.Request(api.server.url + "/v1beta/models/ok:generateContent", data=json.dumps(body).encode(),
                                         headers={"x-goog-api-key": GOOD_KEY, "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("the fake accepted %r" % body)
        except urllib.error.HTTPError as error:
            assert error.code == 400 and b"Invalid JSON payload received" in error.read()
    # Everything this file's tests send with every option on at once passes.
    api.server.clear()
    result = ask(api, "--model", "grounded", "--search", "--url-context", "--code", "--thoughts", "--think", "high", "--temperature", "0.3", "q")
    assert result.code == 0, result


def test_a_folded_thought_line_never_carries_the_servers_escape_sequences(api):
    s = chat_session(api, "--model", "thinking-escape", "--bubbles", "--thoughts")
    try:
        s.line("q")
        s.expect(r"Safe answer\.")
        s.expect(r"you ›")
        raw = s.raw()
        assert "\x1b]0;pwned" not in raw and "\x1b]52" not in raw, raw
        s.line("/thoughts")
        s.expect(r"thinking: ")
        s.line("/exit")
        assert s.wait() == 0
        assert "\x1b]0;pwned" not in s.raw() and "\x1b]52" not in s.raw()
    finally:
        s.close()
