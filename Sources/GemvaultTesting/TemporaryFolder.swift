import Foundation
import Glibc

/// A private folder (mode 0700, made by mkdtemp) for one test, removed with everything in it
/// when the value goes away.
public final class TemporaryFolder: @unchecked Sendable {
    public let path: String

    /// `label` names the folder in /tmp, so a leftover says which test made it.
    public init(_ label: String = "test") {
        let base = NSTemporaryDirectory().hasSuffix("/") ? String(NSTemporaryDirectory().dropLast()) : NSTemporaryDirectory()
        var template = Array((base + "/gemvault-\(label)-XXXXXX").utf8CString)
        path = template.withUnsafeMutableBufferPointer { buffer in
            guard let made = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp failed: errno \(errno)") }
            return String(cString: made)
        }
    }

    /// `name` inside the folder.
    public func appending(_ name: String) -> String { path + "/" + name }

    /// A new empty folder inside this one (mkdtemp, 0700), for a test that wants several.
    public func newFolder() -> String {
        var template = Array((path + "/folder-XXXXXX").utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            guard let made = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp failed: errno \(errno)") }
            return String(cString: made)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
