import CCurlStream
import Glibc
import SystemIO
import VaultCore

/// One HTTP exchange with Google's token, metadata or API Keys endpoints, over the libcurl
/// that GeminiClient loads with dlopen. The bearer token travels only in a header built in
/// secret memory (libcurl's copy is wiped after the transfer), a secret body is sent from
/// secret memory, and the answer is collected in secret memory: a token answer or a finished
/// create operation carries a secret.
public struct GoogleHTTP: Sendable {
    public struct Response {
        public let status: Int
        public let body: SecretBytes
    }

    /// A failure before any HTTP answer: refused, reset, DNS, TLS, the time limit, no libcurl.
    public struct TransportFailure: Error, Sendable {
        public let message: String
        public let timedOut: Bool
    }

    public enum URLText {
        case plain(String)
        /// A URL that carries a secret (lookupKey's keyString parameter).
        case secret(SecretBytes)
    }

    public enum Body {
        case none
        case plain([UInt8])
        case secret(SecretBytes)
    }

    public static let maxAnswer = 1 << 20

    /// Seconds allowed for connecting and getting the headers, and again for the whole body.
    public var timeout: Double

    public init(timeout: Double) { self.timeout = timeout }

    public func perform(_ method: String, _ url: URLText, headers: [String], bearer: SecretBytes? = nil,
                        body: Body = .none) throws(TransportFailure) -> Response {
        // Checked where the header is built, whatever the token's source checked before.
        if let bearer, !bearer.isHeaderSafe {
            throw TransportFailure(message: "the access token holds a line break or a character outside printable ASCII; nothing was sent", timedOut: false)
        }
        let answer = AnswerBuffer()
        let context = Unmanaged.passRetained(answer)
        defer { context.release() }
        let plainHeaders: [UnsafeMutablePointer<CChar>?] = headers.map { strdup($0) }
        defer { plainHeaders.forEach { free($0) } }
        var status = 0
        var message = [CChar](repeating: 0, count: 512)
        let direct: Bool
        switch url {
        case .plain(let text): direct = EndpointURL(text)?.bypassesProxy ?? false
        case .secret(let secret): direct = secret.withUnsafeBytes { EndpointURL(String(decoding: $0.prefix(while: { $0 != UInt8(ascii: "?") }), as: UTF8.self))?.bypassesProxy ?? false }
        }
        let rc: Int32 = withOptionalSecretHeader(bearer) { bearerHeader in
            var pointers: [UnsafePointer<CChar>?] = plainHeaders.map { UnsafePointer($0) }
            if let bearerHeader { pointers.append(bearerHeader) }
            return pointers.withUnsafeMutableBufferPointer { headerPointers in
                method.withCString { methodPointer in
                    withURL(url) { urlPointer in
                        withBody(body) { bodyPointer, bodyLength in
                            var request = gv_http_request(method: methodPointer, url: urlPointer, headers: headerPointers.baseAddress,
                                                          header_count: headerPointers.count, body: bodyPointer, body_length: bodyLength,
                                                          idle_timeout_ms: Int(timeout * 1000), no_proxy: direct ? 1 : 0)
                            var code = 0
                            let result = gv_http_perform(&request, { _, data, length, context in
                                let answer = Unmanaged<AnswerBuffer>.fromOpaque(context!).takeUnretainedValue()
                                // Bytes never restart the idle clock (a one-byte-at-a-time answer would hold
                                // gemvault forever): as for Gemini's whole answers, the limit runs from the
                                // end of the headers to the end of the body.
                                return answer.append(UnsafeRawBufferPointer(start: data, count: length))
                                    ? Int32(GV_HTTP_DATA_CONTINUE) : Int32(GV_HTTP_DATA_ABORT)
                            }, nil, context.toOpaque(), &code, &message, message.count)
                            status = code
                            return result
                        }
                    }
                }
            }
        }
        switch Int(rc) {
        case Int(GV_HTTP_COMPLETE): return Response(status: status, body: answer.finished())
        case Int(GV_HTTP_ABORTED): throw TransportFailure(message: "the answer was larger than \(Self.maxAnswer >> 10) KiB", timedOut: false)
        case Int(GV_HTTP_IDLE_TIMEOUT): throw TransportFailure(message: "no answer within \(Int(timeout)) s", timedOut: true)
        case Int(GV_HTTP_LIBRARY_MISSING): throw TransportFailure(message: "libcurl.so.4 could not be loaded (install libcurl4)", timedOut: false)
        case Int(GV_HTTP_REFUSED_HEADER): throw TransportFailure(message: "a request header holds a line break or a character outside printable ASCII; nothing was sent", timedOut: false)
        default:
            let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw TransportFailure(message: Redaction.redact(text), timedOut: false)
        }
    }

    private func withOptionalSecretHeader<R>(_ bearer: SecretBytes?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let bearer else { return body(nil) }
        return bearer.withCString(prefix: "Authorization: Bearer ") { body($0) }
    }

    private func withURL<R>(_ url: URLText, _ body: (UnsafePointer<CChar>) -> R) -> R {
        switch url {
        case .plain(let text): return text.withCString(body)
        case .secret(let secret): return secret.withCString { body($0) }
        }
    }

    private func withBody<R>(_ body: Body, _ use: (UnsafePointer<UInt8>?, Int) -> R) -> R {
        switch body {
        case .none: return use(nil, 0)
        case .plain(let bytes): return bytes.withUnsafeBufferPointer { use($0.baseAddress ?? UnsafePointer(bitPattern: 1), $0.count) }
        case .secret(let secret):
            return secret.withUnsafeBytes { raw in use(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count) }
        }
    }
}

/// The answer, grown in secret memory.
private final class AnswerBuffer {
    private var buffer = SecretBytes(count: 4096)
    private var length = 0

    func append(_ data: UnsafeRawBufferPointer) -> Bool {
        guard length + data.count <= GoogleHTTP.maxAnswer else { return false }
        if length + data.count > buffer.count {
            let bigger = SecretBytes(count: min(GoogleHTTP.maxAnswer, max(buffer.count * 2, length + data.count)))
            bigger.withUnsafeMutableBytes { target in
                buffer.withUnsafeBytes { source in
                    if length > 0 { target.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: length) }
                }
            }
            buffer = bigger
        }
        buffer.withUnsafeMutableBytes { target in
            if data.count > 0 { (target.baseAddress! + length).copyMemory(from: data.baseAddress!, byteCount: data.count) }
        }
        length += data.count
        return true
    }

    func finished() -> SecretBytes {
        buffer.truncate(to: length)
        return buffer
    }
}

/// Percent-encoding for form bodies and query parameters, into secret memory when the text is secret.
public enum FormEncoding {
    static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
            || byte == 0x2d || byte == 0x2e || byte == 0x5f || byte == 0x7e
    }

    public static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if isUnreserved(byte) { out.append(Character(Unicode.Scalar(byte))) }
            else { out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2) }
        }
        return out
    }

    /// Parts joined into secret memory; each part is literal text or a secret to encode.
    public enum Part {
        case literal(String)
        case encoded(SecretBytes)
    }

    public static func join(_ parts: [Part]) -> SecretBytes {
        var length = 0
        for part in parts {
            switch part {
            case .literal(let text): length += text.utf8.count
            case .encoded(let secret): length += secret.withUnsafeBytes { $0.reduce(0) { $0 + (isUnreserved($1) ? 1 : 3) } }
            }
        }
        let out = SecretBytes(count: max(length, 1))
        out.withUnsafeMutableBytes { target in
            var offset = 0
            let hex = Array("0123456789ABCDEF".utf8)
            for part in parts {
                switch part {
                case .literal(let text):
                    for byte in text.utf8 { target[offset] = byte; offset += 1 }
                case .encoded(let secret):
                    secret.withUnsafeBytes { source in
                        for byte in source {
                            if isUnreserved(byte) { target[offset] = byte; offset += 1 }
                            else {
                                target[offset] = 0x25; target[offset + 1] = hex[Int(byte >> 4)]; target[offset + 2] = hex[Int(byte & 15)]
                                offset += 3
                            }
                        }
                    }
                }
            }
        }
        out.truncate(to: length)
        return out
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
