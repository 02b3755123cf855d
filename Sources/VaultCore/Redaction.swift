import Synchronization

/// The secrets this process holds (the API key, the passphrase), so that any message bound
/// for the user can have them cut out, whatever their shape.
public enum Redaction {
    /// Held until the process ends (or `forget`): an error is often reported after the
    /// object that used the secret is gone.
    private static let registered = Mutex<[SecretBytes]>([])

    /// Runs of at least this many bytes of a secret are cut out of messages.
    static let minimumRun = 12

    public static func register(_ secret: SecretBytes) {
        guard secret.count >= 4 else { return }
        registered.withLock { list in
            if !list.contains(where: { $0 === secret }) { list.append(secret) }
        }
    }

    /// For long-running processes: stop redacting (and holding) a secret.
    public static func forget(_ secret: SecretBytes) {
        registered.withLock { list in list.removeAll { $0 === secret } }
    }

    /// `text` with every run of `minimumRun` or more bytes (or the whole secret, if shorter)
    /// of a registered secret replaced by `[redacted]`.
    public static func redact(_ text: String) -> String {
        let secrets = registered.withLock { list in list }
        guard !secrets.isEmpty else { return text }
        let bytes = Array(text.utf8)
        var hidden = [Bool](repeating: false, count: bytes.count)
        for secret in secrets {
            secret.withUnsafeBytes { key in
                let run = min(minimumRun, key.count)
                for start in bytes.indices {
                    for offset in key.indices {
                        var length = 0
                        while start + length < bytes.count, offset + length < key.count, bytes[start + length] == key[offset + length] { length += 1 }
                        if length >= run { for index in start..<start + length { hidden[index] = true } }
                    }
                }
            }
        }
        guard hidden.contains(true) else { return text }
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if hidden[index] {
                result += Array("[redacted]".utf8)
                while index < bytes.count, hidden[index] { index += 1 }
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
