import Foundation
import Testing
import VaultCore

/// The text of a secret, for comparing in tests only.
public func plainText(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

/// Expects `secret` to hold exactly `expected`, reported at the caller's line.
public func expectSecret(_ secret: SecretBytes?, equals expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(secret.map(plainText) == expected, sourceLocation: sourceLocation)
}

/// Expects `work` to throw an error of type `E` for which `matches` holds, and returns it;
/// reported at the caller's line.
@discardableResult
public func expectError<E: Error, T>(_ type: E.Type, sourceLocation: SourceLocation = #_sourceLocation, _ work: () throws -> T,
                                     where matches: (E) -> Bool = { _ in true }) -> E? {
    do {
        _ = try work()
        Issue.record("expected \(E.self), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as E {
        #expect(matches(error), "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(E.self), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The fixture files of the test target whose source calls this: `Fixtures/` beside it.
public struct Fixtures {
    public let folder: URL

    public init(beside file: StaticString = #filePath) {
        folder = URL(fileURLWithPath: "\(file)").deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    public func text(_ name: String) throws -> String {
        try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
    }

    public func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: folder.appendingPathComponent(name)))
    }
}
