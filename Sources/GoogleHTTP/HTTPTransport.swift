import CCurlStream
import Glibc
import SystemIO
import VaultCore

/// One HTTP request. Secrets (a key or token header, a URL with a key in it, a form body
/// with a refresh token) stay in secret memory up to libcurl, whose copies the C layer wipes.
public struct HTTPRequest {
    public enum Target {
        case plain(String)
        /// A URL that carries a secret (lookupKey's keyString parameter).
        case secret(SecretBytes)
    }

    public enum Body {
        case none
        case plain([UInt8])
        case secret(SecretBytes)
    }

    /// A header whose value is secret: `prefix` is its name with `": "` (`"x-goog-api-key: "`).
    public struct SecretHeader {
        public let prefix: String
        public let value: SecretBytes

        public init(prefix: String, value: SecretBytes) {
            self.prefix = prefix
            self.value = value
        }
    }

    public var method: String
    public var target: Target
    public var headers: [String]
    public var secretHeader: SecretHeader?
    public var body: Body
    /// Seconds allowed for connecting and getting the headers, then between signs of progress.
    public var idleTimeout: Double
    /// A response header whose value `performCapturing` hands back (`x-gemini-service-tier`).
    public var capturedHeader: String?

    public init(method: String, target: Target, headers: [String] = [], secretHeader: SecretHeader? = nil, body: Body = .none, idleTimeout: Double) {
        self.method = method
        self.target = target
        self.headers = headers
        self.secretHeader = secretHeader
        self.body = body
        self.idleTimeout = idleTimeout
    }

    /// The URL up to its query, which never holds a secret.
    public var address: String {
        switch target {
        case .plain(let text): String(text.prefix { $0 != "?" })
        case .secret(let secret): secret.withUnsafeBytes { String(decoding: $0.prefix(while: { $0 != UInt8(ascii: "?") }), as: UTF8.self) }
        }
    }

    /// Plain http to loopback never goes through a proxy: the proxy would see the secrets in clear.
    public var bypassesProxy: Bool { EndpointURL(address)?.bypassesProxy ?? false }
}

/// How an exchange ended.
public enum HTTPOutcome: Equatable, Sendable {
    /// The answer came whole; `retryAfter` is its Retry-After header in seconds, if any, and
    /// `date` its Date header in Unix seconds (the server's clock), if it had a readable one.
    case complete(status: Int, retryAfter: Double?, date: Int64? = nil)
    /// The body's reader stopped the transfer.
    case aborted(status: Int, retryAfter: Double?)
    case idleTimeout(status: Int)
    /// `onTick` asked to stop.
    case cancelled
    /// Reset, DNS, TLS …: no HTTP answer.
    case transportError(String)
    /// Nothing listens at the address: every address of the host refused the connection.
    case connectionRefused(String)
    case libraryMissing
    /// A header holds bytes a header cannot carry (a line break in a key); nothing was sent.
    case refusedHeader
}

/// What the body's reader says of each piece: go on, stop, or go on with the idle clock
/// restarted because something whole (an event) arrived.
public enum HTTPDataVerdict: Sendable {
    case more, abort, progress
}

/// One HTTP exchange with the body streamed to `onData` as it arrives, with the status.
/// `onTick` (about every 100 ms while waiting) returns true to cancel. Unit tests replace it.
public protocol HTTPTransport: Sendable {
    func perform(_ request: HTTPRequest, onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) -> HTTPOutcome
    /// The same, with the value of the response header `request.capturedHeader` names (nil
    /// when absent, or when the transport does not read headers).
    func performCapturing(_ request: HTTPRequest, onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) -> (HTTPOutcome, String?)
}

extension HTTPTransport {
    public func performCapturing(_ request: HTTPRequest, onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) -> (HTTPOutcome, String?) {
        (perform(request, onData: onData, onTick: onTick), nil)
    }
}

/// The transport over libcurl, which CCurlStream loads with dlopen on first use.
public struct CurlTransport: HTTPTransport {
    public init() {}

    /// State the C callbacks reach through their context pointer.
    private final class Callbacks {
        let onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict
        let onTick: (() -> Bool)?
        init(onData: @escaping (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) {
            self.onData = onData
            self.onTick = onTick
        }
    }

    public func perform(_ request: HTTPRequest, onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) -> HTTPOutcome {
        performCapturing(request, onData: onData, onTick: onTick).0
    }

    public func performCapturing(_ request: HTTPRequest, onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) -> (HTTPOutcome, String?) {
        // Checked where the header is built, whatever the secret's source checked before.
        if let secret = request.secretHeader, !secret.value.isHeaderSafe { return (.refusedHeader, nil) }
        return withoutActuallyEscaping(onData) { onData in
            let callbacks = Callbacks(onData: onData, onTick: onTick)
            var captured = [CChar](repeating: 0, count: request.capturedHeader == nil ? 0 : 64)
            let outcome = captured.withUnsafeMutableBufferPointer { buffer in
                (request.capturedHeader ?? "").withCString { name in
                    perform(request, callbacks: callbacks, ticking: onTick != nil,
                            capture: request.capturedHeader == nil ? nil : (name, buffer.baseAddress, buffer.count))
                }
            }
            let value = captured.first.map { _ in captured.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
            return (outcome, value?.isEmpty == false ? value : nil)
        }
    }

    private func perform(_ request: HTTPRequest, callbacks: Callbacks, ticking: Bool,
                         capture: (name: UnsafePointer<CChar>, into: UnsafeMutablePointer<CChar>?, capacity: Int)?) -> HTTPOutcome {
        let context = Unmanaged.passRetained(callbacks)
        defer { context.release() }
        let plainHeaders: [UnsafeMutablePointer<CChar>?] = request.headers.map { strdup($0) }
        defer { plainHeaders.forEach { free($0) } }
        var status = 0
        var retryAfter = -1
        var date = [CChar](repeating: 0, count: 64)
        var message = [CChar](repeating: 0, count: 512)
        let direct = request.bypassesProxy
        let rc: Int32 = withSecretHeader(request.secretHeader) { secretHeader in
            var pointers: [UnsafePointer<CChar>?] = plainHeaders.map { UnsafePointer($0) }
            if let secretHeader { pointers.append(secretHeader) }
            return pointers.withUnsafeMutableBufferPointer { headerPointers in
                request.method.withCString { methodPointer in
                    withTarget(request.target) { urlPointer in
                        withBody(request.body) { bodyPointer, bodyLength in
                            var cRequest = gv_http_request(method: methodPointer, url: urlPointer, headers: headerPointers.baseAddress,
                                                           header_count: headerPointers.count, body: bodyPointer, body_length: bodyLength,
                                                           idle_timeout_ms: Int(request.idleTimeout * 1000), no_proxy: direct ? 1 : 0,
                                                           capture_header: capture?.name, captured: capture?.into, captured_capacity: capture?.capacity ?? 0)
                            return gv_http_perform(&cRequest, { status, data, length, context in
                                let callbacks = Unmanaged<Callbacks>.fromOpaque(context!).takeUnretainedValue()
                                switch callbacks.onData(status, UnsafeRawBufferPointer(start: data, count: length)) {
                                case .more: return Int32(GV_HTTP_DATA_CONTINUE)
                                case .abort: return Int32(GV_HTTP_DATA_ABORT)
                                case .progress: return Int32(GV_HTTP_DATA_PROGRESS)
                                }
                            }, ticking ? { context in
                                let callbacks = Unmanaged<Callbacks>.fromOpaque(context!).takeUnretainedValue()
                                return callbacks.onTick?() == true ? 1 : 0
                            } : nil, context.toOpaque(), &status, &retryAfter, &date, date.count, &message, message.count)
                        }
                    }
                }
            }
        }
        let text = { message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
        let delay = retryAfter >= 0 ? Double(retryAfter) : nil
        switch Int(rc) {
        case Int(GV_HTTP_COMPLETE):
            return .complete(status: status, retryAfter: delay, date: HTTPDate.seconds(date.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
        case Int(GV_HTTP_ABORTED): return .aborted(status: status, retryAfter: delay)
        case Int(GV_HTTP_IDLE_TIMEOUT): return .idleTimeout(status: status)
        case Int(GV_HTTP_CANCELLED): return .cancelled
        case Int(GV_HTTP_LIBRARY_MISSING): return .libraryMissing
        case Int(GV_HTTP_REFUSED_HEADER): return .refusedHeader
        case Int(GV_HTTP_CONNECTION_REFUSED): return .connectionRefused(text())
        default: return .transportError(text())
        }
    }

    private func withSecretHeader<R>(_ header: HTTPRequest.SecretHeader?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let header else { return body(nil) }
        return header.value.withCString(prefix: header.prefix) { body($0) }
    }

    private func withTarget<R>(_ target: HTTPRequest.Target, _ body: (UnsafePointer<CChar>) -> R) -> R {
        switch target {
        case .plain(let text): return text.withCString(body)
        case .secret(let secret): return secret.withCString { body($0) }
        }
    }

    private func withBody<R>(_ body: HTTPRequest.Body, _ use: (UnsafePointer<UInt8>?, Int) -> R) -> R {
        switch body {
        case .none: return use(nil, 0)
        case .plain(let bytes): return bytes.withUnsafeBufferPointer { use($0.baseAddress ?? UnsafePointer(bitPattern: 1), $0.count) }
        case .secret(let secret):
            return secret.withUnsafeBytes { raw in use(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count) }
        }
    }

    /// Begins loading libcurl in the background; the first request waits for it.
    public static func preload() { gv_http_preload() }

    /// Waits for a background load in progress, so that the process never exits in the middle of it.
    public static func settlePreload() { gv_http_preload_settle() }

    /// Whether libcurl has been mapped into this process (vault commands must leave it unmapped).
    public static var libraryLoaded: Bool { gv_http_library_loaded() == 1 }
}
