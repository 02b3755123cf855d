import Foundation

/// A fixture file of this target, as bytes.
func fixture(_ name: String) throws -> [UInt8] {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    return Array(try Data(contentsOf: folder.appendingPathComponent(name)))
}
