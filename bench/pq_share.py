"""Section 9 of the benchmark suite: a share to post-quantum recipients. `key share` through a
session to the 10 hybrid recipients of bench/hybrid-recipients.txt (ML-KEM-768 + X25519 each),
against the same share to 10 X25519 recipients (bench/classic-recipients.txt) and `--version`."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(suite, alternate, med, timed, say, record, verdict):
    say("## 9. Sharing to post-quantum recipients: key share through the agent to 10 recipients (%d runs each)" % suite.runs)
    vault = suite.vault("pq-share")
    vault.add_keys(1)
    vault.unlock()
    out = os.path.join(vault.dir, "share.age")

    def share(recipients):
        return timed(vault.argv("key", "share", "key0000", "-R", os.path.join(HERE, recipients), "-o", out, "--force"), env=vault.env)

    r = alternate([("--version", lambda: timed(vault.argv("--version"), env=vault.env)),
                   ("10 X25519", lambda: share("classic-recipients.txt")),
                   ("10 hybrid", lambda: share("hybrid-recipients.txt"))], suite.runs)
    v, classic, hybrid = med(r["--version"]), med(r["10 X25519"]), med(r["10 hybrid"])
    say("  %-34s %8.2f ms" % ("gemvault --version", v))
    say("  %-34s %8.2f ms" % ("key share to 10 X25519 recipients", classic))
    say("  %-34s %8.2f ms   %.2fx the X25519 share (target < 50 ms)" % ("key share to 10 hybrid recipients", hybrid, hybrid / classic))
    record("`key share` to 10 hybrid (age1pq1…) recipients, via agent", "%.1f ms (10 X25519: %.1f ms)" % (hybrid, classic), "< 50 ms",
           verdict(hybrid, 50))
    vault.lock()
