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

    /// A file that holds one of gemvault's own secrets (the passphrase file a command names):
    /// never attached, whatever its content.
    public struct SecretFile: Sendable {
        public let path: String
        /// "the passphrase file (--passphrase-file)"
        public let role: String

        public init(path: String, role: String) {
            self.path = path
            self.role = role
        }
    }

    /// One file: a regular file of at most `Attachment.fileLimit` bytes, that is UTF-8 text
    /// or an image or PDF Gemini reads, reached without following a link another account
    /// could have planted, and none of `secretFiles`.
    public static func read(_ path: String, secretFiles: [SecretFile] = []) throws(Failure) -> Attachment {
        try readFile(path, secretFiles: secretFiles).attachment
    }

    /// An attachment with the file it was read from: the same file attached again (by the same
    /// path, or another name for it) is noticed and sent once.
    public struct AttachedFile: Sendable {
        public let attachment: Attachment
        let path: String
        let device: UInt64
        let inode: UInt64

        func isSame(as other: AttachedFile) -> Bool {
            path == other.path || (device == other.device && inode == other.inode)
        }
    }

    /// The warning for `file` when it is among `files` already (it is then not added); nil for a new one.
    public static func duplicate(_ file: AttachedFile, among files: [AttachedFile]) -> String? {
        guard let earlier = files.first(where: file.isSame) else { return nil }
        let shown = EscapeNeutralizer.neutralize(file.path)
        if earlier.path == file.path { return "\(shown) is attached already; it is sent once" }
        return "\(shown) is the same file as \(EscapeNeutralizer.neutralize(earlier.path)), attached already; it is sent once"
    }

    /// One file, with which file it is.
    public static func readFile(_ path: String, secretFiles: [SecretFile] = []) throws(Failure) -> AttachedFile {
        let shown = EscapeNeutralizer.neutralize(path)
        let contents: InputFile.Contents
        do { contents = try InputFile.readWithStatus(path, limit: Attachment.fileLimit) } catch {
            switch error {
            case .refused(let failure):
                let subject = failure.path == path ? "it" : EscapeNeutralizer.neutralize(failure.path)
                throw Failure(message: "cannot attach \(shown): \(subject) \(failure.problem.description)",
                              hint: EscapeNeutralizer.neutralize(failure.fix))
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
        for secret in secretFiles {
            guard let status = FileStatus.of(secret.path), status.device == contents.status.device,
                  status.inode == contents.status.inode else { continue }
            throw Failure(message: "cannot attach \(shown): it is \(secret.role); gemvault never sends it",
                          hint: "attach a copy without the secret in it")
        }
        do {
            return AttachedFile(attachment: try Attachment.make(name: path, bytes: contents.bytes), path: path,
                                device: contents.status.device, inode: contents.status.inode)
        } catch {
            throw Failure(message: "cannot attach \(shown): it is neither UTF-8 text nor an image (PNG, JPEG, WebP, GIF, HEIC, HEIF) or a PDF",
                          hint: "Gemini reads those kinds of files; gemvault tells them apart by their first bytes, not their names")
        }
    }

    /// Every file once (with a warning for each given again), together no more than
    /// `Attachment.messageLimit` bytes.
    public static func read(_ paths: [String], secretFiles: [SecretFile] = []) throws(Failure) -> (files: [AttachedFile], warnings: [String]) {
        var files: [AttachedFile] = []
        var warnings: [String] = []
        for path in paths {
            let file = try readFile(path, secretFiles: secretFiles)
            if let warning = duplicate(file, among: files) { warnings.append(warning) } else { files.append(file) }
        }
        try checkTotal(files.map(\.attachment))
        return (files, warnings)
    }

    public static func checkTotal(_ attachments: [Attachment]) throws(Failure) {
        let total = attachments.reduce(0) { $0 + $1.size }
        guard total <= Attachment.messageLimit else {
            throw Failure(message: "the attached files have \(total) bytes together, more than the \(Attachment.messageLimit >> 20) MiB one message may carry",
                          hint: "Gemini takes at most 20 MB of files in one request; attach fewer or smaller files")
        }
    }

    /// The text of the text files and PDFs, for the credential scanner: a key inside an
    /// attached file is treated as one typed in the prompt.
    public static func scannedText(_ attachments: [Attachment]) -> [(name: String, text: String)] {
        attachments.compactMap { attachment in scannedText(attachment).map { (attachment.name, $0) } }
    }

    /// What the scanner reads of one attachment: a text file whole, a PDF's readable parts; nil
    /// for an image.
    public static func scannedText(_ attachment: Attachment) -> String? {
        switch attachment.content {
        case .text(let text): return text
        case .binary(let bytes) where attachment.mimeType == "application/pdf": return pdfReadableText(bytes)
        default: return nil
        }
    }

    /// A PDF's bytes without its compressed streams: the uncompressed content streams (where
    /// text drawn with `(…) Tj` is plain) and the strings of its objects, as ASCII. Streams
    /// with a /Filter (FlateDecode and the others) are left out: gemvault links no zlib, and
    /// their text is not scanned.
    static func pdfReadableText(_ bytes: [UInt8]) -> String {
        let streamWord = Array("stream".utf8), endWord = Array("endstream".utf8)
        func find(_ word: [UInt8], from start: Int) -> Int? {
            guard start < bytes.count, word.count <= bytes.count - start else { return nil }
            var index = start
            while index + word.count <= bytes.count {
                if bytes[index] == word[0] && bytes[index..<index + word.count].elementsEqual(word) { return index }
                index += 1
            }
            return nil
        }
        var kept: [UInt8] = []
        var position = 0
        while let found = find(streamWord, from: position) {
            let after = found + streamWord.count
            // "endstream" holds "stream" too; a stream's data starts after an end of line.
            let isStart = (found < 3 || !bytes[found - 3..<found].elementsEqual(Array("end".utf8)))
                && after < bytes.count && (bytes[after] == 0x0a || bytes[after] == 0x0d)
            guard isStart else {
                kept += bytes[position..<after]
                position = after
                continue
            }
            var dataStart = after + 1
            if bytes[after] == 0x0d && dataStart < bytes.count && bytes[dataStart] == 0x0a { dataStart += 1 }
            let dataEnd = find(endWord, from: dataStart) ?? bytes.count
            // The stream's dictionary is what comes before it, back to its object header.
            let window = bytes[max(position, found - 4096)..<found]
            let header = window.indices.last { index in index + 3 <= window.endIndex && window[index..<index + 3].elementsEqual(Array("obj".utf8)) }
            let dictionary = window[(header ?? window.startIndex)...]
            kept += bytes[position..<dataStart]
            if !containsWord(dictionary, "/Filter") { kept += bytes[dataStart..<dataEnd] }
            kept.append(0x0a)
            position = min(bytes.count, dataEnd + endWord.count)
        }
        kept += bytes[position...]
        return String(decoding: kept.map { $0 < 0x80 && $0 != 0 ? $0 : 0x20 }, as: UTF8.self)
    }

    private static func containsWord(_ bytes: ArraySlice<UInt8>, _ word: String) -> Bool {
        let needle = Array(word.utf8)
        guard bytes.count >= needle.count else { return false }
        var index = bytes.startIndex
        while index + needle.count <= bytes.endIndex {
            if bytes[index..<index + needle.count].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}
