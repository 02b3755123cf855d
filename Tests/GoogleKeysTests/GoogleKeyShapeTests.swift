import Foundation
import Testing
@testable import GoogleKeys

private func examples() throws -> [(kind: GoogleKeyKind, value: String)] {
    let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/key-shapes.tsv")
    return try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { line in
        guard !line.hasPrefix("#") else { return nil }
        let fields = line.split(separator: "\t", maxSplits: 1)
        guard fields.count == 2, let kind = GoogleKeyKind(rawValue: String(fields[0])) else { return nil }
        return (kind, String(fields[1]))
    }
}

@Suite struct GoogleKeyShapeTests {
    @Test func everyExampleHasItsKind() throws {
        let all = try examples()
        #expect(all.filter { $0.kind == .auth }.count >= 3 && all.filter { $0.kind == .standard }.count >= 2 && all.filter { $0.kind == .other }.count >= 10)
        for example in all {
            #expect(GoogleKeyShape.kind(of: Array(example.value.utf8)) == example.kind, "\(example.value)")
        }
    }

    @Test func theObservedAuthKeyLengthIsInsideTheBounds() {
        #expect(GoogleKeyShape.authLength.contains(53) && GoogleKeyShape.authLength.lowerBound == 40)
    }

    @Test func keysAreFoundInsideTextAtWordStarts() throws {
        for example in try examples() where example.kind != .other {
            for text in ["key=\(example.value);", "\"\(example.value)\"", "my key \(example.value). works?", "x-goog-api-key: \(example.value)\n"] {
                let bytes = Array(text.utf8)
                let found = GoogleKeyShape.keys(in: bytes)
                #expect(found.count == 1 && found.first?.kind == example.kind, "\(text)")
                if let range = found.first?.range { #expect(String(decoding: bytes[range], as: UTF8.self) == example.value) }
            }
            // Glued to a word, it is part of something else.
            #expect(GoogleKeyShape.keys(in: Array("x\(example.value)".utf8)).isEmpty)
        }
    }

    @Test func nearMissesAreNotFoundInText() throws {
        for example in try examples() where example.kind == .other {
            let found = GoogleKeyShape.keys(in: Array("value: \(example.value) end".utf8))
            // A near miss with a trailing dot still holds a whole key before the dot: that one is fine.
            #expect(found.allSatisfy { GoogleKeyShape.kind(of: Array("value: \(example.value) end".utf8)[$0.range]) != .other })
            if !example.value.hasSuffix(".") { #expect(found.isEmpty, "\(example.value)") }
        }
    }

    @Test func redactionCutsKeysTokensAndTheirPiecesButNotMaskedValues() {
        let text = "bad key AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp, old AIzaSyD3mo-Key_0123456 and ya29.a0AfB_byC1234567890 but AQ.A…WvKp and AIza…klmn stay"
        let redacted = String(decoding: GoogleKeyShape.redacting(Array(text.utf8), minimumBody: 8, replacement: Array("[redacted]".utf8)) ?? [], as: UTF8.self)
        #expect(redacted == "bad key [redacted], old [redacted] and [redacted] but AQ.A…WvKp and AIza…klmn stay")
        #expect(GoogleKeyShape.redacting(Array("nothing here".utf8), minimumBody: 0, replacement: []) == nil)
    }

    @Test func accessTokensAreFound() {
        let text = Array("Authorization: Bearer ya29.a0AfB_byC1234567890abcdefghij.more-token end. ya29.short".utf8)
        let found = GoogleKeyShape.accessTokens(in: text)
        #expect(found.count == 1)
        #expect(found.first.map { String(decoding: text[$0], as: UTF8.self) } == "ya29.a0AfB_byC1234567890abcdefghij.more-token")
    }

    @Test func onlyStandardKeysAreRetired() {
        #expect(GoogleKeyKind.standard.isRetired && !GoogleKeyKind.auth.isRetired && !GoogleKeyKind.other.isRetired)
    }
}
