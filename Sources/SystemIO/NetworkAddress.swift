import Glibc

public enum NetworkAddress {
    /// Whether `host` is an IPv4 literal in 127.0.0.0/8 or the IPv6 literal ::1 (in any spelling).
    /// Names are never resolved here: `127.evil.example` is a name, not loopback.
    public static func isLoopbackLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1 }
        }
        return false
    }
}

/// A parsed base URL.
public struct EndpointURL: Sendable, Equatable {
    public let scheme: String
    public let host: String
    public let normalized: String

    public init?(_ text: String) {
        guard let parts = Self.parts(Array(text.utf8)) else { return nil }
        scheme = parts.0
        host = parts.1
        normalized = parts.2
    }

    /// Read byte by byte (every setting's endpoint is parsed on each resolve; walking Characters
    /// cost 70,000 instructions a URL): right for any text, since no byte of a multi-byte UTF-8
    /// character is ASCII, so every delimiter looked for is one.
    private static func parts(_ bytes: [UInt8]) -> (String, String, String)? {
        func lower(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }
        let lowered = bytes.prefix(8).map(lower)
        let scheme: String
        if lowered.starts(with: Array("https://".utf8)) { scheme = "https" } else if lowered.starts(with: Array("http://".utf8)) { scheme = "http" } else { return nil }
        let rest = bytes.dropFirst(scheme.utf8.count + 3)
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")), !rest.contains(UInt8(ascii: "?")), !rest.contains(UInt8(ascii: "#")),
              !bytes.contains(where: { $0 <= 0x20 }) else { return nil }
        var host = authority
        if host.first == UInt8(ascii: "[") {
            guard let close = host.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: UInt8(ascii: ":")) {
            guard Int(String(decoding: host[host.index(after: colon)...], as: UTF8.self)) != nil else { return nil }
            host = host[..<colon]
        }
        guard !host.isEmpty else { return nil }
        var trimmed = bytes[...]
        while trimmed.last == UInt8(ascii: "/") { trimmed = trimmed.dropLast() }
        // Lowered byte by byte when ASCII (nearly always); a non-ASCII name by Unicode's rules.
        let lowerHost = host.allSatisfy { $0 < 0x80 } ? String(decoding: host.map(lower), as: UTF8.self) : String(decoding: host, as: UTF8.self).lowercased()
        return (scheme, lowerHost, String(decoding: trimmed, as: UTF8.self))
    }

    /// Loopback, where plain http cannot be sniffed by another machine: an IP literal in
    /// 127.0.0.0/8, ::1, or the name localhost, which libcurl resolves to loopback itself.
    public var isLoopback: Bool {
        host == "localhost" || NetworkAddress.isLoopbackLiteral(host)
    }

    public var isSecure: Bool { scheme == "https" || isLoopback }

    /// Google's own hosts for its APIs and token endpoints, over https.
    public var isGoogle: Bool { scheme == "https" && (host.hasSuffix(".googleapis.com") || host == "accounts.google.com") }

    /// Neither Google's nor loopback: whoever runs the host receives what is sent.
    public var isCustom: Bool { !isGoogle && !isLoopback }

    /// Plain http to loopback never goes through a proxy: the proxy would see the key in clear.
    public var bypassesProxy: Bool { scheme == "http" && isLoopback }
}
