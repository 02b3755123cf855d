import SystemIO
import VaultCore

/// A secret for another tool: up to `limit` bytes from stdin when it is not a terminal, else a
/// hidden line (or, with `multiline`, hidden lines up to an empty one) on the controlling terminal.
public enum SecretTextInput {
    public static func read(prompt: String, limit: Int, multiline: Bool, stdinIsTerminal: Bool) throws(SecretInputError) -> SecretBytes {
        let value = stdinIsTerminal ? try readTerminal(prompt: prompt, multiline: multiline) : try readAll(.standardInput, limit: limit)
        guard value.count > 0 else { throw .empty }
        return value
    }

    /// All of `file`, without the white space around it (a pipe's last line break).
    static func readAll(_ file: FileDescriptor, limit: Int) throws(SecretInputError) -> SecretBytes {
        // Room for the white space around a value of the largest size (a pipe's CRLF, an indent).
        let buffer = SecretBytes(count: limit + 64 + 1)
        var length = 0
        var failure: SecretInputError?
        buffer.withUnsafeMutableBytes { raw in
            while length < raw.count {
                let chunk = UnsafeMutableRawBufferPointer(rebasing: raw[length...])
                switch Result(catching: { () throws(SystemError) in try file.read(into: chunk) }) {
                case .success(0): return
                case .success(let count): length += count
                case .failure(let error): failure = .unreadable("\(file.path): \(error.reason)"); return
                }
            }
        }
        if let failure { throw failure }
        guard length < buffer.count else { throw .tooLong(limit: limit) }
        buffer.truncate(to: length)
        let trimmed = buffer.trimmingWhitespace()
        guard trimmed.count <= limit else { throw .tooLong(limit: limit) }
        return trimmed
    }

    /// One hidden line, or hidden lines joined by line feeds until an empty one.
    static func readTerminal(prompt: String, multiline: Bool) throws(SecretInputError) -> SecretBytes {
        let first = try SecretInput.read(from: .terminal, prompt: multiline ? prompt + "(lines, then an empty line) " : prompt)
        guard multiline else { return first }
        var lines = [first]
        while true {
            let line: SecretBytes
            do { line = try SecretInput.read(from: .terminal, prompt: "") } catch .empty { break }
            lines.append(line)
        }
        let joined = SecretBytes(count: lines.reduce(0) { $0 + $1.count + 1 } - 1)
        joined.withUnsafeMutableBytes { out in
            var offset = 0
            for (index, line) in lines.enumerated() {
                if index > 0 { out[offset] = 0x0a; offset += 1 }
                line.withUnsafeBytes { bytes in
                    guard bytes.count > 0 else { return }
                    (out.baseAddress! + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                }
                offset += line.count
            }
        }
        return joined
    }
}
