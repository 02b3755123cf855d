"""The developers' guide's size rules, checked on the Swift sources: no function (method,
initializer, subscript, closure-bodied or computed property) is longer than 60 lines from its declaration to its closing brace,
and no file passes 500 lines. The sources are read by a small brace-aware scanner that blanks
out string literals (plain, multi-line, raw, with interpolations) and comments first, so that
only the code's own braces count."""
import os
import re
import tempfile

from conftest import ROOT

SOURCES = os.path.join(ROOT, "Sources")
MAX_BODY_LINES = 60
MAX_FILE_LINES = 500
# Generated, not written by hand: the Blowfish constants, one table of numbers.
GENERATED = {os.path.join("AgeFormat", "BlowfishTables.swift")}


def swift_files():
    for folder, _, names in os.walk(SOURCES):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(".swift") and os.path.relpath(path, SOURCES) not in GENERATED:
                yield path


class Blanker:
    """Copies Swift source with every string literal's and comment's characters turned to
    spaces, newlines kept, so that line numbers stay and only code braces remain."""

    def __init__(self, text):
        self.text = text
        self.out = list(text)
        self.i = 0

    def blank(self, start, end):
        for k in range(start, end):
            if self.out[k] != "\n":
                self.out[k] = " "

    def run(self):
        self.code(until_paren=False)
        return "".join(self.out)

    def code(self, until_paren):
        text, depth = self.text, 0
        while self.i < len(text):
            c = text[self.i]
            if text.startswith("//", self.i):
                end = text.find("\n", self.i)
                end = len(text) if end < 0 else end
                self.blank(self.i, end)
                self.i = end
            elif text.startswith("/*", self.i):
                self.block_comment()
            elif c == '"' or (c == "#" and re.match(r'#+"', text[self.i:])):
                self.string()
            elif until_paren and c == "(":
                depth += 1
                self.i += 1
            elif until_paren and c == ")":
                if depth == 0:
                    return
                depth -= 1
                self.i += 1
            else:
                self.i += 1

    def block_comment(self):
        start, depth, text = self.i, 0, self.text
        while self.i < len(text):
            if text.startswith("/*", self.i):
                depth += 1
                self.i += 2
            elif text.startswith("*/", self.i):
                depth -= 1
                self.i += 2
                if depth == 0:
                    break
            else:
                self.i += 1
        self.blank(start, self.i)

    def string(self):
        text, start = self.text, self.i
        hashes = len(re.match(r"#*", text[self.i:]).group(0))
        self.i += hashes
        quote = '"""' if text.startswith('"""', self.i) else '"'
        self.i += len(quote)
        close, escape = quote + "#" * hashes, "\\" + "#" * hashes
        while self.i < len(text):
            if text.startswith(escape, self.i):
                self.i += len(escape)
                if text.startswith("(", self.i):
                    self.i += 1
                    self.code(until_paren=True)  # an interpolation: code, perhaps with strings
                self.i += 1
            elif text.startswith(close, self.i):
                self.i += len(close)
                break
            else:
                self.i += 1
        self.blank(start, self.i)


DECLARATION = re.compile(
    r"\b(?:func\s+(?P<func>[^\s(<]+)|(?P<init>init|deinit)\b|(?P<subscript>subscript)\b"
    r"|(?:var|let)\s+(?P<property>\w+))")


def declaration(header):
    """(name, offset in `header` where its declaration starts) for the function a body's header
    declares, or None when the brace opens no function body."""
    match = None
    for match in DECLARATION.finditer(header):
        pass
    if match is None:
        return None
    if match.group("func"):
        return match.group("func"), match.start()
    if match.group("init") or match.group("subscript"):
        return match.group("init") or match.group("subscript"), match.start()
    rest = header[match.end():]
    # A computed property (`var name: T {`) or one set by a closure run once (`= {`).
    if rest.rstrip().endswith("=") or (rest.lstrip().startswith(":") and "=" not in rest):
        return match.group("property"), match.start()
    return None


def declared_name(header):
    found = declaration(header)
    return found[0] if found else None


def bodies(path):
    """(name, first line, lines) for every function-like body in a Swift file: from the line its
    declaration starts on (a header over several lines counts whole) to its closing brace."""
    with open(path, encoding="utf-8") as handle:
        code = Blanker(handle.read()).run()
    found, stack, boundary = [], [], 0
    for index, c in enumerate(code):
        if c == "{":
            declared = declaration(code[boundary:index])
            line = code.count("\n", 0, boundary + declared[1]) + 1 if declared else 0
            stack.append((declared[0] if declared else None, line))
            boundary = index + 1
        elif c == "}":
            if stack:
                name, line = stack.pop()
                if name is not None:
                    found.append((name, line, code.count("\n", 0, index) + 2 - line))
            boundary = index + 1
        elif c == ";":
            boundary = index + 1
    return found


def test_the_scanner_ignores_braces_in_strings_and_comments():
    sample = (
        'struct S {\n'
        '    // a { in a comment\n'
        '    /* and } /* nested { */ here } */\n'
        '    func one() -> String {\n'
        '        let a = "{ \\(items.map { "}" }.joined()) }"\n'
        '        let b = #"raw \\( { "# + """\n'
        '            multi { line\n'
        '            """\n'
        '        return a + b\n'
        '    }\n'
        '    var computed: Int {\n'
        '        1\n'
        '    }\n'
        '    let made: [Int] = {\n'
        '        [1]\n'
        '    }()\n'
        '    var plain = 3 { didSet { } }\n'
        '    init(x: Int) { }\n'
        '    func two(a: Int,\n'
        '             b: Int) {\n'
        '    }\n'
        '}\n')
    with tempfile.NamedTemporaryFile("w", suffix=".swift", delete=False) as handle:
        handle.write(sample)
    try:
        found = {name: (line, length) for name, line, length in bodies(handle.name)}
    finally:
        os.unlink(handle.name)
    assert found == {"one": (4, 7), "computed": (11, 3), "made": (14, 3), "init": (18, 1), "two": (19, 3)}


def test_no_function_passes_60_lines():
    offenders = []
    for path in swift_files():
        relative = os.path.relpath(path, SOURCES)
        for name, line, length in bodies(path):
            if length > MAX_BODY_LINES:
                offenders.append("Sources/%s:%d %s: %d lines" % (relative, line, name, length))
    assert not offenders, "functions longer than %d lines (declaration to closing brace):\n%s" % (MAX_BODY_LINES, "\n".join(offenders))


def test_no_source_file_passes_500_lines():
    offenders = []
    for path in swift_files():
        with open(path, encoding="utf-8") as handle:
            count = sum(1 for _ in handle)
        if count > MAX_FILE_LINES:
            offenders.append("Sources/%s: %d lines" % (os.path.relpath(path, SOURCES), count))
    assert not offenders, "files longer than %d lines:\n%s" % (MAX_FILE_LINES, "\n".join(offenders))
