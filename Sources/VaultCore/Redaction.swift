import GoogleKeys
import Synchronization

/// The secrets this process holds (the API key, the passphrase), so that any message bound
/// for the user can have them cut out, whatever their shape; and anything shaped like a
/// Google key or access token, whoever's it is.
public enum Redaction {
    /// Held until the process ends: an error is often reported after the
    /// object that used the secret is gone.
    private static let registered = Mutex<[(secret: SecretBytes, wholeOnly: Bool)]>([])

    /// Runs of at least this many bytes of a secret are cut out of messages.
    static let minimumRun = 12

    /// An API key: any run of 12 or more of its bytes is cut out (servers quote keys in part).
    public static func register(_ secret: SecretBytes) { add(secret, wholeOnly: secret.count < 24) }

    /// A passphrase or code: only the whole of it, and only when it is long enough that
    /// cutting it out cannot give it away (a short passphrase is also an ordinary word).
    public static func registerPassphrase(_ secret: SecretBytes) {
        guard secret.count >= minimumRun else { return }
        add(secret, wholeOnly: true)
    }

    private static func add(_ secret: SecretBytes, wholeOnly: Bool) {
        guard secret.count >= minimumRun else { return }
        registered.withLock { list in
            if !list.contains(where: { $0.secret === secret }) { list.append((secret, wholeOnly)) }
        }
    }

    /// `text` with every run of `minimumRun` or more bytes (or the whole secret, if shorter)
    /// of a registered secret replaced by `[redacted]`.
    public static func redact(_ text: String) -> String {
        let shaped = redactShapes(text)
        let secrets = registered.withLock { list in list }
        guard !secrets.isEmpty else { return shaped }
        let bytes = Array(shaped.utf8)
        var hidden = [Bool](repeating: false, count: bytes.count)
        for (secret, wholeOnly) in secrets {
            secret.withUnsafeBytes { key in
                let run = wholeOnly ? key.count : minimumRun
                for start in bytes.indices {
                    for offset in (wholeOnly ? 0..<1 : key.indices) {
                        var length = 0
                        while start + length < bytes.count, offset + length < key.count, bytes[start + length] == key[offset + length] { length += 1 }
                        if length >= run { for index in start..<start + length { hidden[index] = true } }
                    }
                }
            }
        }
        guard hidden.contains(true) else { return shaped }
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

    /// Keys and tokens by their shape. A masked value (`AQ.A…wxyz`) shows too little to match.
    static func redactShapes(_ text: String) -> String {
        // Most messages hold no credential prefix at all: skip the byte scan for them.
        guard text.contains("AIza") || text.contains("AQ.") || text.contains("ya29.") else { return text }
        guard let redacted = GoogleKeyShape.redacting(Array(text.utf8), minimumBody: 8, replacement: Array("[redacted]".utf8)) else { return text }
        return String(decoding: redacted, as: UTF8.self)
    }
}
