import CCurlStream
import Glibc
import VaultCore

/// One HTTP exchange over libcurl, with the body streamed to a closure as it arrives.
struct HTTPTransport {
    enum Outcome: Equatable {
        case complete(status: Int)
        case aborted(status: Int)
        case idleTimeout(status: Int)
        case cancelled
        case transportError(String)
        /// Nothing listens at the address: every address of the host refused the connection.
        case connectionRefused(String)
        case libraryMissing
        /// The key (or another header) holds bytes a header cannot carry; nothing was sent.
        case refusedHeader
    }

    /// What the body's reader says of each piece: go on, stop, or go on with the idle clock
    /// restarted because something whole (an event) arrived.
    enum DataVerdict {
        case more, abort, progress

        var code: Int32 {
            switch self {
            case .more: return Int32(GV_HTTP_DATA_CONTINUE)
            case .abort: return Int32(GV_HTTP_DATA_ABORT)
            case .progress: return Int32(GV_HTTP_DATA_PROGRESS)
            }
        }
    }

    /// State the C callbacks reach through their context pointer.
    private final class Callbacks {
        let onData: (Int, UnsafeRawBufferPointer) -> DataVerdict
        let onTick: () -> Bool
        init(onData: @escaping (Int, UnsafeRawBufferPointer) -> DataVerdict, onTick: @escaping () -> Bool) {
            self.onData = onData
            self.onTick = onTick
        }
    }

    /// Sends the request. `onData` judges each piece of the body; `onTick` returns true to cancel.
    /// The idle limit runs until the headers end, then between `.progress` verdicts.
    /// The API key is copied into the header list only inside secret memory, and libcurl's
    /// copy is wiped by the C layer after the transfer.
    static func perform(method: String, url: String, apiKey: SecretBytes, body: [UInt8]?, idleTimeout: Double, direct: Bool,
                        onData: @escaping (Int, UnsafeRawBufferPointer) -> DataVerdict, onTick: @escaping () -> Bool) -> Outcome {
        // Checked where the header is built, whatever the key's source checked before.
        guard apiKey.isHeaderSafe else { return .refusedHeader }
        let callbacks = Callbacks(onData: onData, onTick: onTick)
        let context = Unmanaged.passRetained(callbacks)
        defer { context.release() }
        let plainHeaders: [UnsafeMutablePointer<CChar>?] = ["Content-Type: application/json", "Accept: */*"].map { (text: String) in strdup(text) }
        defer { plainHeaders.forEach { free($0) } }
        var status = 0
        var message = [CChar](repeating: 0, count: 512)
        let result: Int32 = apiKey.withCString(prefix: "x-goog-api-key: ") { keyHeader in
            var headers: [UnsafePointer<CChar>?] = plainHeaders.map { UnsafePointer($0) } + [keyHeader]
            return headers.withUnsafeMutableBufferPointer { headerPointers in
                method.withCString { methodPointer in
                    url.withCString { urlPointer in
                        let bodyCopy = body ?? []
                        return bodyCopy.withUnsafeBufferPointer { bodyPointer in
                            var request = gv_http_request(
                                method: methodPointer, url: urlPointer,
                                headers: headerPointers.baseAddress, header_count: headerPointers.count,
                                body: body == nil ? nil : bodyPointer.baseAddress,
                                body_length: bodyCopy.count, idle_timeout_ms: Int(idleTimeout * 1000), no_proxy: direct ? 1 : 0)
                            var statusCode = 0
                            let rc = gv_http_perform(&request, { status, data, length, context in
                                let callbacks = Unmanaged<Callbacks>.fromOpaque(context!).takeUnretainedValue()
                                return callbacks.onData(status, UnsafeRawBufferPointer(start: data, count: length)).code
                            }, { context in
                                let callbacks = Unmanaged<Callbacks>.fromOpaque(context!).takeUnretainedValue()
                                return callbacks.onTick() ? 1 : 0
                            }, context.toOpaque(), &statusCode, &message, message.count)
                            status = statusCode
                            return rc
                        }
                    }
                }
            }
        }
        switch Int(result) {
        case Int(GV_HTTP_COMPLETE): return .complete(status: status)
        case Int(GV_HTTP_ABORTED): return .aborted(status: status)
        case Int(GV_HTTP_IDLE_TIMEOUT): return .idleTimeout(status: status)
        case Int(GV_HTTP_CANCELLED): return .cancelled
        case Int(GV_HTTP_LIBRARY_MISSING): return .libraryMissing
        case Int(GV_HTTP_REFUSED_HEADER): return .refusedHeader
        case Int(GV_HTTP_CONNECTION_REFUSED):
            return .connectionRefused(message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        default:
            return .transportError(message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
    }

    /// Begins loading libcurl in the background; the first request waits for it.
    static func preload() { gv_http_preload() }

    /// Waits for a background load in progress, so that the process never exits in the middle of it.
    static func settlePreload() { gv_http_preload_settle() }

    /// Whether libcurl has been mapped into this process (vault commands must leave it unmapped).
    static var libraryLoaded: Bool { gv_http_library_loaded() == 1 }
}
