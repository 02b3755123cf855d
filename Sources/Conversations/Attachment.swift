import TerminalIO
import VaultCore

/// A file added to a prompt (`ask -a`, `chat -a`, `/attach`). Text goes inline in a fenced
/// block headed by its name; an image or a PDF goes as `inlineData` with its MIME type. What a
/// file is comes from its first bytes, not its name.
public struct Attachment: Sendable, Equatable {
    public enum Content: Sendable, Equatable {
        /// UTF-8 text.
        case text(String)
        /// An image or a PDF.
        case binary([UInt8])
        /// Read back from history, which keeps only its name, size and digest
        /// (unless `--keep-attachments`).
        case notKept
    }

    /// The file's name without its folder.
    public let name: String
    public let size: Int
    /// SHA-256 of the bytes, lowercase hex, as `sha256sum` prints it.
    public let sha256: String
    /// `text/plain` for text.
    public let mimeType: String
    public let content: Content

    /// Gemini takes at most 20 MB of inline data per request, and base64 makes a file a third
    /// larger: one file may have 10 MiB, one message's files 14 MiB together (18.7 MiB encoded).
    public static let fileLimit = 10 << 20
    public static let messageLimit = 14 << 20

    public init(name: String, size: Int, sha256: String, mimeType: String, content: Content) {
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.mimeType = mimeType
        self.content = content
    }

    /// What Gemini cannot take as it is: neither UTF-8 text nor an image or PDF it reads.
    public struct Unsupported: Error, Equatable, Sendable {
        public let name: String
    }

    /// The attachment for a file's bytes; `name` is the path it was given by.
    public static func make(name path: String, bytes: [UInt8]) throws(Unsupported) -> Attachment {
        let name = String(path.split(separator: "/").last ?? Substring(path))
        let digest = Sodium.hex(Sodium.sha256(bytes))
        if let mimeType = sniff(bytes) {
            return Attachment(name: name, size: bytes.count, sha256: digest, mimeType: mimeType, content: .binary(bytes))
        }
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else { throw Unsupported(name: name) }
        return Attachment(name: name, size: bytes.count, sha256: digest, mimeType: "text/plain", content: .text(text))
    }

    /// The MIME type of an image or PDF Gemini reads, from its magic bytes; nil for anything else.
    static func sniff(_ bytes: [UInt8]) -> String? {
        func starts(_ magic: String, at offset: Int = 0) -> Bool {
            let expected = Array(magic.utf8)
            return bytes.count >= offset + expected.count && Array(bytes[offset..<offset + expected.count]) == expected
        }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts("GIF87a") || starts("GIF89a") { return "image/gif" }
        if starts("RIFF"), starts("WEBP", at: 8) { return "image/webp" }
        if starts("%PDF-") { return "application/pdf" }
        // ISO base media files: `ftyp` at 4, then the major brand.
        if starts("ftyp", at: 4), bytes.count >= 12 {
            let brand = String(decoding: bytes[8..<12], as: UTF8.self)
            if ["heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs"].contains(brand) { return "image/heic" }
            if ["mif1", "msf1", "heif"].contains(brand) { return "image/heif" }
        }
        return nil
    }

    /// What the request carries: a text file in a fence longer than any run of backticks in
    /// it, headed by its name; an image or PDF as a file part; one not kept, a note saying so.
    public var part: MessagePart {
        switch content {
        case .text(let text):
            let fence = String(repeating: "`", count: max(3, Self.longestBacktickRun(text) + 1))
            return .text("File: \(name)\n\(fence)\n\(text)\(text.hasSuffix("\n") || text.isEmpty ? "" : "\n")\(fence)")
        case .binary(let bytes):
            return .file(mimeType: mimeType, bytes: bytes)
        case .notKept:
            return .text("[The file \(name) (\(size) bytes, \(mimeType), SHA-256 \(sha256)) was attached here; gemvault's history keeps only its name and digest.]")
        }
    }

    static func longestBacktickRun(_ text: String) -> Int {
        var longest = 0, run = 0
        for byte in text.utf8 {
            run = byte == UInt8(ascii: "`") ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    /// `notes.txt (1.2 kB, text/plain)`, neutralised for a terminal.
    public var label: String {
        EscapeNeutralizer.neutralize("\(name) (\(Self.sizeText(size)), \(mimeType))")
    }

    static func sizeText(_ bytes: Int) -> String {
        if bytes < 1000 { return "\(bytes) bytes" }
        let units = ["kB", "MB", "GB"]
        var value = Double(bytes) / 1000
        var unit = 0
        while value >= 1000, unit < units.count - 1 { value /= 1000; unit += 1 }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}

/// An attachment as a turn's record keeps it: name, size, digest and type, and its content
/// only when the user asked for that (`--keep-attachments`): text as it is, anything else in base64.
public struct SavedAttachment: Codable, Sendable, Equatable {
    public var name: String
    public var size: Int
    public var sha256: String
    public var mimeType: String
    public var text: String?
    public var data: String?

    public init(_ attachment: Attachment, keepContent: Bool) {
        name = attachment.name
        size = attachment.size
        sha256 = attachment.sha256
        mimeType = attachment.mimeType
        switch attachment.content {
        case .text(let text) where keepContent: self.text = text
        case .binary(let bytes) where keepContent: data = Sodium.base64(bytes)
        default: break
        }
    }

    /// The attachment again: whole when its content was kept (and still matches its digest).
    public var attachment: Attachment {
        var content = Attachment.Content.notKept
        if let text, Sodium.hex(Sodium.sha256(Array(text.utf8))) == sha256 {
            content = .text(text)
        } else if let data, let bytes = Sodium.bytes(base64: data), Sodium.hex(Sodium.sha256(bytes)) == sha256 {
            content = .binary(bytes)
        }
        return Attachment(name: name, size: size, sha256: sha256, mimeType: mimeType, content: content)
    }
}
