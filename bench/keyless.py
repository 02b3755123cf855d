#!/usr/bin/env python3
"""`ask` through a Google identity's token the unlocked session keeps (auth = google,
Docs/keyless.md) next to `ask` through a vault key, pairs alternated, against the local fake
of Google (Tests/EndToEnd/fake_google.py): the target is within 1.05x (Docs/performance.md).

Usage: bench/keyless.py BINARY [RUNS]   (default 20 rounds)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "Tests", "EndToEnd"))
import fake_federation  # noqa: E402

KEY = "AQ.Benchmark-0123456789abcdefghijklmnopqrstuvwxyz0123"
POOL = "projects/123456867718/locations/global/workloadIdentityPools/bench"
ACCOUNT = "bench@gen-lang-client-0123456789.iam.gserviceaccount.com"


def control(url, **command):
    request = urllib.request.Request(url + "/_control", data=json.dumps(command).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def timed(argv, env):
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit("bench: %s failed: %s" % (" ".join(argv[1:3]), proc.stderr.decode()[-300:]))
    return (time.perf_counter() - start) * 1000


def main():
    binary, runs = os.path.abspath(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 20
    work = tempfile.mkdtemp(prefix="gemvault-keyless-bench-")
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "Tests", "EndToEnd", "fake_google.py")], stdout=subprocess.PIPE, text=True)
    try:
        url = "http://127.0.0.1:%d" % int(server.stdout.readline().split()[1])
        audience = "//iam.googleapis.com/%s/providers/bench" % POOL
        control(url, providers={audience: {}}, grants={ACCOUNT: ["principal://iam.googleapis.com/%s/subject/bench" % POOL]},
                keys=[{"id": "bench", "keyString": KEY}])
        subject = control(url, oidc={"sub": "bench", "aud": "https://iam.googleapis.com/%s/providers/bench" % POOL, "exp": int(time.time()) + 86400,
                                     "iat": int(time.time())})["oidc"]
        for name, text, mode in (("pass", "keyless bench passphrase 1234\n", 0o600), ("subject.jwt", subject, 0o600)):
            with open(os.path.join(work, name), "w") as handle:
                handle.write(text)
            os.chmod(os.path.join(work, name), mode)
        credential = {"type": "external_account", "audience": audience, "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                      "token_url": url + "/v1/token", "credential_source": {"file": os.path.join(work, "subject.jwt")},
                      "service_account_impersonation_url": url + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % ACCOUNT}
        with open(os.path.join(work, "wif.json"), "w") as handle:
            json.dump(credential, handle)
        os.chmod(os.path.join(work, "wif.json"), 0o600)
        os.makedirs(os.path.join(work, "run"), mode=0o700)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "NO_COLOR": "1", "HOME": work,
               "XDG_RUNTIME_DIR": os.path.join(work, "run"), "XDG_STATE_HOME": os.path.join(work, "state"),
               "XDG_CONFIG_HOME": os.path.join(work, "config"), "GEMVAULT_VAULT": os.path.join(work, "vault"),
               "GEMVAULT_ENDPOINT": url, "GOOGLE_APPLICATION_CREDENTIALS": os.path.join(work, "wif.json"), "GEMVAULT_HISTORY": "off"}
        passfile = ["--passphrase-file", os.path.join(work, "pass")]
        subprocess.run([binary, "init", "--kdf", "interactive", *passfile], env=env, check=True, capture_output=True)
        subprocess.run([binary, "key", "set", "default", *passfile], env=env, input=KEY.encode(), check=True, capture_output=True)
        subprocess.run([binary, "unlock", *passfile], env=env, check=True, capture_output=True)
        cases = [("vault key", [binary, "ask", "--model", "ok", "hello"]), ("agent token", [binary, "ask", "--model", "ok", "--auth", "google", "hello"])]
        for _, argv in cases:
            timed(argv, env)  # the first keyless ask fetches the token the session then keeps
        results = {name: [] for name, _ in cases}
        for round_ in range(runs):
            for name, argv in (cases if round_ % 2 == 0 else list(reversed(cases))):
                results[name].append(timed(argv, env))
        key, token = statistics.median(results["vault key"]), statistics.median(results["agent token"])
        print("ask, vault key:   %.1f ms (median of %d)" % (key, runs))
        print("ask, agent token: %.1f ms (median of %d)" % (token, runs))
        print("ratio %.3f (target <= 1.05): %s" % (token / key, "met" if token / key <= 1.05 else "MISSED"))
        subprocess.run([binary, "lock"], env=env, capture_output=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
