"""ask --schema FILE (Docs/cli.md): structured output sent as Google's responseMimeType and
responseJsonSchema, the reply checked locally against the schema, exit 8 when it does not match."""
import json
import os

from conftest import GOOD_KEY
from test_ask import ask, tag
from test_fit_in import valid

PERSON = {"type": "object",
          "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0},
                         "city": {"type": "string", "maxLength": 5}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
          "required": ["name", "age", "city", "tags"], "additionalProperties": False}


def schema_file(api, schema=PERSON, name="person.json"):
    path = os.path.join(api.root, name)
    with open(path, "w") as handle:
        handle.write(schema if isinstance(schema, str) else json.dumps(schema))
    return path


def test_the_schema_goes_as_response_json_schema_and_a_matching_reply_is_printed_as_json(api):
    path = schema_file(api)
    for streaming in ([], ["--no-stream"]):
        api.server.clear()
        result = ask(api, "--schema", path, "--model", tag("structured"), "who?", *streaming)
        assert result.code == 0, result
        data = json.loads(result.out)
        assert data == {"name": "x", "age": 0, "city": "東京タワー", "tags": ["a"]}
        [request] = api.server.requests()
        config = json.loads(request["body"])["generationConfig"]
        assert config == {"responseMimeType": "application/json", "responseJsonSchema": PERSON}
        assert request["headers"]["x-goog-api-key"] == GOOD_KEY


def test_json_carries_the_parsed_reply_in_data_and_the_envelope_is_otherwise_unchanged(api):
    path = schema_file(api)
    result = ask(api, "--schema", path, "--json", "--model", tag("structured"), "who?")
    assert result.code == 0, result
    document = valid("ask", result.out)
    assert document["data"]["age"] == 0 and json.loads(document["text"]) == document["data"] and document["error"] is None
    plain = ask(api, "--json", "--model", "ok", "hi")
    assert "data" not in valid("ask", plain.out)


def test_a_reply_that_breaks_the_schema_exits_8_with_the_first_violation(api):
    path = schema_file(api)
    broken = ask(api, "--schema", path, "--model", tag("structured-wrong"), "who?")
    assert broken.code == 8, broken
    assert broken.out == "" and "does not match %s: /: 'name' is required" % path in broken.err
    as_json = ask(api, "--schema", path, "--json", "--model", tag("structured-wrong"), "who?")
    assert as_json.code == 8
    document = valid("ask", as_json.out)
    assert document["data"] is None and document["error"]["exitCode"] == 8 and document["error"]["reason"] == "schema-mismatch"
    assert "'name' is required" in document["error"]["message"] and json.loads(document["text"])["age"] == 0
    text = ask(api, "--schema", path, "--model", tag("structured-text"), "who?")
    assert text.code == 8 and "the reply is not JSON" in text.err and text.out == ""


def test_a_schema_file_gemvault_cannot_use_is_refused_before_any_request(api):
    cases = [(schema_file(api, "{not json", "broken.json"), "is not JSON"),
             (schema_file(api, [1, 2], "list.json"), "must hold a JSON Schema object"),
             (schema_file(api, {"type": "text"}, "type.json"), "'type' at / must name"),
             (schema_file(api, {"properties": {"id": {"pattern": "(["}}}, "pattern.json"), "'pattern' at /properties/id is not a regular expression"),
             (schema_file(api, {"pattern": "(a)\\1"}, "backreference.json"), "uses a backreference, which gemvault cannot check in bounded time"),
             (schema_file(api, {"pattern": "(" * 200_000}, "nested.json"), "'pattern' at / nests groups more than 256 deep, more than gemvault checks"),
             (schema_file(api, {"anyOf": [{"$ref": "#"}, {"type": "string"}]}, "endless.json"), "'$ref' at / leads back to itself"),
             (os.path.join(api.root, "missing.json"), "no such regular file"),
             (api.root, "no such regular file")]
    for path, words in cases:
        result = ask(api, "--schema", path, "--model", tag("structured"), "who?")
        assert result.code == 64 and words in result.err, (path, result)
    assert api.server.requests() == []


def test_thinking_is_sent_as_a_level_or_a_budget_never_both(api):
    """--think LEVEL, the `thinking` setting and --think-budget N (issue 29 part 1's controls)."""
    def config_of(*args):
        api.server.clear()
        result = ask(api, "--model", "ok", "hi", *args)
        assert result.code == 0, result
        [request] = api.server.requests()
        return json.loads(request["body"]).get("generationConfig", {})
    assert config_of("--think", "low") == {"thinkingConfig": {"thinkingLevel": "low"}}
    assert config_of("--think-budget", "0") == {"thinkingConfig": {"thinkingBudget": 0}}
    assert config_of("--think-budget", "-1") == {"thinkingConfig": {"thinkingBudget": -1}}
    assert config_of() == {}
    api.vars["GEMVAULT_THINKING"] = "high"
    assert config_of() == {"thinkingConfig": {"thinkingLevel": "high"}}
    # A budget for one command wins over the setting; both flags are refused before any request.
    assert config_of("--think-budget", "1024") == {"thinkingConfig": {"thinkingBudget": 1024}}
    api.server.clear()
    both = ask(api, "--model", "ok", "hi", "--think", "low", "--think-budget", "10")
    assert both.code == 64 and "not both" in both.err and api.server.requests() == []
    for bad in (["--think", "huge"], ["--think-budget", "lots"], ["--think-budget", "-2"]):
        refused = ask(api, "--model", "ok", "hi", *bad)
        assert refused.code == 64, (bad, refused)
    assert api.server.requests() == []


def test_thoughts_are_asked_for_shown_on_stderr_and_kept_out_of_the_answer(api):
    """--thoughts (setting show_thoughts) sends includeThoughts; the summaries go dimmed to
    stderr above the answer, into --json's `thoughts`, and never into `text` or stdout."""
    thought = "**Weighing the question** I should keep this secret thought"
    for streaming in ([], ["--no-stream"]):
        api.server.clear()
        shown = ask(api, "--model", "thinking", "--thoughts", "--think", "high", "q", *streaming)
        assert shown.code == 0, shown
        assert shown.out == "Forty-two.\n" and "thinking: " + thought.replace("**", "") in shown.err, (streaming, shown)
        [request] = api.server.requests()
        assert json.loads(request["body"])["generationConfig"] == {"thinkingConfig": {"thinkingLevel": "high", "includeThoughts": True}}
    as_json = valid("ask", ask(api, "--model", "thinking", "--thoughts", "--json", "q").out)
    assert as_json["thoughts"] == thought and as_json["text"] == "Forty-two."
    api.vars["GEMVAULT_SHOW_THOUGHTS"] = "on"
    assert valid("ask", ask(api, "--model", "thinking", "--json", "q").out)["thoughts"] == thought
    del api.vars["GEMVAULT_SHOW_THOUGHTS"]
    # Not asked for: no `thoughts` in --json, nothing on stderr.
    plain = ask(api, "--model", "thinking", "--json", "q")
    assert "thoughts" not in valid("ask", plain.out) and thought not in plain.err
    # A model that does not think refuses includeThoughts: the message names the option.
    refused = ask(api, "--model", "no-thinking", "--thoughts", "q")
    assert refused.code == 6 and "include_thoughts" in refused.err and "leave out --thoughts" in refused.err, refused


def test_a_schema_the_api_refuses_is_explained_with_the_option(api):
    refused = ask(api, "--schema", schema_file(api), "--model", "schema-refused", "who?")
    assert refused.code == 6 and "response_json_schema" in refused.err and "--schema" in refused.err, refused


def described(api, schema, reply, name):
    """A schema file whose reply (fake scenario structured-described) is the given JSON text."""
    return schema_file(api, dict(schema, description=reply), name)


def test_hostile_schemas_and_replies_are_checked_in_bounded_steps(api):
    """Issue 40 item 14: a backtracking pattern, a recursive oneOf on a reply 20 deep and an
    anyOf back into the schema each ran past 60 s at full CPU; each now ends promptly."""
    catastrophic = described(api, {"type": "string", "pattern": "^(a+)+$"}, json.dumps("a" * 5000 + "!"), "backtrack.json")
    result = ask(api, "--schema", catastrophic, "--model", tag("structured-described"), "--no-stream", "q")
    assert result.code == 8 and "does not match the pattern ^(a+)+$" in result.err and result.out == "", result

    def branch(kind):
        return {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}, "kind": {"const": kind}}}
    reply = {"kind": "a"}
    for level in range(20):
        reply = {"child": reply, "kind": "abc"[level % 3]}
    recursive = {"$defs": {"node": {"oneOf": [branch("a"), branch("b"), branch("c")]}}, "$ref": "#/$defs/node"}
    path = described(api, recursive, json.dumps(reply), "recursive.json")
    result = ask(api, "--schema", path, "--model", tag("structured-described"), "--no-stream", "q")
    assert result.code == 0 and json.loads(result.out) == reply, result

    tree = {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}}
    nested = None
    for _ in range(15):
        nested = {"next": nested}
    path = described(api, tree, json.dumps(nested), "tree.json")
    result = ask(api, "--schema", path, "--model", tag("structured-described"), "--no-stream", "q")
    assert result.code == 0 and json.loads(result.out) == nested, result


def test_a_pattern_repeating_the_empty_text_loads_at_once(api):
    """Review finding 4: repeating an empty group added no instructions, so the size limit never
    stopped the compiler: three levels of {20000} never ended. It is the empty text now."""
    path = described(api, {"type": "string", "pattern": "^((((){20000}){20000}){20000})x$"}, json.dumps("x"), "empty-repeat.json")
    result = ask(api, "--schema", path, "--model", tag("structured-described"), "--no-stream", "q")
    assert result.code == 0 and json.loads(result.out) == "x", result
    path = described(api, {"type": "string", "pattern": "^(((){20000}){20000})x$"}, json.dumps("xx"), "empty-repeat-2.json")
    result = ask(api, "--schema", path, "--model", tag("structured-described"), "--no-stream", "q")
    assert result.code == 8 and "does not match the pattern" in result.err, result


def test_a_check_past_its_budget_exits_8_and_says_it_could_not_check(api):
    """What stays costly after that (a long reply against a wide pattern) stops at the step
    budget: exit 8, the reply not trusted, and the message says the check stopped."""
    path = described(api, {"type": "string", "pattern": "[a-z]{0,60}x"}, json.dumps("a" * 200_000), "wide.json")
    result = ask(api, "--schema", path, "--model", tag("structured-described"), "--no-stream", "q")
    assert result.code == 8 and result.out == "", result
    assert "the reply could not be checked against %s: the check stopped after 5000000 steps or 10 seconds" % path in result.err
    as_json = valid("ask", ask(api, "--schema", path, "--json", "--model", tag("structured-described"), "--no-stream", "q").out)
    assert as_json["data"] is None and as_json["error"]["reason"] == "schema-mismatch"
