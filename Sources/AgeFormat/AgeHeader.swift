/// One recipient stanza: `-> TYPE ARG…` and a body wrapped at 64 columns of unpadded base64.
public struct AgeStanza: Sendable, Equatable {
    public let type: String
    public let arguments: [String]
    public let body: [UInt8]

    public init(type: String, arguments: [String], body: [UInt8]) {
        self.type = type
        self.arguments = arguments
        self.body = body
    }
}

/// The textual header of an age v1 file.
struct AgeHeader {
    static let versionLine = Array("age-encryption.org/v1\n".utf8)
    static let macBytes = 32
    private static let bodyColumns = 64

    var stanzas: [AgeStanza]
    /// The header up to and including `---`: what the MAC covers.
    var macInput: [UInt8]
    var mac: [UInt8]
    /// Where the binary payload starts.
    var payloadOffset: Int

    /// The header's bytes with `mac` (computed by the caller over `macInput(of:)`).
    static func serialized(_ stanzas: [AgeStanza], mac: [UInt8]) -> [UInt8] {
        macInput(of: stanzas) + Array(" \(StrictBase64.encode(mac))\n".utf8)
    }

    static func macInput(of stanzas: [AgeStanza]) -> [UInt8] {
        var text = versionLine
        for stanza in stanzas {
            text += Array((["->", stanza.type] + stanza.arguments).joined(separator: " ").utf8) + [10]
            let encoded = Array(StrictBase64.encode(stanza.body).utf8)
            var start = 0
            // Full lines, then one shorter line (empty when the body fills its last line).
            while encoded.count - start >= bodyColumns {
                text += encoded[start..<(start + bodyColumns)] + [10]
                start += bodyColumns
            }
            text += encoded[start...] + [10]
        }
        return text + Array("---".utf8)
    }

    /// Parses the header at the start of `file`.
    static func parse(_ file: [UInt8]) throws(AgeError) -> AgeHeader {
        guard file.starts(with: versionLine) else {
            throw AgeError(.header, file.starts(with: Array("age-encryption.org/".utf8)) ? "unsupported age version" : "not an age file")
        }
        var position = versionLine.count
        var stanzas: [AgeStanza] = []

        /// The next line without its newline; a header line must end with one.
        func nextLine() throws(AgeError) -> ArraySlice<UInt8> {
            guard let end = file[position...].firstIndex(of: 10) else { throw AgeError(.header, "the header ends early") }
            defer { position = end + 1 }
            return file[position..<end]
        }

        while true {
            let line = try nextLine()
            if line.starts(with: Array("---".utf8)) {
                let rest = line.dropFirst(3)
                guard rest.first == 32, let mac = StrictBase64.decode(rest.dropFirst()), mac.count == macBytes else {
                    throw AgeError(.header, "the header's MAC line is malformed")
                }
                return AgeHeader(stanzas: stanzas, macInput: Array(file[..<(line.startIndex + 3)]), mac: mac, payloadOffset: position)
            }
            guard line.starts(with: Array("-> ".utf8)) else { throw AgeError(.header, "a header line is neither a stanza nor the MAC") }
            let words = line.dropFirst(3).split(separator: 32, omittingEmptySubsequences: false)
            guard !words.isEmpty, words.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0 >= 33 && $0 <= 126 } }) else {
                throw AgeError(.header, "a stanza's arguments are malformed")
            }
            var body: [UInt8] = []
            while true {
                let bodyLine = try nextLine()
                guard bodyLine.count <= bodyColumns, let decoded = StrictBase64.decode(bodyLine) else {
                    throw AgeError(.header, "a stanza's body is not canonical base64 in lines of 64 columns")
                }
                body += decoded
                if bodyLine.count < bodyColumns { break }
            }
            let strings = words.map { String(decoding: $0, as: UTF8.self) }
            stanzas.append(AgeStanza(type: strings[0], arguments: Array(strings.dropFirst()), body: body))
        }
    }
}
