"""A hostile or broken endpoint: the client keeps its memory bounded, honours its timeout, and
exits 7 with a message that says what the server did. Each server is a scenario of the fake
(fake_gemini.py, "hostile servers"), bounded in time on its side too."""
import json
import subprocess
import time
import uuid

import pytest

from conftest import BIN, GOOD_KEY
from ptyrun import PtySession
from test_adversarial import measured_peak, record

# Peak RSS of a plain `ask` is about 20 MiB; a client that buffered a hostile answer would
# reach hundreds. The bound leaves room for the 16 MiB reply cap and the parser's buffer.
MEMORY_BOUND_KIB = 120 * 1024


def ask_measured(api, scenario, *extra, timeout=60):
    """Runs `ask --json` against a scenario; returns (exit code, parsed stdout, stderr, seconds)."""
    argv = [BIN, "ask", "--json", "--model", "%s~%s" % (scenario, uuid.uuid4().hex[:8]), *extra, "hello"]
    environment = dict(api.vars, GEMVAULT_RETRIES="1")
    started = time.monotonic()
    process = subprocess.Popen(argv, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("gemvault ask did not end within %d s against %s" % (timeout, scenario))
    return process.returncode, json.loads(out), err.decode(), time.monotonic() - started


def peak_kib(api, scenario, *extra):
    """Exit code and peak resident memory (KiB) of one `ask` against a scenario."""
    return measured_peak([BIN, "ask", "--json", "--model", "%s~%s" % (scenario, uuid.uuid4().hex[:8]), *extra, "hello"],
                         dict(api.vars, GEMVAULT_RETRIES="1"))


def test_a_gigabyte_answer_is_cut_off_with_memory_bounded(api):
    code, data, err, elapsed = ask_measured(api, "gigabyte")
    assert code == 7, (code, data, err)
    assert data["error"]["exitCode"] == 7 and "more than 16 MiB" in data["error"]["message"], data
    assert data["text"] == "" or len(data["text"]) <= 16 << 20, len(data["text"])
    code, peak = peak_kib(api, "gigabyte")
    assert code == 7 and peak < MEMORY_BOUND_KIB, (code, peak)
    record("hostile endpoint: 1 GiB answer", exit=7, seconds=round(elapsed, 1), peak_rss_mib=peak // 1024)


def test_ten_thousand_events_a_second_are_all_taken_in_order(api):
    code, data, err, elapsed = ask_measured(api, "flood")
    assert code == 0, (code, err)
    pieces = data["text"].split()
    assert pieces == ["f%d" % i for i in range(20000)], (len(pieces), pieces[:3], pieces[-3:])
    code, peak = peak_kib(api, "flood")
    assert code == 0 and peak < MEMORY_BOUND_KIB, (code, peak)
    record("hostile endpoint: 10,000 events a second for 2 s", exit=0, events_in_order=len(pieces), peak_rss_mib=peak // 1024)


@pytest.mark.parametrize("scenario, what", [("endless-header", "endless header"), ("slowloris", "slow-loris drip")])
def test_a_server_that_never_completes_an_answer_is_stopped_by_the_timeout(api, scenario, what):
    """An endless header, or a stream dripping a byte at a time that never makes an event."""
    code, data, err, elapsed = ask_measured(api, scenario, "--timeout", "2")
    assert code == 7 and data["error"]["exitCode"] == 7, (code, data, err)
    assert "timeout" in data["error"]["message"], data
    assert elapsed < 15, elapsed
    record("hostile endpoint: %s, --timeout 2" % what, exit=7, seconds=round(elapsed, 1))


def test_invalid_json_from_the_server_exits_7(api):
    code, data, err, elapsed = ask_measured(api, "not-json")
    assert code == 7 and data["error"]["exitCode"] == 7, (code, data, err)
    assert "not a Gemini response" in data["error"]["message"], data
    assert GOOD_KEY not in err and GOOD_KEY not in json.dumps(data)
    record("hostile endpoint: invalid JSON event", exit=7)


def test_a_steady_stream_slower_than_nothing_but_faster_than_the_timeout_still_works(api):
    """The timeout is between whole events: a reply of many events may take far longer in all."""
    code, data, err, elapsed = ask_measured(api, "steady", "--timeout", "1")
    assert code == 0, (code, data, err)
    assert data["text"].split() == [w for i in range(12) for w in ("step", str(i))], data["text"]
    assert elapsed > 3, elapsed


def test_a_flood_rendered_as_markdown_on_a_terminal_still_keeps_up(api):
    """On a terminal the reply is drawn live; 20,000 tiny events must not make it re-render
    the whole reply each time (it once took minutes): redraws are spaced out by their cost."""
    session = PtySession([BIN, "ask", "--no-save", "--model", "flood~" + uuid.uuid4().hex[:8], "hello"], dict(api.vars, TERM="xterm"))
    try:
        assert session.wait(timeout=60) == 0, session.text()[-500:]
        shown = session.text()
        assert "f0 f1 f2" in shown and "f19999" in shown, shown[-300:]
    finally:
        session.close()
