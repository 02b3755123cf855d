"""The benchmark suite behind bench/run. Every comparison is a set of cases run alternately
(the order flips each round, so drift hits all alike), at least 20 rounds; it prints medians
and the ratios the targets in Docs/performance.md are stated in.
"""
import argparse
import glob
import hashlib
import json
import os
import platform
import re
import resource
import secrets
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "EndToEnd"))
from ptyrun import PtySession  # noqa: E402

PASSPHRASE = "bench passphrase one 1234"
OTHER_PASSPHRASE = "bench passphrase two 5678"
API_KEY = "AQ.Benchmark-0123456789abcdefghijklmnopqrstuvwxyz0123"
PRESETS = {"interactive": (2, 64 << 20), "moderate": (3, 256 << 20), "sensitive": (4, 1 << 30)}
SUMMARY = []  # (measurement, figure, target, verdict) for the closing table


# -- plumbing --------------------------------------------------------------------------------

def say(text=""):
    print(text, flush=True)


def timed(argv, env=None, stdin=None, check=True):
    """Wall time of one whole process, in ms."""
    start = time.perf_counter()
    # Standard input is always given (a pipe or /dev/null): ask and chat read it when it is not a terminal.
    proc = subprocess.run(argv, env=env, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if check and proc.returncode != 0:
        raise SystemExit("bench: %s failed (%d): %s" % (" ".join(argv[:4]), proc.returncode, proc.stderr.decode()[-400:]))
    return elapsed


def streamed(argv, env=None, launcher=None):
    """(time to the first byte of stdout, total time, peak RSS in MiB or None) of one process.

    The peak comes only through `launcher` (bench/peak_rss.c): Linux keeps a process's
    high-water mark across exec, so a child forked from this Python process would report
    Python's resident memory, not its own. Timing goes without it (no extra fork to time)."""
    peak_file = None
    if launcher:
        peak_file = tempfile.NamedTemporaryFile("r", prefix="peak-", suffix=".kib")
        argv = [launcher, peak_file.name, *argv]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    first = proc.stdout.read(1)
    ttfb = (time.perf_counter() - start) * 1000
    rest = proc.stdout.read()
    status = proc.wait()
    total = (time.perf_counter() - start) * 1000
    if status != 0 or not first or not rest:
        raise SystemExit("bench: %s failed or printed nothing" % " ".join(argv[:3]))
    if peak_file is None:
        return ttfb, total, None
    with peak_file:
        return ttfb, total, launcher_peak(peak_file.name)


def launcher_peak(path):
    """The peak (MiB) bench/peak_rss.c wrote; no figure is an error, never a peak of 0."""
    with open(path) as handle:
        text = handle.read().strip()
    if not text.isdigit():
        raise SystemExit("bench: the peak-RSS launcher wrote no figure to %s" % path)
    return int(text) / 1024


def alternate(cases, runs):
    """cases: [(name, fn)]; returns {name: [results]}, the order flipped every round."""
    results = {name: [] for name, _ in cases}
    for round_ in range(runs):
        for name, fn in (cases if round_ % 2 == 0 else list(reversed(cases))):
            results[name].append(fn())
    return results


def med(values):
    return statistics.median(values)


def verdict(value, limit, below=True):
    ok = value <= limit if below else value >= limit
    return "met" if ok else "MISSED"


def record(what, figure, target, ok):
    SUMMARY.append((what, figure, target, ok))


def launcher_floor(launcher, program):
    """Peak (MiB) of a C program that does nothing, started by the launcher: the least any figure can read."""
    with tempfile.NamedTemporaryFile("r", prefix="peak-", suffix=".kib") as peak_file:
        subprocess.run([launcher, peak_file.name, program], check=True)
        return launcher_peak(peak_file.name)


def run_c(work, name, source, libs=()):
    path = os.path.join(work, name)
    subprocess.run(["cc", "-O2", "-x", "c", "-", "-o", path, *libs], input=source.encode(), check=True)
    return path


class Vault:
    """A vault in its own folders, with its own agent."""

    def __init__(self, suite, name, preset="interactive"):
        self.suite = suite
        self.dir = os.path.join(suite.work, name)
        os.makedirs(os.path.join(self.dir, "run"), mode=0o700)
        self.env = dict(suite.base_env, GEMVAULT_VAULT=os.path.join(self.dir, "vault"),
                        XDG_RUNTIME_DIR=os.path.join(self.dir, "run"), XDG_STATE_HOME=os.path.join(self.dir, "state"),
                        XDG_CONFIG_HOME=os.path.join(self.dir, "config"), HOME=self.dir)
        self.passfile = suite.passfile
        self.gv("init", "--kdf", preset, "--passphrase-file", self.passfile)
        self.unlocked = False

    def argv(self, *args):
        return [self.suite.binary, *args]

    def gv(self, *args, stdin=None):
        return timed(self.argv(*args), env=self.env, stdin=stdin)

    def unlock(self):
        self.gv("unlock", "--passphrase-file", self.passfile)
        self.unlocked = True

    def lock(self):
        subprocess.run(self.argv("lock"), env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.unlocked = False

    def add_keys(self, count):
        """Through the agent when unlocked, else with the passphrase."""
        extra = [] if self.unlocked else ["--passphrase-file", self.passfile]
        for i in range(count):
            self.gv("key", "set", "key%04d" % i, *extra, stdin=b"AQ.Benchmark-%04d56789abcdefghijklmnopqrstuvwxyz0123" % i)

    def history_folder(self):
        found = glob.glob(os.path.join(self.dir, "state", "gemvault", "history", "*", "recipient"))
        if not found:
            raise SystemExit("bench: no history recipient for %s (was it unlocked?)" % self.dir)
        return os.path.dirname(found[0])

    def write_conversation(self, turns, title="a benchmark conversation"):
        """A conversation file as chat writes it (Docs/history-format.md), sealed with PyNaCl."""
        from nacl.public import PublicKey, SealedBox
        folder = self.history_folder()
        with open(os.path.join(folder, "recipient"), "rb") as handle:
            public = handle.read()[4:36]
        box = SealedBox(PublicKey(public))
        header = b"GVCH" + public
        parts = [struct.pack("<I", len(header)) + header]
        previous = [header]

        def padded(length):
            bucket = 256
            while bucket < length and bucket < 65536:
                bucket *= 2
            return bucket if length <= 65536 else -(-length // 65536) * 65536

        def sealed(obj):
            # Version 2 records: sequence, the previous record's hash, the JSON, zero padding.
            body = json.dumps(obj, separators=(",", ":")).encode()
            plain = b"\x02" + struct.pack("<Q", len(parts)) + hashlib.blake2b(previous[0], digest_size=32).digest()
            plain += struct.pack("<I", len(body)) + body
            plain += b"\0" * (padded(len(plain)) - len(plain))
            record = box.encrypt(plain)
            previous[0] = record
            return struct.pack("<I", len(record)) + record

        now = int(time.time())
        parts.append(sealed({"meta": {"_0": {"title": title, "model": "ok", "created": now - 3600, "kind": "chat"}}}))
        for i in range(turns):
            parts.append(sealed({"turn": {"_0": {"user": "question %d: how do I do the thing?" % i,
                                                 "model": "Answer %d. " % i + "Here is a paragraph of reply text. " * 4,
                                                 "interrupted": False, "time": now - 3600 + i}}}))
        conversation_id = secrets.token_hex(8)
        path = os.path.join(folder, conversation_id + ".chat")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"".join(parts))
        os.close(fd)
        return conversation_id


class Suite:
    def __init__(self, options):
        self.options = options
        self.binary = os.path.abspath(options.binary)
        self.runs = options.runs
        self.work = tempfile.mkdtemp(prefix="gemvault-bench-")
        self.base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
                         "SWIFT_BACKTRACE": "enable=no", "NO_COLOR": "1"}
        self.passfile = os.path.join(self.work, "pass")
        self.otherfile = os.path.join(self.work, "pass2")
        for path, text in ((self.passfile, PASSPHRASE), (self.otherfile, OTHER_PASSPHRASE)):
            with open(path, "w") as handle:
                handle.write(text + "\n")
            os.chmod(path, 0o600)
        self.true = run_c(self.work, "true", "int main(void){return 0;}\n")
        self.pwhash = run_c(self.work, "pwhash", PWHASH_C, ["-lsodium"])
        self.cat_file = os.path.join(self.work, "key.txt")
        with open(self.cat_file, "w") as handle:
            handle.write(API_KEY + "\n")
        self.vaults = []
        self.server = None

    def close(self):
        for vault in self.vaults:
            vault.lock()
        if self.server:
            self.server.terminate()
            self.server.wait()
        shutil.rmtree(self.work, ignore_errors=True)

    def vault(self, name, preset="interactive"):
        vault = Vault(self, name, preset)
        self.vaults.append(vault)
        return vault

    def fake_server(self):
        if self.server is None:
            # The log's ".sent" file says when each piece of a slow reply went out (the render section).
            self.server_log = os.path.join(self.work, "requests.log")
            self.server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "EndToEnd", "fake_gemini.py"), "--log", self.server_log],
                                           stdout=subprocess.PIPE, text=True)
            self.url = "http://127.0.0.1:%d" % int(self.server.stdout.readline().split()[1])
        return self.url

    def ref_pwhash(self, preset, count=1):
        ops, mem = PRESETS[preset]
        return [self.pwhash, str(ops), str(mem), str(count)]

    # -- 1. start-up -----------------------------------------------------------------------

    def startup(self):
        say("## 1. Start-up: gemvault --version against a C `true` (%d runs each, alternated)" % self.runs)
        r = alternate([("C true", lambda: timed([self.true])),
                       ("gemvault --version", lambda: timed([self.binary, "--version"], env=self.base_env))], self.runs)
        c, v = med(r["C true"]), med(r["gemvault --version"])
        say("  %-34s %8.2f ms" % ("C true", c))
        say("  %-34s %8.2f ms   %.2fx C true (target <= 2.0)" % ("gemvault --version", v, v / c))
        record("`--version` / C `true`", "%.2fx (%.2f / %.2f ms)" % (v / c, v, c), "<= 2.0x", verdict(v / c, 2.0))
        self.version_ms = v

    # -- 2. lookup ---------------------------------------------------------------------------

    def lookup(self):
        say("## 2. Lookup: key get through the agent, against --version and `cat` of a file (%d runs each)" % self.runs)
        vault = self.vault("lookup")
        vault.add_keys(1)
        vault.unlock()
        r = alternate([("--version", lambda: timed(vault.argv("--version"), env=vault.env)),
                       ("key get (agent)", lambda: timed(vault.argv("key", "get", "key0000"), env=vault.env)),
                       ("cat file", lambda: timed(["cat", self.cat_file]))], self.runs)
        v, g, c = med(r["--version"]), med(r["key get (agent)"]), med(r["cat file"])
        say("  %-34s %8.2f ms" % ("cat of a file", c))
        say("  %-34s %8.2f ms" % ("gemvault --version", v))
        say("  %-34s %8.2f ms   %.2fx --version (target <= 1.5), %.2fx cat" % ("key get through the agent", g, g / v, g / c))
        record("`key get` via agent / `--version`", "%.2fx (%.2f / %.2f ms)" % (g / v, g, v), "<= 1.5x", verdict(g / v, 1.5))
        record("`key get` via agent / `cat`", "%.2fx (%.2f / %.2f ms)" % (g / c, g, c), "(floor)", "-")
        vault.lock()
        self.linked_lookup()
        self.exec_secret()

    def exec_secret(self):
        """`exec --secret` through a session (one agent request, then the child) against what
        it stands in for at the least: starting gemvault, then the child."""
        vault = self.vault("exec-secret")
        vault.gv("secret", "set", "x", "--passphrase-file", self.passfile, stdin=b"ghp_Benchmark0123456789abcdefghijklmnopq\n")
        vault.unlock()
        r = alternate([("--version + true", lambda: timed(vault.argv("--version"), env=vault.env) + timed([self.true])),
                       ("exec --secret", lambda: timed(vault.argv("exec", "--secret", "A=x", "--", self.true), env=vault.env))], self.runs)
        base, run = med(r["--version + true"]), med(r["exec --secret"])
        say("  %-34s %8.2f ms" % ("gemvault --version, then C true", base))
        say("  %-34s %8.2f ms   %.2fx (target <= 1.5)" % ("exec --secret A=x -- true (agent)", run, run / base))
        record("`exec --secret A=x -- true` via agent / `--version` + `true`", "%.2fx (%.2f / %.2f ms)" % (run / base, run, base), "<= 1.5x",
               verdict(run / base, 1.5))
        vault.lock()

    def linked_lookup(self):
        """A key linked to Secret Manager (fake_google.py's): its cached copy against a plain
        vault key, through the agent, and how many requests one fetch makes."""
        import urllib.request
        try:
            google = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "EndToEnd", "fake_google.py"), "--log", os.path.join(self.work, "google.log")],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            url = "http://127.0.0.1:%d" % int(google.stdout.readline().split()[1])
        except (OSError, IndexError, ValueError):
            say("  (the linked key is not measured: fake_google.py did not start; it needs the cryptography package)")
            return
        try:
            def control(**command):
                request = urllib.request.Request(url + "/_control", data=json.dumps(command).encode(), method="POST", headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return json.loads(answer.read())

            def fetches():
                with urllib.request.urlopen(url + "/_state", timeout=10) as answer:
                    return len(json.loads(answer.read())["sm_calls"])
            token = "ya29.bench-" + "t" * 40
            control(tokens=[{"token": token, "scope": "https://www.googleapis.com/auth/cloud-platform", "user": False, "identity": "bench@example.com"}],
                    secrets=[{"id": "gemini-key", "versions": [API_KEY]}])
            token_file = os.path.join(self.work, "token")
            with open(token_file, "w") as handle:
                handle.write(token + "\n")
            os.chmod(token_file, 0o600)
            vault = self.vault("linked")
            vault.env.update(GEMVAULT_SECRETMANAGER_ENDPOINT=url, GEMVAULT_TOKEN_COMMAND="cat " + token_file)
            vault.add_keys(1)
            vault.gv("key", "set", "linked", "--from", "gsm://projects/gen-lang-client-0123456789/secrets/gemini-key", "--passphrase-file", vault.passfile)
            vault.unlock()
            r = alternate([("plain", lambda: timed(vault.argv("key", "get", "key0000"), env=vault.env)),
                           ("linked", lambda: timed(vault.argv("key", "get", "linked"), env=vault.env))], self.runs)
            plain, linked = med(r["plain"]), med(r["linked"])
            say("  %-34s %8.2f ms   %+.2f ms over a vault key (target <= 1 ms)" % ("key get of a linked key (cached)", linked, linked - plain))
            record("linked key (cached) over a vault key", "%+.2f ms (%.2f / %.2f ms)" % (linked - plain, linked, plain), "<= 1 ms",
                   verdict(linked - plain, 1.0))
            before = fetches()
            timed(vault.argv("key", "get", "linked"), env=dict(vault.env, GEMVAULT_SECRET_CACHE_TTL="0"))
            count = fetches() - before
            say("  %-34s %8d" % ("requests for one fetch", count))
            record("Secret Manager requests for one fetch", "%d" % count, "1", verdict(count, 1))
            vault.lock()
        finally:
            google.terminate()
            google.wait()

    # -- 3. unlock ---------------------------------------------------------------------------

    def unlock(self):
        presets = self.options.presets.split(",")
        for preset in presets:
            runs = self.options.sensitive_runs if preset == "sensitive" else self.runs
            say("## 3. Unlock at the %s preset, against crypto_pwhash alone (%d runs each)" % (preset, runs))
            vault = self.vault("unlock-" + preset, preset)
            vault.add_keys(1)
            state = {"current": self.passfile, "other": self.otherfile}

            def passwd():
                elapsed = vault.gv("passwd", "--passphrase-file", state["current"], "--new-passphrase-file", state["other"])
                state["current"], state["other"] = state["other"], state["current"]
                return elapsed

            def unlock():
                elapsed = vault.gv("unlock", "--passphrase-file", state["current"])
                vault.lock()
                return elapsed

            cases = [("crypto_pwhash x1", lambda: timed(self.ref_pwhash(preset))),
                     ("key get", lambda: vault.gv("key", "get", "key0000", "--no-session", "--passphrase-file", state["current"])),
                     ("key set", lambda: vault.gv("key", "set", "key0001", "--no-session", "--passphrase-file", state["current"],
                                                  stdin=b"AQ.Benchmark-set-0123456789abcdefghijklmnopqrstuvwx")),
                     ("unlock (starts the agent)", unlock),
                     ("crypto_pwhash x2", lambda: timed(self.ref_pwhash(preset, 2))),
                     ("passwd (old and new)", passwd)]
            r = alternate(cases, runs)
            one, two = med(r["crypto_pwhash x1"]), med(r["crypto_pwhash x2"])
            say("  %-34s %8.1f ms" % ("crypto_pwhash x1 (C)", one))
            say("  %-34s %8.1f ms" % ("crypto_pwhash x2 (C)", two))
            for name in ("key get", "key set", "unlock (starts the agent)"):
                m = med(r[name])
                say("  %-34s %8.1f ms   %.3fx crypto_pwhash (target <= 1.05)" % (name, m, m / one))
                record("unlock %s: `%s` / crypto_pwhash" % (preset, name), "%.3fx (%.1f / %.1f ms)" % (m / one, m, one),
                       "<= 1.05x", verdict(m / one, 1.05))
            m = med(r["passwd (old and new)"])
            say("  %-34s %8.1f ms   %.3fx two crypto_pwhash (target <= 1.05)" % ("passwd", m, m / two))
            record("unlock %s: `passwd` / 2 x crypto_pwhash" % preset, "%.3fx (%.1f / %.1f ms)" % (m / two, m, two),
                   "<= 1.05x", verdict(m / two, 1.05))

    # -- 8. quick unlock (bench/quick_unlock.py) -----------------------------------------------

    def quick(self):
        import quick_unlock
        quick_unlock.measure(self, alternate, med, timed, say, record, verdict)

    # -- 9. a share to post-quantum recipients (bench/pq_share.py) ---------------------------

    def share(self):
        import pq_share
        pq_share.measure(self, alternate, med, timed, say, record, verdict)

    # -- 4. chat latency ---------------------------------------------------------------------

    def chat_commands(self):
        url = self.fake_server()
        env = dict(self.base_env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=url, HOME="/nonexistent")
        body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]})
        ask = [self.binary, "ask", "--no-save", "--model", "ok", "hello"]
        curl = ["curl", "-sN", "-X", "POST", "-H", "Content-Type: application/json", "-H", "x-goog-api-key: " + API_KEY,
                "--data", body, url + "/v1beta/models/ok:streamGenerateContent?alt=sse"]
        sdk_script = os.path.join(self.work, "sdk_ask.py")
        with open(sdk_script, "w") as handle:
            handle.write(SDK_SCRIPT)
        sdk = [sys.executable, sdk_script, url, API_KEY]
        return env, ask, curl, sdk

    def chat(self):
        env, ask, curl, sdk = self.chat_commands()
        cases = [("gemvault ask", lambda: streamed(ask, env)), ("curl -sN", lambda: streamed(curl, env))]
        if not self.options.no_sdk:
            cases.append(("google-genai SDK", lambda: streamed(sdk, env)))
        say("## 4. Chat latency: a streamed ask against the local fake server (%d runs each)" % self.runs)
        for _, fn in cases:
            fn()  # warm the page cache
        r = alternate(cases, self.runs)
        curl_ttfb, curl_total = med(x[0] for x in r["curl -sN"]), med(x[1] for x in r["curl -sN"])
        for name, _ in cases:
            ttfb, total = med(x[0] for x in r[name]), med(x[1] for x in r[name])
            say("  %-22s first byte %8.2f ms (%.2fx curl)   total %8.2f ms (%.2fx curl)"
                % (name, ttfb, ttfb / curl_ttfb, total, total / curl_total))
            if name == "gemvault ask":
                record("`ask` first byte / curl", "%.2fx (%.2f / %.2f ms)" % (ttfb / curl_ttfb, ttfb, curl_ttfb), "<= 1.3x",
                       verdict(ttfb / curl_ttfb, 1.3))
                record("`ask` total / curl", "%.2fx (%.2f / %.2f ms)" % (total / curl_total, total, curl_total), "-", "-")
            elif name != "curl -sN":
                record("SDK first byte / `ask`", "%.1fx (%.1f ms)" % (ttfb / med(x[0] for x in r["gemvault ask"]), ttfb), "(peer)", "-")
        self.chat_results = r

    # -- 7. live render -----------------------------------------------------------------------

    def render(self):
        url = self.fake_server()
        env = dict(self.base_env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=url, HOME="/nonexistent", TERM="xterm")
        del env["NO_COLOR"]
        runs = max(1, self.runs // 4)

        def on_terminal(scenario, *extra):
            """(wall ms, CPU ms, the session) of one `ask` in a 120x40 pty."""
            model = "%s~%s" % (scenario, secrets.token_hex(4))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            session = PtySession([self.binary, "ask", "--no-save", "--model", model, *extra, "hello"], env, emulate=False)
            try:
                shown = session.arrival_of(b"Streaming", timeout=60) if scenario == "slow-paragraph" else None
                code = session.wait(timeout=120)
            finally:
                session.close()
            wall = (time.perf_counter() - start) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if code != 0:
                raise SystemExit("bench: ask --model %s on a terminal exited %s" % (scenario, code))
            cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
            return wall, cpu, model, shown

        say("## 7. Live render: a flood of 20,000 events drawn as markdown on a terminal, against --raw (%d runs each)" % runs)
        r = alternate([("rendered live", lambda: on_terminal("flood")), ("--raw", lambda: on_terminal("flood", "--raw"))], runs)
        raw_cpu = med(x[1] for x in r["--raw"])
        for name in ("rendered live", "--raw"):
            wall, cpu = med(x[0] for x in r[name]), med(x[1] for x in r[name])
            say("  %-14s total %8.1f ms   CPU %8.1f ms (%.2fx --raw)" % (name, wall, cpu, cpu / raw_cpu))
        live_cpu = med(x[1] for x in r["rendered live"])
        record("flood on a terminal: CPU rendered live / --raw", "%.2fx (%.0f / %.0f ms)" % (live_cpu / raw_cpu, live_cpu, raw_cpu),
               "<= 3x", verdict(live_cpu / raw_cpu, 3))
        say("## 7b. Live render: first words of a slow paragraph on the screen after they left the server (%d runs)" % runs)
        delays = []
        for _ in range(runs):
            _, _, model, shown = on_terminal("slow-paragraph")
            with open(self.server_log + ".sent") as handle:
                first = next(entry for entry in map(json.loads, handle) if entry["model"] == model)
            delays.append((shown - first["time"]) * 1000)
        say("  median %.1f ms, worst %.1f ms" % (med(delays), max(delays)))
        record("slow paragraph: first words shown after leaving the server", "%.1f ms (worst %.1f)" % (med(delays), max(delays)),
               "< 100 ms", verdict(med(delays), 100))

    # -- 5. memory ---------------------------------------------------------------------------

    def memory(self):
        env, ask, curl, _ = self.chat_commands()
        launcher = self.options.peak_rss
        if not launcher:
            raise SystemExit("bench: the memory section needs --peak-rss PATH (bench/run compiles bench/peak_rss.c)")
        runs = max(1, self.runs // 4)
        say("## 5. Memory: peak RSS against curl's on the same request (%d runs each; the largest peak is shown)" % runs)
        say("  (each process started by bench/peak_rss.c, so the figure is its own, not this Python's)")
        floor = launcher_floor(launcher, self.true)
        r = alternate([("ask", lambda: streamed(ask, env, launcher)), ("curl", lambda: streamed(curl, env, launcher))], runs)
        curl_peak = max(x[2] for x in r["curl"])
        ask_peak = max(x[2] for x in r["ask"])
        say("  %-34s %8.1f MiB   (the launcher's floor)" % ("C true", floor))
        say("  %-34s %8.1f MiB" % ("curl -sN", curl_peak))
        say("  %-34s %8.1f MiB   %.2fx curl (target <= 1.5)" % ("gemvault ask", ask_peak, ask_peak / curl_peak))
        record("`ask` peak RSS / curl", "%.2fx (%.1f / %.1f MiB)" % (ask_peak / curl_peak, ask_peak, curl_peak), "<= 1.5x",
               verdict(ask_peak / curl_peak, 1.5))

        turns = self.options.chat_turns
        vault = self.vault("memory-chat")
        vault.unlock()
        chat_env = dict(vault.env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=env["GEMVAULT_ENDPOINT"], TERM="xterm-256color")
        peaks = []
        for _ in range(max(1, runs // 2)):
            # The launcher runs in the pty and starts chat there: the pty and its signals reach chat as before.
            with tempfile.NamedTemporaryFile("r", prefix="peak-", suffix=".kib") as peak_file:
                session = PtySession([launcher, peak_file.name, self.binary, "chat", "--model", "ok"], chat_env)
                session.expect(r"you ›", timeout=30)
                for turn in range(turns):
                    session.mark()
                    session.line("turn %d, tell me something" % turn)
                    session.expect(r"you ›", timeout=30)
                session.send(b"\x04")
                code = session.wait(timeout=30)
                session.close()
                if code != 0:
                    raise SystemExit("bench: chat through the pty exited %s" % code)
                peaks.append(launcher_peak(peak_file.name))
        chat_peak = max(peaks)
        say("  %-34s %8.1f MiB   %.2fx curl" % ("chat, %d turns through a pty" % turns, chat_peak, chat_peak / curl_peak))
        record("%d-turn chat peak RSS / curl" % turns, "%.2fx (%.1f MiB)" % (chat_peak / curl_peak, chat_peak), "<= 1.5x",
               verdict(chat_peak / curl_peak, 1.5))

        keys = self.options.agent_keys
        vault = self.keyed_vault(keys)
        subprocess.run(vault.argv("key", "list"), env=vault.env, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(vault.argv("key", "get", "key%04d" % (keys // 2)), env=vault.env, stdout=subprocess.DEVNULL, check=True)
        status = json.loads(subprocess.run(vault.argv("status", "--json"), env=vault.env, capture_output=True, check=True).stdout)
        # The agent is started by `unlock` (posix_spawn, so exec gave it a fresh high-water mark)
        # and keeps running: its own VmHWM after the work is its peak so far.
        with open("/proc/%d/status" % status["agentPid"]) as handle:
            fields = dict(line.split(":", 1) for line in handle)
        hwm = int(fields["VmHWM"].split()[0]) / 1024
        say("  %-34s %8.1f MiB   %.2fx curl" % ("agent holding %d keys (VmHWM)" % keys, hwm, hwm / curl_peak))
        record("agent with %d keys peak RSS / curl" % keys, "%.2fx (%.1f MiB)" % (hwm / curl_peak, hwm), "<= 1.5x",
               verdict(hwm / curl_peak, 1.5))

    # -- 6. growth ---------------------------------------------------------------------------

    keyed = {}

    def keyed_vault(self, count):
        """An unlocked vault holding `count` keys, made once and shared by the sections."""
        if count not in self.keyed:
            vault = self.vault("keys-%d" % count)
            vault.unlock()
            vault.add_keys(count)
            self.keyed[count] = vault
        return self.keyed[count]

    def growth(self):
        sizes = [int(x) for x in self.options.sizes.split(",")]
        say("## 6a. Growth of a vault: %s keys (%d runs each, all sizes alternated)" % ("/".join(map(str, sizes)), self.runs))
        vaults = {n: self.keyed_vault(n) for n in sizes}
        cases = [("crypto_pwhash", lambda: timed(self.ref_pwhash("interactive"))),
                 ("--version", lambda: timed([self.binary, "--version"], env=self.base_env))]
        for n, vault in vaults.items():
            name = "key%04d" % (n // 2)
            cases += [
                ("open %d" % n, lambda v=vault, k=name: v.gv("key", "get", k, "--no-session", "--passphrase-file", self.passfile)),
                ("list %d" % n, lambda v=vault: v.gv("key", "list")),
                ("set %d" % n, lambda v=vault, k=name: v.gv("key", "set", k, stdin=b"AQ.Benchmark-new-0123456789abcdefghijklmnopqrstuvwx")),
            ]
        r = alternate(cases, self.runs)
        # A lookup differs from size to size by a tenth of a millisecond at most, within the
        # jitter of 20 runs: it gets five times as many, still alternated.
        r.update(alternate([("get %d" % n, lambda v=vault, k="key%04d" % (n // 2): v.gv("key", "get", k)) for n, vault in vaults.items()],
                           self.runs * 5))
        kdf, version = med(r["crypto_pwhash"]), med(r["--version"])
        say("  floor: crypto_pwhash %.2f ms, --version %.2f ms" % (kdf, version))
        say("  %-32s %s" % ("operation (ms; beyond the floor)", "".join("%18s" % ("%d keys" % n) for n in sizes)) + "   per key")
        growth = {}
        for op, floor, label in (("open", kdf, "open (key get, KDF)"), ("list", 0, "key list via agent"),
                                 ("set", 0, "key set via agent"), ("get", 0, "key get via agent")):
            values = [med(r["%s %d" % (op, n)]) - floor for n in sizes]
            growth[op] = values
            per_key = (values[-1] - values[0]) / (sizes[-1] - sizes[0]) * 1000 if len(sizes) > 1 else 0
            say("  %-32s %s   %6.1f us" % (label, "".join("%18.2f" % v for v in values), per_key))
        small, large = sizes[0], sizes[-1]
        record("%d keys: open (key get, KDF) beyond the KDF" % large, "%.2f ms" % growth["open"][-1], "< 5 ms",
               verdict(growth["open"][-1], 5.0))
        # Through the agent a lookup must not grow with the vault: the large vault against the small one.
        for op, label in (("get", "key get"), ("list", "key list")):
            ratio = growth[op][-1] / growth[op][0]
            record("%s via agent, %d keys / %d keys" % (label, large, small), "%.3fx (%.2f / %.2f ms)" % (ratio, growth[op][-1], growth[op][0]),
                   "<= 1.1x" if op == "get" else "-", verdict(ratio, 1.1) if op == "get" else "-")
        extra = growth["set"][-1] - growth["set"][0]
        record("key set via agent, %d keys beyond %d keys" % (large, small), "%+.2f ms (%.2f / %.2f ms)" % (extra, growth["set"][-1], growth["set"][0]),
               "< 5 ms", verdict(extra, 5.0))

        say("## 6b. Growth of a conversation: %s turns (%d runs each, alternated)" % ("/".join(map(str, sizes)), self.runs))
        url = self.fake_server()
        vault = self.vault("turns")
        vault.unlock()
        env = dict(vault.env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=url)
        ids = {n: vault.write_conversation(n) for n in sizes}
        cases = [("--version", lambda: timed([self.binary, "--version"], env=self.base_env))]
        for n in sizes:
            resume = [self.binary, "chat", "--model", "ok", "--resume", ids[n]]
            # The same turn with --no-save does everything but the append: the difference is the append.
            cases += [("resume %d" % n, lambda a=resume: timed(a, env=env, stdin=b"")),
                      ("show %d" % n, lambda i=ids[n]: timed(vault.argv("history", "show", i), env=env)),
                      ("send %d" % n, lambda a=resume: timed(a, env=env, stdin=b"one more question\n")),
                      ("unsaved %d" % n, lambda a=resume: timed(a + ["--no-save"], env=env, stdin=b"one more question\n"))]
        traced = shutil.which("strace") is not None
        if traced:
            # The append itself, from inside: the record's write and its fsync, timed by strace.
            for n in sizes:
                resume = [self.binary, "chat", "--model", "ok", "--resume", ids[n]]
                cases.append(("syscalls %d" % n, lambda a=resume: append_syscalls(a, env, self.work)))
        r = alternate(cases, self.runs)
        version_ms = med(r["--version"])
        say("  %-32s %s" % ("operation (ms)", "".join("%18s" % ("%d turns" % n) for n in sizes)) + "   per turn")
        rows = {}
        for op in ("resume", "show", "send", "unsaved") + (("syscalls",) if traced else ()):
            rows[op] = [med(r["%s %d" % (op, n)]) for n in sizes]
        rows["append"] = [s - q for s, q in zip(rows["send"], rows["unsaved"])]
        for op, label in (("resume", "resume (load, decrypt)"), ("show", "history show"), ("send", "resume + send one turn"),
                          ("unsaved", "the same with --no-save"), ("append", "difference: the append (noisy)"),
                          ("syscalls", "append: its write + fsync")):
            if op not in rows:
                continue
            values = rows[op]
            per = (values[-1] - values[0]) / (sizes[-1] - sizes[0]) * 1000 if len(sizes) > 1 else 0
            say("  %-32s %s   %6.1f us" % (label, "".join("%18.3f" % v for v in values), per))
        beyond = rows["resume"][-1] - version_ms
        say("  chat --resume of %d turns: %.2f ms beyond --version (%.2f ms)" % (sizes[-1], beyond, version_ms))
        record("chat --resume of %d turns beyond --version" % sizes[-1], "%.2f ms (%.2f / %.2f ms)" % (beyond, rows["resume"][-1], version_ms),
               "<= 50 ms", verdict(beyond, 50.0))
        shown = rows["show"][-1] - rows["show"][0]
        record("history show of %d turns beyond %d turns" % (sizes[-1], sizes[0]), "%.2f ms (%.2f / %.2f ms)" % (shown, rows["show"][-1], rows["show"][0]),
               "<= 50 ms", verdict(shown, 50.0))
        measure = "syscalls" if traced else "append"
        ratio = rows[measure][-1] / rows[measure][0] if rows[measure][0] > 0 else float("nan")
        say("  appending turn %d costs %.2fx turn %d (target <= 2; %s)"
            % (sizes[-1], ratio, sizes[0], "write + fsync timed by strace" if traced else "difference of processes, no strace"))
        record("append turn %d / turn %d (%s)" % (sizes[-1], sizes[0], "write + fsync" if traced else "difference"),
               "%.2fx (%.3f / %.3f ms)" % (ratio, rows[measure][-1], rows[measure][0]), "<= 2x", verdict(ratio, 2.0))

        say("## 6c. history list through the agent: %s conversations of 10 turns (%d runs each)" % ("/".join(map(str, sizes)), self.runs))
        lists = {}
        for n in sizes:
            vault = self.vault("conversations-%d" % n)
            vault.unlock()
            for _ in range(n):
                vault.write_conversation(10)
            lists[n] = vault
        r = alternate([("list %d" % n, lambda v=v: timed(v.argv("history", "list"), env=v.env)) for n, v in lists.items()], self.runs)
        values = [med(r["list %d" % n]) for n in sizes]
        per = (values[-1] - values[0]) / (sizes[-1] - sizes[0]) * 1000 if len(sizes) > 1 else 0
        say("  %-32s %s   %6.1f us" % ("history list (ms)", "".join("%18.2f" % v for v in values), per) + " per conversation")
        record("history list, %d conversations" % sizes[-1], "%.2f ms (%.1f us each)" % (values[-1], per), "< 100 ms",
               verdict(values[-1], 100.0))

        say("## 6d. The usage ledger: one reply's record; key usage over a year of 10 keys (%d runs each)" % self.runs)
        # No session: the reply is recorded, and no budget check reads the ledger first.
        ledger = self.vault("ledger")
        folder = ledger.history_folder()
        bare = self.vault("no-ledger")
        # Without the recipient the reply's usage is not written (the command says so): the difference is the record.
        os.remove(os.path.join(bare.history_folder(), "recipient"))
        ask = [self.binary, "ask", "--model", "metered", "--no-save", "q"]
        r = alternate([("with", lambda: timed(ask, env=dict(ledger.env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=url))),
                       ("without", lambda: timed(ask, env=dict(bare.env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=url)))], self.runs)
        extra = med(r["with"]) - med(r["without"])
        say("  ask with the ledger %.2f ms, without %.2f ms: %+.2f ms (difference of processes, noisy)" % (med(r["with"]), med(r["without"]), extra))
        record("ledger record added to a turn", "%+.2f ms (%.2f / %.2f ms)" % (extra, med(r["with"]), med(r["without"])), "< 1 ms", verdict(extra, 1.0))
        days = 365
        year = self.vault("ledger-year")
        year.unlock()
        write_ledger(year.history_folder(), keys=10, days=days)
        usage = year.argv("key", "usage", "--days", str(days + 1), "--json")
        timed(usage, env=year.env)  # merges the records once, and folds them into the summary (more than 2,048)
        records = os.path.getsize(os.path.join(year.history_folder(), "usage"))
        assert records < 2048 * 560, "the ledger was not compacted: %d bytes of records" % records
        r = alternate([("usage", lambda: timed(usage, env=year.env)), ("--version", lambda: timed([self.binary, "--version"], env=self.base_env))], self.runs)
        say("  key usage over a compacted year, %d days of 10 keys (%d rows): %.2f ms (--version %.2f ms)" % (days, days * 10, med(r["usage"]), med(r["--version"])))
        record("key usage, compacted year, %d days x 10 keys" % days, "%.2f ms" % med(r["usage"]), "< 50 ms", verdict(med(r["usage"]), 50.0))


def write_ledger(folder, keys, days):
    """`days` days of usage for `keys` keys as chat and ask append it (Docs/usage.md), sealed with PyNaCl."""
    from nacl.public import PublicKey, SealedBox
    with open(os.path.join(folder, "recipient"), "rb") as handle:
        box = SealedBox(PublicKey(handle.read()[4:36]))
    today = int(time.time()) // 86400
    records = []
    for day in range(today - days + 1, today + 1):
        for key in range(keys):
            body = json.dumps({"v": 1, "key": "key%02d" % key, "model": "gemini-2.5-flash", "day": day,
                               "counts": [3, 3000, 500, 0, 900, 1200]}, separators=(",", ":")).encode()
            records.append(box.encrypt(body + b" " * (512 - len(body))))
    fd = os.open(os.path.join(folder, "usage"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.write(fd, b"".join(records))
    os.close(fd)


def append_syscalls(argv, env, work):
    """ms spent in the fsync calls of one `chat` turn and in the write just before each on the
    same descriptor (the record), as strace -T reports them."""
    trace = os.path.join(work, "append.trace")
    proc = subprocess.run(["strace", "-f", "-T", "-e", "trace=write,fsync", "-o", trace] + argv, env=env,
                          input=b"one more question\n", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("bench: traced chat failed: %s" % proc.stderr.decode()[-400:])
    last_write, total = {}, 0.0
    with open(trace) as handle:
        for line in handle:
            match = re.search(r"(write|fsync)\((\d+)[,)].*<([0-9.]+)>", line)
            if not match:
                continue
            call, fd, seconds = match.group(1), match.group(2), float(match.group(3))
            if call == "write":
                last_write[fd] = seconds
            else:
                total += seconds + last_write.pop(fd, 0.0)
    return total * 1000


def compare_builds(options):
    """Start-up of each build configuration next to a C `true`, and whether its `ask` works."""
    work = tempfile.mkdtemp(prefix="gemvault-builds-")
    try:
        true = run_c(work, "true", "int main(void){return 0;}\n")
        builds = [item.split("=", 1) for item in options.builds.split(",")]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SWIFT_BACKTRACE": "enable=no"}
        server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "EndToEnd", "fake_gemini.py")], stdout=subprocess.PIPE, text=True)
        url = "http://127.0.0.1:%d" % int(server.stdout.readline().split()[1])
        ask_env = dict(env, GEMINI_API_KEY=API_KEY, GEMVAULT_ENDPOINT=url, HOME="/nonexistent")
        say("## Build configurations: --version against a C `true` (%d runs each, alternated)" % options.runs)
        cases = [("C true", lambda: timed([true]))]
        for name, path in builds:
            if os.path.exists(path):
                cases.append((name, lambda p=path: timed([p, "--version"], env=env)))
            else:
                say("  %-24s did not build" % name)
        r = alternate(cases, options.runs)
        floor = med(r["C true"])
        say("  %-24s %8.2f ms" % ("C true", floor))
        passfile = os.path.join(work, "pass")
        with open(passfile, "w") as handle:
            handle.write(PASSPHRASE + "\n")
        os.chmod(passfile, 0o600)
        for name, path in builds:
            if name not in r:
                continue
            # ask with the key from the environment, then from a vault: both must work.
            home = tempfile.mkdtemp(dir=work)
            vault_env = dict(env, HOME=home, XDG_RUNTIME_DIR=home, GEMVAULT_ENDPOINT=url)
            subprocess.run([path, "init", "--kdf", "interactive", "--passphrase-file", passfile], env=vault_env, capture_output=True)
            subprocess.run([path, "key", "set", "--passphrase-file", passfile], env=vault_env, input=API_KEY.encode(), capture_output=True)
            works = "ask works"
            for argv, run_env in (([path, "ask", "--no-save", "--model", "ok", "hello"], ask_env),
                                  ([path, "ask", "--no-save", "--model", "ok", "--passphrase-file", passfile, "hello"], vault_env)):
                proc = subprocess.run(argv, env=run_env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
                if proc.returncode != 0 or not proc.stdout:
                    works = "ask FAILS (exit %d, key from %s)" % (proc.returncode, "the vault" if run_env is vault_env else "the environment")
                    break
            dso = subprocess.run(["ldd", path], capture_output=True, text=True).stdout.count("=>")
            say("  %-24s %8.2f ms   %.2fx C true   %2d shared libraries   %s" % (name, med(r[name]), med(r[name]) / floor, dso, works))
            record("build %s: `--version` / C `true`" % name, "%.2fx (%s)" % (med(r[name]) / floor, works), "<= 2.0x",
                   verdict(med(r[name]) / floor, 2.0))
        server.terminate()
    finally:
        shutil.rmtree(work, ignore_errors=True)


PWHASH_C = r"""
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
/* crypto_pwhash alone: pwhash OPS MEM [COUNT] */
int main(int argc, char **argv) {
    if (argc < 3 || sodium_init() < 0) return 2;
    unsigned long long ops = strtoull(argv[1], 0, 10);
    size_t mem = (size_t)strtoull(argv[2], 0, 10);
    int count = argc > 3 ? atoi(argv[3]) : 1;
    const char *passphrase = "bench passphrase one 1234";
    unsigned char out[32], salt[crypto_pwhash_SALTBYTES] = {0};
    for (int i = 0; i < count; i++) {
        salt[0] = (unsigned char)i;
        if (crypto_pwhash(out, sizeof out, passphrase, strlen(passphrase), salt, ops, mem, crypto_pwhash_ALG_ARGON2ID13) != 0) return 1;
    }
    return 0;
}
"""

SDK_SCRIPT = r"""
import sys
from google import genai
from google.genai import types
client = genai.Client(api_key=sys.argv[2], http_options=types.HttpOptions(base_url=sys.argv[1], api_version="v1beta"))
for chunk in client.models.generate_content_stream(model="ok", contents="hello"):
    sys.stdout.write(chunk.text or "")
    sys.stdout.flush()
"""


def main():
    parser = argparse.ArgumentParser(prog="bench/run")
    parser.add_argument("--binary")
    parser.add_argument("--builds", help="name=path,...: compare these builds' start-up (bench/run --compare-builds)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sensitive-runs", type=int, default=None)
    parser.add_argument("--presets", default="interactive,moderate,sensitive")
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--chat-turns", type=int, default=50)
    parser.add_argument("--agent-keys", type=int, default=1000)
    parser.add_argument("--only", default="startup,lookup,unlock,chat,memory,growth,render,quick,share")
    parser.add_argument("--peak-rss", help="the compiled bench/peak_rss.c, which the memory section measures through")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-sdk", action="store_true")
    options = parser.parse_args()
    if options.quick:
        options.runs, options.sensitive_runs = 1, 1
        options.presets, options.sizes, options.chat_turns, options.agent_keys = "interactive", "2,5", 3, 5
    if options.sensitive_runs is None:
        options.sensitive_runs = options.runs
    if options.builds:
        compare_builds(options)
        print_summary(time.time())
        return
    if not options.binary:
        parser.error("--binary or --builds is needed")
    sections = options.only.split(",")
    unknown = set(sections) - {"startup", "lookup", "unlock", "chat", "memory", "growth", "render", "quick", "share"}
    if unknown:
        parser.error("unknown section %s" % ", ".join(sorted(unknown)))
    suite = Suite(options)
    started = time.time()
    try:
        say("# gemvault benchmark, %s, %s, %d cores, load %.2f" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                                  platform.platform(), os.cpu_count(), os.getloadavg()[0]))
        say("binary: %s" % suite.binary)
        for section in sections:
            getattr(suite, section)()
            # Other work on the machine inflates the floors and shrinks the ratios: say how much there was.
            say("  (load average after %s: %.2f)" % (section, os.getloadavg()[0]))
            say()
    finally:
        suite.close()
    print_summary(started)


def print_summary(started):
    say()
    say("## Summary (ratios are medians of alternated runs; load average at the end %.2f; %.0f s)"
        % (os.getloadavg()[0], time.time() - started))
    say("| Measurement | Figure | Target | |")
    say("|---|---|---|---|")
    for what, figure, target, ok in SUMMARY:
        say("| %s | %s | %s | %s |" % (what, figure, target, ok))


if __name__ == "__main__":
    main()
