import Glibc
import Synchronization

/// Runs code with the process's stdin, stdout and stderr replaced by files, for a test that
/// drives the CLI in this process: what it read, and what it printed on each. One capture at a
/// time (the descriptors are the process's); other output of the test process meanwhile, such
/// as the test runner's own lines, may land in the capture too.
public enum StandardStreams {
    public struct Captured<T> {
        public let result: T
        public let stdout: String
        public let stderr: String
    }

    private static let lock = Mutex(())

    public static func capture<T>(stdin: String = "", _ body: () throws -> T) rethrows -> Captured<T> {
        try lock.withLock { _ in
            let folder = TemporaryFolder("streams")
            let input = folder.appending("stdin"), output = folder.appending("stdout"), errors = folder.appending("stderr")
            _ = stdin.withCString { text in
                let fd = open(input, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                defer { close(fd) }
                return write(fd, text, strlen(text))
            }
            let saved = [dup(0), dup(1), dup(2)]
            let replaced = [open(input, O_RDONLY), open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o600), open(errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)]
            for (target, fd) in replaced.enumerated() { dup2(fd, Int32(target)); close(fd) }
            defer {
                for (target, fd) in saved.enumerated() { dup2(fd, Int32(target)); close(fd) }
            }
            let result = try body()
            return Captured(result: result, stdout: read(output), stderr: read(errors))
        }
    }

    private static func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
