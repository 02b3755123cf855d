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
        let lowered = text.lowercased()
        let scheme: String
        if lowered.hasPrefix("https://") { scheme = "https" } else if lowered.hasPrefix("http://") { scheme = "http" } else { return nil }
        let rest = text.dropFirst(scheme.count + 3)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"), !rest.contains("?"), !rest.contains("#"),
              !text.contains(where: { $0 == " " || $0.asciiValue.map { $0 < 0x20 } == true }) else { return nil }
        var host = String(authority)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            guard Int(host[host.index(after: colon)...]) != nil else { return nil }
            host = String(host[..<colon])
        }
        guard !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host.lowercased()
        var trimmed = text
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.normalized = trimmed
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
