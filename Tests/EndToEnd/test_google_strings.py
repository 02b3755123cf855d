"""Google's outcomes are decided on typed values (issue 42, item 4): Google's reason and status
names and its message text are read in one place, the decoder of google.rpc.Status in GoogleHTTP
(GoogleStatus.swift, with the names' spellings in GoogleReason.swift). Anywhere else in Sources/,
a comparison with such a name, or a `contains`/`hasPrefix` on a Google message, is a decision
made on a string again, and this test names the line."""
import os
import re

from conftest import ROOT

SOURCES = os.path.join(ROOT, "Sources")
DECODER = {os.path.join("GoogleHTTP", "GoogleStatus.swift"), os.path.join("GoogleHTTP", "GoogleReason.swift")}

# google.rpc.Code's names and the ErrorInfo reasons Google sends for keys, tokens and services.
GOOGLE_NAMES = (
    "OK CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS PERMISSION_DENIED "
    "RESOURCE_EXHAUSTED FAILED_PRECONDITION ABORTED OUT_OF_RANGE UNIMPLEMENTED INTERNAL UNAVAILABLE DATA_LOSS "
    "UNAUTHENTICATED API_KEY_INVALID API_KEY_SERVICE_BLOCKED API_KEY_EXPIRED SERVICE_DISABLED "
    "ACCESS_TOKEN_TYPE_UNSUPPORTED ACCESS_TOKEN_SCOPE_INSUFFICIENT CREDENTIALS_MISSING IAM_PERMISSION_DENIED "
    "RATE_LIMIT_EXCEEDED CONSUMER_INVALID"
).split()
NAME = "(?:" + "|".join(GOOGLE_NAMES) + ")"

RULES = [
    ("compares a Google status or reason name", re.compile(r'[!=]=\s*"' + NAME + r'"|"' + NAME + r'"\s*[!=]=')),
    ("matches on a Google status or reason name", re.compile(r'\bcase\s+"' + NAME + r'"')),
    ("compares a reason with a string", re.compile(r'\breason(?:Name)?\??\s*[!=]=\s*"')),
    ("reads Google's message text", re.compile(
        r'(?:\.message|\bmessage)\s*(?:\?\?\s*""\s*\)?)?\s*\.(?:lowercased\(\)|uppercased\(\)|contains\b|hasPrefix\b|hasSuffix\b|range\b)')),
    ("names the words of a Google message", re.compile(r'\.contains\("(?:disableServiceAccountApiKeyCreation|quota project|Expected OAuth)')),
    ("maps a Google name to a reason outside the decoder", re.compile(r'\bGoogleErrorReason\(\s*"|\bCanonicalCode\(name:')),
]


def without_comment(line):
    """The line up to a `//` comment; a `//` inside a string literal (a URL) is code."""
    in_string, index = False, 0
    while index < len(line):
        char = line[index]
        if in_string and char == "\\":
            index += 2
            continue
        if char == '"':
            in_string = not in_string
        elif not in_string and line.startswith("//", index):
            return line[:index]
        index += 1
    return line


def offending_lines(text):
    for number, line in enumerate(text.splitlines(), 1):
        code = without_comment(line)
        for what, rule in RULES:
            if rule.search(code):
                yield number, what, line.strip()


def test_no_google_string_is_compared_outside_the_decoder():
    found = []
    for folder, _, names in os.walk(SOURCES):
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, SOURCES)
            if not name.endswith(".swift") or relative in DECODER:
                continue
            with open(path, encoding="utf-8") as handle:
                for number, what, line in offending_lines(handle.read()):
                    found.append(f"{relative}:{number}: {what}: {line}")
    assert not found, "decide on GoogleReason / GoogleStatus.says, not on Google's strings:\n" + "\n".join(found)


def test_the_rules_catch_the_comparisons_they_replaced():
    # The forms main had before the typed reason, one per rule: each must be caught.
    before = [
        'case 403 where reasonName == "ACCESS_TOKEN_SCOPE_INSUFFICIENT":',
        '} catch where error.status == 409 || (error.status == 400 && (error.reason == "FAILED_PRECONDITION" || error.reason == "ABORTED")) {',
        'if code == 7 || code == 9 || (error.message ?? "").contains("disableServiceAccountApiKeyCreation") {',
        'case (403, .serviceDisabled?) where message.contains("quota project"):',
        'if code == 401, reasons.isEmpty, message.contains("Expected OAuth 2 access token") { return .accessTokenTypeUnsupported }',
        'let said = (envelope?.message ?? "").lowercased()',
        '(error.status == 400 && error.reason == "FAILED_PRECONDITION") || error.status == 404',
        'case "SERVICE_DISABLED": self = .serviceDisabled',
        'let reason = GoogleErrorReason("API_KEY_INVALID")',
    ]
    # After a URL on the same line too, and not in a comment.
    before.append('let url = "https://example.test/x"; if error.reason == "ABORTED" { retry() }')
    caught = [line for line in before if list(offending_lines(line))]
    assert caught == before
    assert not list(offending_lines('retry()  // error.reason == "ABORTED" was the old way'))
    assert list(offending_lines('let advice = optionAdvice.first { $0.words.contains(where: (envelope?.message ?? "").lowercased().contains) }'))
    # Typed decisions and printed text pass.
    for fine in ['error.isStatus(.failedPrecondition)', 'reason == .answerLost', 'envelope?.says(.boundKeysForbidden) == true',
                 'throw GoogleError(.refused, "the API Keys service answered the list with something else")',
                 'case .exited(let code): "code \\(code)"']:
        assert not list(offending_lines(fine)), fine
