#!/usr/bin/env python3
"""Writes BuildSupport/hot-symbols.txt, the linker's function order for the release build:
the functions gemvault runs in `ask`, a chat in a pty, `unlock`, the agent and `key get`,
as valgrind's callgrind sees them. The kernel maps a program's code 64 KiB at a time, so
hot functions scattered over 13 MiB of code kept most of it resident; placed together they
take about 1 MiB. Only a layout: a stale list costs memory, never behaviour.

Usage: bench/hot_symbols.py [RELEASE_BINARY]   (default: build install.sh's configuration)
Regenerate after larger changes to the code, then rebuild and run bench/run --only memory.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Tests", "EndToEnd"))
from ptyrun import PtySession  # noqa: E402

API_KEY = "AQ.Benchmark-0123456789abcdefghijklmnopqrstuvwxyz0123"
PASSPHRASE = "hot symbols passphrase 1234"


def release_binary():
    flags = subprocess.run(["bash", "-c", 'source BuildSupport/release-flags.sh; printf "%s\\n" "${release_flags[@]}"'],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    subprocess.run(["swift", "build", *flags, "--product", "gemvault"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    path = subprocess.run(["swift", "build", *flags, "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True)
    return os.path.join(path.stdout.strip(), "gemvault")


def functions(profile, binary_name):
    """Names of the functions callgrind saw running in the binary (its compressed name format)."""
    objects, names, current, seen = {}, {}, None, []
    with open(profile, errors="replace") as handle:
        for line in handle:
            match = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if match:
                if match.group(3):
                    objects[match.group(2)] = match.group(3)
                if match.group(1) == "ob":
                    current = objects[match.group(2)]
                continue
            match = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if match:
                if match.group(3):
                    names[match.group(2)] = re.sub(r"'\d+$", "", match.group(3))  # callgrind's recursion marks
                if match.group(1) == "fn" and current and os.path.basename(current) == binary_name:
                    seen.append(names[match.group(2)])
    return seen


def main():
    if shutil.which("valgrind") is None:
        raise SystemExit("bench: valgrind is needed (on Debian: apt-get install -y valgrind)")
    binary = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else release_binary()
    work = tempfile.mkdtemp(prefix="gemvault-hot-")
    server = None
    try:
        # valgrind cannot read the debug information lld writes; the symbol table is enough.
        traced = os.path.join(work, "gemvault")
        subprocess.run(["strip", "--strip-debug", "-o", traced, binary], check=True)
        server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "EndToEnd", "fake_gemini.py")],
                                  stdout=subprocess.PIPE, text=True)
        url = "http://127.0.0.1:%d" % int(server.stdout.readline().split()[1])
        os.makedirs(os.path.join(work, "run"), mode=0o700)
        env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "SWIFT_BACKTRACE": "enable=no", "HOME": work,
               "GEMVAULT_VAULT": os.path.join(work, "vault"), "XDG_RUNTIME_DIR": os.path.join(work, "run"),
               "XDG_STATE_HOME": os.path.join(work, "state"), "XDG_CONFIG_HOME": os.path.join(work, "config"),
               "GEMVAULT_ENDPOINT": url}
        passfile = os.path.join(work, "pass")
        with open(passfile, "w") as handle:
            handle.write(PASSPHRASE + "\n")
        os.chmod(passfile, 0o600)

        def grind(name, args, extra_env=None, stdin=b"", children=False):
            out = os.path.join(work, "cg-%s.%%p" % name)
            argv = ["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out,
                    "--trace-children=%s" % ("yes" if children else "no"), traced, *args]
            subprocess.run(argv, env=dict(env, **(extra_env or {})), input=stdin, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, timeout=300)
            return argv

        subprocess.run([traced, "init", "--kdf", "interactive", "--passphrase-file", passfile], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([traced, "key", "set", "k1", "--passphrase-file", passfile], env=env, input=API_KEY.encode(),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # In the order of the bench's memory rows: ask first, so its code is the most compact.
        grind("ask", ["ask", "--no-save", "--model", "ok", "hello"], {"GEMINI_API_KEY": API_KEY, "NO_COLOR": "1"})
        grind("unlock", ["unlock", "--passphrase-file", passfile], children=True)  # and the agent it starts
        grind("get", ["key", "get", "k1"])
        grind("chat-pipe", ["chat", "--model", "ok"], {"GEMINI_API_KEY": API_KEY}, stdin=b"first question\nsecond one\n")
        chat_env = dict(env, TERM="xterm-256color", GEMINI_API_KEY=API_KEY)
        session = PtySession([shutil.which("valgrind"), "--tool=callgrind", "--demangle=no",
                              "--callgrind-out-file=" + os.path.join(work, "cg-chat-pty.%p"), traced, "chat", "--model", "code"],
                             chat_env)
        try:
            session.expect(r"you ›", timeout=120)
            session.mark()
            session.line("show me some code")
            session.expect(r"you ›", timeout=120)
            session.send(b"\x04")
            session.wait(timeout=120)
        finally:
            session.close()
        subprocess.run([traced, "lock"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The agent's profile is written as it exits, after `lock` has its answer.
        for _ in range(300):
            if len([n for n in os.listdir(work) if n.startswith("cg-unlock.")]) >= 2:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("bench: the agent's profile never appeared")
        order, seen = [], set()
        for prefix in ("cg-ask", "cg-chat-pty", "cg-chat-pipe", "cg-unlock", "cg-get"):
            for name in sorted(n for n in os.listdir(work) if n.startswith(prefix + ".")):
                for function in functions(os.path.join(work, name), "gemvault"):
                    if function not in seen and not function.startswith("0x") and " " not in function:
                        seen.add(function)
                        order.append(function)
        target = os.path.join(ROOT, "BuildSupport", "hot-symbols.txt")
        with open(target, "w") as handle:
            handle.write("\n".join(order) + "\n")
        print("bench: %d functions written to %s" % (len(order), os.path.relpath(target, ROOT)))
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
