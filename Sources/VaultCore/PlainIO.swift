#if canImport(Glibc)
import Glibc
#endif

/// Reading non-secret files and streams, shared by every module.
public enum PlainIO {
    public enum ReadFailure: Error, Equatable {
        case failed(errno: Int32)
        case tooLarge(limit: Int)
    }

    /// Reads a descriptor to its end, refusing more than `limit` bytes.
    public static func readAll(fd: Int32, limit: Int) throws(ReadFailure) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .failed(errno: errno)
            }
            if n == 0 { return result }
            result += chunk[0..<n]
            if result.count > limit { throw .tooLarge(limit: limit) }
        }
    }

    /// A whole file as text, or nil when it cannot be read (a missing file included).
    public static func readText(_ path: String, limit: Int = 1 << 20) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let bytes = try? readAll(fd: fd, limit: limit) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    /// The string without leading and trailing white space.
    public var trimmedWhitespace: String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[start...end])
    }
}
