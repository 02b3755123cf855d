import CSystemShims
import Glibc

/// Process-wide protections that must be in place before any secret is read.
public enum ProcessHardening {
    /// Sets RLIMIT_CORE to 0 and clears the dumpable flag, which also keeps other processes of
    /// the same user from attaching with ptrace or reading /proc/<pid>/mem and environ.
    @discardableResult
    public static func disableCoreDumps() -> Bool { gv_disable_core_dumps() == 0 }

    public static var isDumpable: Bool { gv_is_dumpable() == 1 }

    /// Everything a gemvault process sets up before it reads a secret.
    public static func prepareProcess() {
        disableCoreDumps()
        occupyClosedStandardDescriptors()
        // A closed stdout (| head) must end the process quietly, not kill it mid-save: the write
        // fails with EPIPE instead, which ErrorReport turns into a quiet exit 141.
        signal(SIGPIPE, SIG_IGN)
        // A file size limit must fail the write (EFBIG), which leaves the vault intact, not kill us.
        signal(SIGXFSZ, SIG_IGN)
        // libcurl would write TLS session secrets to this file (mode 0644 at that).
        unsetenv("SSLKEYLOGFILE")
    }

    /// A closed stdin, stdout or stderr (`gemvault ask >&-`) would be the next descriptor
    /// opened, and results written "to stdout" would go into a socket or file of ours. Each is
    /// given /dev/null read-only: reads end at once, and writes fail (EBADF) as on a closed one.
    static func occupyClosedStandardDescriptors() {
        for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            // open takes the lowest free descriptor: this one, since those below it are open by now.
            _ = open("/dev/null", O_RDONLY)
        }
    }

    /// The process environment as a dictionary (read after `prepareProcess`). Split on bytes:
    /// walking each entry as Characters cost more than the rest of `--version`.
    public static var environment: [String: String] {
        var count = 0
        while environ[count] != nil { count += 1 }
        var result: [String: String] = Dictionary(minimumCapacity: count)
        for index in 0..<count {
            guard let entry = environ[index], let equals = strchr(entry, Int32(UInt8(ascii: "="))) else { continue }
            let nameLength = equals - entry
            let name = entry.withMemoryRebound(to: UInt8.self, capacity: nameLength) {
                String(decoding: UnsafeBufferPointer(start: $0, count: nameLength), as: UTF8.self)
            }
            result[name] = String(cString: equals + 1)
        }
        return result
    }

    /// Zeroes one of the process's own arguments from byte `offset` on, in the memory the
    /// kernel shows as /proc/PID/cmdline to every user. Call it only once the arguments are
    /// copied (`CommandLine.arguments`); the word keeps its place, so later ones do not move.
    public static func wipeArgument(_ index: Int, from offset: Int) {
        guard index > 0, index < Int(CommandLine.argc), let word = CommandLine.unsafeArgv[index] else { return }
        let length = strlen(word)
        guard offset < length else { return }
        memset(word + offset, 0, length - offset)
    }

    /// Ends the process with `code`.
    public static func exit(_ code: Int32) -> Never { Glibc.exit(code) }
}
