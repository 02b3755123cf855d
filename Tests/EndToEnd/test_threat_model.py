"""Docs/security.md is a threat model whose every defence names a test: these keep it honest."""
import glob
import json
import os
import re
import subprocess

from conftest import BIN, GOOD_KEY, ROOT

DOCUMENT = os.path.join(ROOT, "Docs", "security.md")
THREATS = ["Other local users", "A stolen or backed-up copy of the vault", "An old copy restored over a newer one",
           "A leaked passphrase, before and after passwd", "Swap and core dumps", "/proc and ps", "Shell history",
           "Escape-sequence injection through model output or settings", "A hostile or broken endpoint",
           "A malicious process running as the same user", "Root"]
# Sections 12 to 14 follow the same shape; these name them so the check covers them too.
LATER_THREATS = {14: "Quick unlock: offline PIN guessing, a stolen vault with an ssh slot, a hijacked agent, a guessing client"}


def document():
    with open(DOCUMENT) as handle:
        return handle.read()


def test_every_threat_has_its_section_with_what_is_protected_and_what_is_not():
    text = document()
    for number, threat in list(enumerate(THREATS, 1)) + list(LATER_THREATS.items()):
        heading = "### %d. %s" % (number, threat)
        assert heading in text, heading
        section = text.split(heading, 1)[1].split("\n### ", 1)[0]
        assert "**Protected:**" in section and "**Why:**" in section, threat
        assert "| Defence | Tests |" in section, threat


def test_every_test_the_threat_model_names_exists():
    text = document()
    python = {}
    for path in glob.glob(os.path.join(ROOT, "Tests", "EndToEnd", "test_*.py")):
        with open(path) as handle:
            python[os.path.basename(path)] = set(re.findall(r"^def (test_\w+)", handle.read(), re.M))
    swift = {}
    for path in glob.glob(os.path.join(ROOT, "Tests", "*", "*.swift")):
        with open(path) as handle:
            source = handle.read()
        for suite, body in re.findall(r"struct (\w+)\s*\{(.*?)\n\}", source, re.S):
            swift.setdefault(suite, set()).update(re.findall(r"func (\w+)\(", body))
    bare = re.findall(r"(?<!::)`(test_\w+)`", text)
    assert bare == [], "tests named without their file: %s" % bare
    named = re.findall(r"`(test_\w+\.py)::(test_\w+)`", text)
    assert len(named) > 60, len(named)
    for file, test in named:
        assert test in python.get(file, set()), "%s::%s is named in Docs/security.md but is no test" % (file, test)
    suites = re.findall(r"`([A-Z]\w+Tests)\.(\w+)`", text)
    assert len(suites) > 10, len(suites)
    for suite, test in suites:
        assert test in swift.get(suite, set()), "%s.%s is named in Docs/security.md but is no test" % (suite, test)


def test_the_results_and_fuzzing_sections_say_when_and_how_they_were_made():
    text = document()
    results = text.split("## Results of the last long run", 1)[1].split("\n## ", 1)[0]
    assert "longrun/run" in results and re.search(r"20\d\d-\d\d-\d\d", results), results[:300]
    fuzzing = text.split("## Fuzzing", 1)[1].split("\n## ", 1)[0]
    assert "Fuzz/run --seconds" in fuzzing and re.search(r"20\d\d-\d\d-\d\d", fuzzing)
    for harness in ("vault", "history", "sse", "agent", "config", "markdown"):
        assert re.search(r"\| `%s` \|" % harness, fuzzing), harness


def test_the_agents_secrets_are_locked_in_memory(api):
    """Swap: the agent's sodium_malloc memory is mlocked (VmLck in /proc/PID/status)."""
    env = api
    runtime = os.path.join(env.root, "run")
    os.mkdir(runtime, 0o700)
    env.vars["XDG_RUNTIME_DIR"] = runtime
    env.init()
    assert env.run("key", "set", input=GOOD_KEY).code == 0
    try:
        assert env.run("unlock").code == 0
        pid = json.loads(env.run("status", "--json", passphrase=False).out)["agentPid"]
        with open("/proc/%d/status" % pid) as handle:
            locked = int(re.search(r"VmLck:\s+(\d+) kB", handle.read()).group(1))
        assert locked > 0, locked
    finally:
        subprocess.run([BIN, "lock"], env=env.vars, capture_output=True, timeout=30)
