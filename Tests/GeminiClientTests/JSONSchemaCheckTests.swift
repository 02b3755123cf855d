import Foundation
import Testing
import VaultCore
@testable import GeminiClient

/// `ask --schema`: the reply checked locally, with the first violation named by its place.
@Suite struct JSONSchemaCheckTests {
    struct Case: Decodable {
        let about: String
        let schema: JSONValue
        let valid: [JSONValue]
        let invalid: [[JSONValue]]
    }

    static func cases() throws -> [Case] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/json-schema-cases.json")
        return try JSONDecoder().decode([Case].self, from: Data(contentsOf: url))
    }

    @Test func eachCaseGivesItsOutcome() throws {
        for example in try Self.cases() {
            let check = try JSONSchemaCheck(example.schema)
            for value in example.valid { #expect(check.firstViolation(in: value) == nil, "\(example.about): \(value)") }
            for pair in example.invalid {
                #expect(check.firstViolation(in: pair[0]) == pair[1].stringValue, "\(example.about)")
            }
        }
    }

    @Test func aSchemaGemvaultCannotEnforceIsRefused() {
        let refused: [(JSONValue, String)] = [
            (.string("object"), "is not an object"),
            (.object(["type": .string("text")]), "'type' at / must name"),
            (.object(["required": .string("name")]), "'required' at / must be an array of names"),
            (.object(["pattern": .string("([")]), "'pattern' at / must be a regular expression"),
            (.object(["$ref": .string("#/$defs/missing")]), "'$ref' at / must point into"),
            (.object(["minItems": .number(-1)]), "'minItems' at / must be a whole number"),
        ]
        for (schema, words) in refused {
            do {
                _ = try JSONSchemaCheck(schema)
                Issue.record("\(schema) was taken")
            } catch {
                #expect(error.message.contains(words), "\(error.message)")
            }
        }
    }

    /// A reply nested deeper than any schema needs is refused, not followed to a stack overflow.
    @Test func deepNestingIsRefusedNotFollowed() throws {
        var value = JSONValue.null
        for _ in 0..<1_000 { value = .array([value]) }
        let check = try JSONSchemaCheck(.object(["items": .object(["$ref": .string("#")])]))
        #expect(check.firstViolation(in: value)?.contains("nests deeper than 64 levels") == true)
    }

    /// A message quotes reply text without its control characters.
    @Test func aViolationCarriesNoControlCharacters() throws {
        let check = try JSONSchemaCheck(.object(["enum": .array([.string("a")])]))
        let shown = try #require(check.firstViolation(in: .string("x\u{1b}[2Jy")))
        #expect(!shown.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }
}
