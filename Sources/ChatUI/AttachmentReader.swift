import Conversations
import SystemIO
import TerminalIO

/// Reads the files a user attaches, with the same checks in `ask`, `chat -a` and `/attach`.
public enum AttachmentReader {
    /// Why a file was not attached, worded for a person.
    public struct Failure: Error, Equatable, Sendable {
        public let message: String
        public let hint: String?
    }

    /// One file: a regular file of at most `Attachment.fileLimit` bytes, that is UTF-8 text
    /// or an image or PDF Gemini reads.
    public static func read(_ path: String) throws(Failure) -> Attachment {
        let shown = EscapeNeutralizer.neutralize(path)
        let bytes: [UInt8]
        do { bytes = try InputFile.read(path, limit: Attachment.fileLimit) } catch {
            switch error {
            case .notFound:
                throw Failure(message: "cannot attach \(shown): no such file", hint: nil)
            case .notRegular(_, let kind):
                throw Failure(message: "cannot attach \(shown): it is \(kind.description), not a regular file",
                              hint: kind == .directory ? "attach the files in it one by one" : "save what it gives to a regular file and attach that")
            case .tooLarge(_, let size, let limit):
                throw Failure(message: "cannot attach \(shown): it has \(size) bytes, more than the \(limit >> 20) MiB a file may have",
                              hint: "Gemini takes at most 20 MB of files in one request; send a smaller or shorter file")
            case .failed(let system):
                throw Failure(message: "cannot attach \(shown): \(system.reason)", hint: nil)
            }
        }
        do {
            return try Attachment.make(name: path, bytes: bytes)
        } catch {
            throw Failure(message: "cannot attach \(shown): it is neither UTF-8 text nor an image (PNG, JPEG, WebP, GIF, HEIC, HEIF) or a PDF",
                          hint: "Gemini reads those kinds of files; gemvault tells them apart by their first bytes, not their names")
        }
    }

    /// Every file, and together no more than `Attachment.messageLimit` bytes.
    public static func read(_ paths: [String]) throws(Failure) -> [Attachment] {
        var attachments: [Attachment] = []
        for path in paths { attachments.append(try read(path)) }
        try checkTotal(attachments)
        return attachments
    }

    public static func checkTotal(_ attachments: [Attachment]) throws(Failure) {
        let total = attachments.reduce(0) { $0 + $1.size }
        guard total <= Attachment.messageLimit else {
            throw Failure(message: "the attached files have \(total) bytes together, more than the \(Attachment.messageLimit >> 20) MiB one message may carry",
                          hint: "Gemini takes at most 20 MB of files in one request; attach fewer or smaller files")
        }
    }

    /// The text of the text files, for the credential scanner: a key inside an attached file
    /// is treated as one typed in the prompt.
    public static func scannedText(_ attachments: [Attachment]) -> [(name: String, text: String)] {
        attachments.compactMap { attachment in
            if case .text(let text) = attachment.content { return (attachment.name, text) }
            return nil
        }
    }
}
