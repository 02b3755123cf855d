"""ask and models against the fake Gemini server: wire format, streaming, errors, retries, safety."""
import json
import os
import re
import signal
import subprocess
import time
import uuid

import pytest

from conftest import BIN, GOOD_KEY, ROOT, read_until
from test_fit_in import valid

REPLY = "Bonjour, the fake server says héllo wörld 你好 🚀.\n"


def tag(scenario):
    return "%s~%s" % (scenario, uuid.uuid4().hex[:8])


def ask(api, *args, **kw):
    kw.setdefault("passphrase", False)
    return api.run("ask", *args, **kw)


def test_streams_the_reply_and_sends_the_key_only_in_the_header(api):
    result = ask(api, "--model", "ok", "hello", "world")
    assert result.code == 0, result
    assert result.out == REPLY
    [request] = api.server.requests()
    assert request["path"] == "/v1beta/models/ok:streamGenerateContent?alt=sse"
    assert request["headers"]["x-goog-api-key"] == GOOD_KEY
    assert GOOD_KEY not in request["path"]
    assert json.loads(request["body"]) == {"contents": [{"role": "user", "parts": [{"text": "hello world"}]}], "store": False}


def test_framing_variants_give_the_same_text(api):
    for scenario in ("lf", "split", "slow"):
        result = ask(api, "--model", scenario, "hi")
        assert (result.code, result.out) == (0, REPLY), (scenario, result)


def test_stdin_is_added_to_the_prompt_and_settings_reach_the_request(api):
    result = ask(api, "--model", "echo", "--temperature", "0.3", "--system", "be terse", "review this", input="diff --git a b\n+x\n")
    assert result.code == 0, result
    assert "system=be terse temperature=0.3 last=review this\n\ndiff --git a b\n+x" in result.out
    body = json.loads(api.server.requests()[0]["body"])
    assert body["systemInstruction"]["parts"][0]["text"] == "be terse"
    assert body["generationConfig"] == {"temperature": 0.3}


def test_settings_from_config_reach_the_request(api):
    api.run("config", "set", "--file", "top_k", "7", passphrase=False)
    api.run("config", "set", "--file", "max_output_tokens", "99", passphrase=False)
    ask(api, "--model", "echo", "x")
    body = json.loads(api.server.requests()[0]["body"])
    assert body["generationConfig"] == {"topK": 7, "maxOutputTokens": 99}


def test_json_and_no_stream(api):
    result = ask(api, "--model", "ok", "--json", "hi")
    data = json.loads(result.out)
    assert data["text"] == REPLY and data["finishReason"] == "STOP"
    # The model that ran, as the reply's modelVersion names it.
    assert data["usage"]["totalTokenCount"] == 23 and data["model"] == "ok"
    unary = ask(api, "--model", "ok", "--no-stream", "hi")
    assert unary.code == 0 and unary.out == "A whole answer at once.\n"
    assert api.server.requests()[-1]["path"] == "/v1beta/models/ok:generateContent"


def test_count_tokens(api):
    result = ask(api, "--model", "ok", "--count-tokens", "one two three four")
    assert (result.code, result.out) == (0, "4\n")
    assert api.server.requests()[0]["path"].endswith(":countTokens")


def test_thought_parts_are_never_printed(api):
    result = ask(api, "--model", "thinking", "what is the answer")
    assert result.code == 0 and result.out == "Forty-two.\n"
    assert "secret thought" not in result.out + result.err


def test_escape_sequences_are_neutralised(api):
    result = ask(api, "--model", "escape", "hi")
    assert result.code == 0
    assert "\x1b" not in result.out and "\x07" not in result.out and "\u009b" not in result.out
    assert "^[[31mALERT" in result.out and "^[]52;c;" in result.out


def test_json_escapes_c1_controls_and_keeps_the_text_exact(api):
    result = api.run("ask", "--json", "--model", "escape", "hi", passphrase=False)
    assert result.code == 0, result
    # No raw C1 control (UTF-8 C2 80 to C2 9F), nor any other control character, reaches stdout.
    assert not [c for c in result.out if 0x80 <= ord(c) <= 0x9f or (ord(c) < 0x20 and c != "\n")], repr(result.out)
    assert "\\u009b2J" in result.out
    assert json.loads(result.out)["text"] == ("red \x1b[31mALERT\x1b[0m clip \x1b]52;c;ZXZpbA==\x07 title \x1b]0;pwned\x07"
                                          " bell\x07 c1 \u009b2J end\n")


def test_the_prompt_and_system_text_are_wiped_from_the_command_line(api):
    """Every user can read /proc/PID/cmdline; a slow reply keeps ask running long enough to look."""
    system = "private system text %d" % os.getpid()
    shapes = [(["--color", "never", "ask", "--model", "slow", "--system", system, "private-word-one", "private-word-two"],
               "private-word-one private-word-two"),
              (["ask", "--system=" + system, "--model", "slow", "--", "--private-word-three"], "--private-word-three")]
    for args, prompt in shapes:
        api.server.clear()
        proc = subprocess.Popen([BIN] + args, env=api.vars, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while not api.server.requests() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.02)
            with open("/proc/%d/cmdline" % proc.pid, "rb") as handle:
                seen = handle.read()
            assert proc.poll() is None, "ask ended before its command line was read"
        finally:
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0 and out == REPLY.encode(), (args, out, err)
        assert b"private" not in seen, seen
        # The rest of the command line is as it was, for ps and for the user.
        words = seen.split(b"\0")
        assert words[0] == BIN.encode() and b"ask" in words and b"slow" in words, seen
        assert (b"--system" in words if "--system" in args else b"--system=" in words), seen
        # What was wiped from argv still reached the request.
        body = json.loads(api.server.requests()[0]["body"])
        assert body["systemInstruction"]["parts"][0]["text"] == system
        assert body["contents"][0]["parts"][0]["text"] == prompt


def test_invalid_key_names_its_source_and_never_echoes_it(api):
    bad = "AQ.BADKEYx0123456789abcdefghijklmnopqrstuvwxyz0123456"
    result = ask(api, "--model", "ok", "hi", env={"GEMINI_API_KEY": bad})
    assert result.code == 6
    assert "environment variable GEMINI_API_KEY" in result.err and "API_KEY_INVALID" in result.err
    assert "wrong, revoked or deleted" in result.err and "unset GEMINI_API_KEY" in result.err
    assert bad[:8] not in result.err and bad not in result.out


def test_invalid_vault_key_hint_names_key_rotate(api):
    api.init()
    api.run("key", "set", "work", input="AQ.BADKEYx0123456789abcdefghijklmnopqrstuvwxyz0123456")
    result = api.run("ask", "--key", "work", "--model", "ok", "hi", env={"GEMINI_API_KEY": ""})
    assert result.code == 6 and "gemvault key rotate work" in result.err


def test_api_errors_and_exit_codes(api):
    cases = {
        "no-such-model": (6, "not found for API version v1beta", "gemvault models"),
        "disabled": (6, "not enabled", None),
        "blocked": (6, "blocked by Gemini (SAFETY)", None),
        "safety": (6, "safety filters (SAFETY)", None),
        "recitation": (6, "RECITATION", None),
        "max-tokens": (6, "MAX_TOKENS", "max_output_tokens"),
        "quota-day": (6, "daily quota", None),
        "error-mid": (7, "499 CANCELLED", None),
        "error-mid-data": (7, "503 UNAVAILABLE", None),
        "drop": (7, "connection", None),
        "garbage": (7, "not a Gemini event stream", None),
        "empty": (7, "without a reply", None),
        "not-json": (7, "not a Gemini response", None),
    }
    for scenario, (code, text, hint) in cases.items():
        result = ask(api, "--model", tag(scenario), "hi", env={"GEMVAULT_RETRIES": "1"})
        assert result.code == code, (scenario, result)
        assert text in result.err, (scenario, result)
        if hint:
            assert hint in result.err
    # A partial reply stays on stdout, ended by a newline, before the error.
    partial = ask(api, "--model", "max-tokens", "hi")
    assert partial.out == "Partial answer\n"


@pytest.mark.parametrize("unary", [False, True])
def test_finish_problems_say_what_happened(api, unary):
    """Google's finishMessage is shown; thinking that used the whole budget is told as such; a
    stream that ends inside an event is called cut off, not foreign."""
    flags = ["--no-stream"] if unary else []
    other = ask(api, "--model", "other-finish", *flags, "hi")
    assert other.code == 6 and "(OTHER)" in other.err and "The model could not produce content for this request." in other.err, other
    thinking = ask(api, "--model", "thinking-only", *flags, "hi")
    assert thinking.code == 6 and "thinking" in thinking.err and "1021 thought tokens" in thinking.err, thinking
    assert "thinking counts against max_output_tokens" in thinking.err and "ask for a shorter answer" not in thinking.err, thinking
    if not unary:
        cut = ask(api, "--model", tag("cut-event"), "hi", env={"GEMVAULT_RETRIES": "1"})
        assert cut.code == 7 and "cut off in the middle of an event" in cut.err and "not a Gemini response" not in cut.err, cut


def test_daily_quota_is_not_retried(api):
    ask(api, "--model", tag("quota-day"), "hi")
    assert len(api.server.requests()) == 1


def test_429_with_retry_info_then_success(api):
    started = time.time()
    result = ask(api, "--model", tag("retry-429"), "hi")
    assert result.code == 0 and result.out == REPLY
    assert "retrying in 1 s (429 RESOURCE_EXHAUSTED: You exceeded your current quota" in result.err
    assert time.time() - started >= 1.0
    assert len(api.server.requests()) == 2


def test_retry_after_header_sets_the_wait(api):
    """Without RetryInfo, the Retry-After header says how long to wait (the backoff alone would say 1 s)."""
    result = ask(api, "--model", tag("retry-after"), "hi")
    assert result.code == 0 and result.out == REPLY
    assert "retrying in 2 s (503 UNAVAILABLE: The model is overloaded" in result.err, result.err
    assert len(api.server.requests()) == 2


def test_503_then_success_and_persistent_503(api):
    result = ask(api, "--model", tag("retry-503"), "hi")
    assert result.code == 0 and "retrying in" in result.err and "503 UNAVAILABLE: The model is overloaded" in result.err
    api.server.clear()
    result = ask(api, "--model", tag("always-503"), "hi", env={"GEMVAULT_RETRIES": "2"})
    assert result.code == 7 and "503" in result.err
    assert len(api.server.requests()) == 3


def test_a_refused_connection_on_loopback_fails_at_once_without_retries(api):
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for endpoint in ("http://127.0.0.1:%d" % port, "http://localhost:%d" % port):
        started = time.monotonic()
        result = ask(api, "--model", "ok", "hi", env={"GEMVAULT_ENDPOINT": endpoint})
        elapsed = time.monotonic() - started
        assert result.code == 7 and "connection to %s was refused: nothing listens there" % endpoint in result.err, result
        assert "retrying" not in result.err and elapsed < 3, (elapsed, result)


def test_a_stream_that_never_ends_hits_the_timeout(api):
    started = time.time()
    result = ask(api, "--model", "hang", "--timeout", "1", "hi")
    assert result.code == 7 and "timeout" in result.err
    assert result.out.startswith("Bonjour")
    assert time.time() - started < 10
    result = ask(api, "--model", "hang-first", "hi", env={"GEMVAULT_TIMEOUT": "1"})
    assert result.code == 7 and "no data from the server for 1 s" in result.err


def test_timeout_bounds_silence_not_a_long_reply(api):
    # Twelve events 0.3 s apart take about 3.6 s; a 1 s timeout must not cut them off.
    result = ask(api, "--model", "steady", "--timeout", "1", "hi")
    assert result.code == 0, result
    assert result.out.startswith("step 0 ") and "step 11" in result.out


def test_requests_go_through_a_proxy_from_the_environment(api):
    # The fake server doubles as an HTTP proxy: it sees the absolute-form request line.
    result = ask(api, "--model", "ok", "--allow-insecure-endpoint", "hi",
                 env={"GEMVAULT_ENDPOINT": "http://gemini.invalid", "http_proxy": api.server.url})
    assert result.code == 0 and result.out == REPLY, result
    [request] = api.server.requests()
    assert request["proxied"] and request["path"] == "/v1beta/models/ok:streamGenerateContent?alt=sse"


def test_https_requests_keep_honouring_the_proxy_variables(api):
    # A listener stands in for the proxy: an https request must arrive as CONNECT to it.
    import socket
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    seen = []

    def accept():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            seen.append(connection.recv(4096).split(b"\r\n")[0])
            connection.close()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    proxy = "http://127.0.0.1:%d" % listener.getsockname()[1]
    result = ask(api, "--model", "ok", "--timeout", "5", "hi",
                 env={"GEMVAULT_ENDPOINT": "https://generativelanguage.googleapis.com", "https_proxy": proxy, "GEMVAULT_RETRIES": "1"})
    listener.close()
    assert seen and set(seen) == {b"CONNECT generativelanguage.googleapis.com:443 HTTP/1.1"}, (seen, result)
    assert result.code == 7, result


def test_ctrl_c_stops_ask_with_130_and_keeps_partial_text(api):
    proc = subprocess.Popen([BIN, "ask", "--model", "slow-long", "hi"], env=api.vars, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    shown = read_until(proc.stdout, b"tick 0 ")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    out = shown + out
    assert proc.returncode == 130
    assert out.startswith(b"tick 0 ") and out.endswith(b"\n")


def test_key_shaped_prompt_is_refused_without_a_terminal_unless_allowed(api):
    leaked = "AIzaSyLeaked-0123456789abcdefghijklmnop"
    result = ask(api, "--model", "ok", "my key is " + leaked)
    assert result.code == 1 and "looks like a Google API key (AIza…mnop)" in result.err, result
    assert "--allow-secrets" in result.err and leaked not in result.err
    assert api.server.requests() == []
    for token in ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-abcdefghijkl",
                  "sk-proj-abcdefghijklmnopqrstuvwxyz012345"):
        refused = api.run("ask", "--model", "ok", "--json", input="config:\n  token: %s\n" % token, passphrase=False)
        assert refused.code == 1 and json.loads(refused.out)["error"]["exitCode"] == 1, refused
    assert api.server.requests() == []
    allowed = ask(api, "--model", "ok", "--allow-secrets", "my key is " + leaked)
    assert allowed.code == 0 and allowed.out == REPLY, allowed
    assert len(api.server.requests()) == 1


def test_models_clears_its_spinner_before_an_error(api):
    """A server that never answers, with a one-second timeout: the spinner ran, and the error
    line that follows starts on a clean row."""
    import socket
    from ptyrun import PtySession
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    variables = dict(api.vars, GEMVAULT_ENDPOINT="http://127.0.0.1:%d" % silent.getsockname()[1])
    s = PtySession([BIN, "models", "--timeout", "1"], variables)
    try:
        code = s.wait(timeout=30)
        raw = s.raw()
        rows = s.screen.all_lines()
    finally:
        s.close()
        silent.close()
    assert code == 7 and "waiting for Gemini" in raw, raw
    [error_row] = [row for row in rows if "gemvault: error:" in row]
    assert error_row.startswith("gemvault: error:"), rows


def test_a_key_cut_short_is_told_so(api):
    api.init()
    for cut, kind in ((GOOD_KEY[:20], "an auth key (AQ.…)"), ("AIzaSyD3mo-Key_0123", "a standard key (AIza…)")):
        result = api.run("key", "set", "cut", input=cut + "\n")
        assert result.code == 0, result
        assert "looks cut short: it starts like %s but has only %d characters" % (kind, len(cut)) in result.err, result
        assert "an auth key starts with AQ." not in result.err
    assert "an auth key starts with AQ." in api.run("key", "set", "other", input="sk-not-google\n").err


def test_models_lists_generate_content_models_across_pages(api):
    result = api.run("models", passphrase=False)
    assert result.code == 0, result
    assert "gemini-3.6-flash" in result.out and "gemini-3.1-pro-preview" in result.out
    assert "embedding" not in result.out and "1,048,576" in result.out
    data = json.loads(api.run("models", "--json", passphrase=False).out)["models"]
    assert [m["name"] for m in data] == ["gemini-3.6-flash", "gemini-3.1-pro-preview"]
    paths = [r["path"] for r in api.server.requests()]
    assert any("pageToken=Cg9tb2RlbHMvcGFnZS0y%2F%2B%3D" in p for p in paths), paths


def test_no_key_exits_5_before_any_request(api):
    result = api.run("ask", "hi", env={"GEMINI_API_KEY": ""}, passphrase=False)
    assert result.code == 5
    assert api.server.requests() == []


def test_ask_with_vault_key_and_passphrase_fd(api):
    api.init()
    api.run("key", "set", input=GOOD_KEY.replace("D3", "V4"))
    result = api.run("ask", "--model", "ok", "hi", env={"GEMINI_API_KEY": ""})
    assert result.code == 0
    assert api.server.requests()[0]["headers"]["x-goog-api-key"] == GOOD_KEY.replace("D3", "V4")


def test_empty_prompt_is_a_usage_error(api):
    result = ask(api, input="")
    assert result.code == 64


def test_chat_reads_a_script_from_a_pipe(api):
    result = api.run("chat", "--model", "echo", input="hello\nsecond\n/usage\n", passphrase=False)
    assert result.code == 0, result
    assert "turns=1 roles=user" in result.out and "turns=3 roles=user,model,user" in result.out
    assert "\x1b" not in result.out
    assert "session: 22 tokens" in result.err


def test_ask_json_gives_an_object_for_usage_errors_and_termination(api):
    for argv in (["--bogus", "hi"], ["--model"]):
        result = ask(api, "--json", *argv)
        assert result.code == 64, result
        error = json.loads(result.out)["error"]
        assert (error["exitCode"], error["reason"], error["status"]) == (64, "usage", None) and error["message"], result
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        process = subprocess.Popen([BIN, "ask", "--json", "--model", tag("slow-long"), "hi"], env=api.vars,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(1.5)
        process.send_signal(sig)
        out, err = process.communicate(timeout=30)
        data = json.loads(out)
        expected = 130 if sig == signal.SIGINT else 128 + sig
        assert process.returncode == expected and data["error"]["exitCode"] == expected, (sig, process.returncode, data, err)
        assert data["interrupted"] is True and data["text"].startswith("tick 0"), data
        assert data["error"]["message"], data
        # The object a script gets after a signal is one the committed schema accepts.
        valid("ask", out)


def test_every_local_reason_ask_json_gives_is_documented(api):
    """A refusal on loopback is its own reason (not retried); the reason a script reads must
    be in the documented list, with the exit code it comes with."""
    import socket
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    result = api.run("ask", "--json", "hi", env={"GEMVAULT_ENDPOINT": "http://127.0.0.1:%d" % port}, passphrase=False)
    error = valid("ask", result.out)["error"]
    assert result.code == 7 and (error["exitCode"], error["reason"]) == (7, "connection-refused"), result
    with open(os.path.join(ROOT, "Docs", "cli.md")) as handle:
        reference = handle.read().split("### `ask --json`", 1)[1].split("## `models`", 1)[0]
    documented = dict(re.findall(r"^\| `([a-z-]+)`(?:, `[a-z-]+`)* \| ([0-9, ]+) \|", reference, re.M))
    assert documented.get("connection-refused") == "7", documented
    assert documented.get("terminated") == "129, 143", documented


def test_a_chat_whose_input_ends_at_once_exits_cleanly_every_time(api):
    """chat starts loading libcurl on another thread; an exit in the middle of that load
    crashed now and then (SIGSEGV), most often when resuming through a session, so one run
    proves nothing: this makes 100."""
    runtime = os.path.join(api.root, "run")
    os.mkdir(runtime, 0o700)
    api.vars["XDG_RUNTIME_DIR"] = runtime
    api.init()
    assert api.run("chat", "--model", "ok", input="hello\n", passphrase=False).code == 0
    assert api.run("unlock").code == 0
    try:
        for run in range(100):
            result = api.run("chat", "--model", "ok", "--continue", input="", passphrase=False)
            assert result.code == 0, (run, result)
    finally:
        api.run("lock", passphrase=False)
