import Glibc

/// A system call that failed, with the file it was about.
public struct SystemError: Error, Equatable, Sendable {
    public let operation: String
    public let path: String
    public let code: Int32

    public init(_ operation: String, path: String = "", code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// The longest path the kernel takes in one piece (PATH_MAX less the NUL).
    public static let longestPath = Int(PATH_MAX) - 1

    /// ENAMETOOLONG, for a path refused before any call.
    public static func nameTooLong(_ operation: String, path: String) -> SystemError {
        SystemError(operation, path: path, code: ENAMETOOLONG)
    }

    public var isNameTooLong: Bool { code == ENAMETOOLONG }

    /// strerror's text for the code.
    public var reason: String { Self.describe(code) }

    /// The file system cannot make hard links here.
    public var isLinkUnsupported: Bool { [EPERM, EXDEV, EMLINK, ENOTSUP].contains(code) }

    public static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// Retries a system call interrupted by a signal. The result is returned as is; errno holds the failure.
@inline(__always)
func retryingOnInterrupt<T: BinaryInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result >= 0 || errno != EINTR { return result }
    }
}
