import Foundation
import Testing
import VaultCore
@testable import Conversations

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
            for value in example.valid { #expect(try check.firstViolation(in: value) == nil, "\(example.about): \(value)") }
            for pair in example.invalid {
                #expect(try check.firstViolation(in: pair[0]) == pair[1].stringValue, "\(example.about)")
            }
        }
    }

    @Test func aSchemaGemvaultCannotEnforceIsRefused() {
        let refused: [(JSONValue, String)] = [
            (.string("object"), "is not an object"),
            (.object(["type": .string("text")]), "'type' at / must name"),
            (.object(["required": .string("name")]), "'required' at / must be an array of names"),
            (.object(["pattern": .string("([")]), "'pattern' at / is not a regular expression"),
            (.object(["pattern": .string("(a)\\1")]), "'pattern' at / uses a backreference"),
            (.object(["pattern": .string("a(?=b)")]), "'pattern' at / uses lookahead or lookbehind"),
            (.object(["pattern": .string("(a{1000}){1000}")]), "'pattern' at / is too large to check"),
            (.object(["pattern": .string(String(repeating: "(", count: 200_000))]), "'pattern' at / nests groups more than 256 deep"),
            (.object(["pattern": .string(String(repeating: "(", count: 257) + "a" + String(repeating: ")", count: 257))]), "'pattern' at / nests groups more than 256 deep"),
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
        #expect(try check.firstViolation(in: value)?.contains("nests deeper than 64 levels") == true)
    }

    /// A message quotes reply text without its control characters.
    @Test func aViolationCarriesNoControlCharacters() throws {
        let check = try JSONSchemaCheck(.object(["enum": .array([.string("a")])]))
        let shown = try #require(try check.firstViolation(in: .string("x\u{1b}[2Jy")))
        #expect(!shown.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }

    // MARK: Bounded checks

    /// `^(a+)+$` backtracks through 2^n ways to split the a's; run as an NFA it is linear.
    @Test func aCatastrophicPatternIsCheckedInLinearSteps() throws {
        let check = try JSONSchemaCheck(.object(["type": .string("string"), "pattern": .string("^(a+)+$")]))
        let text = String(repeating: "a", count: 60) + "!"
        let violation = try check.firstViolation(in: .string(text), steps: 2_000)
        #expect(violation?.contains("does not match the pattern ^(a+)+$") == true)
        #expect(try check.firstViolation(in: .string(String(repeating: "a", count: 60)), steps: 2_000) == nil)
    }

    /// Patterns match as ECMA-262 does: unanchored, on Unicode scalars, `.` stops at a newline.
    /// Review finding 4: repeating the empty text added no instructions, so the size limit never
    /// stopped `((){20000}){20000}` (20 s) or three levels of it (endless). It is the empty text.
    @Test func repeatingTheEmptyTextCompilesToNothing() throws {
        let budget = CheckBudget(steps: 100_000, seconds: 60)
        let endless = try SchemaPattern("^((((){20000}){20000}){20000})x$")
        #expect(endless.steps.count == 4)
        #expect(try endless.matches("x", budget: budget) && !endless.matches("xx", budget: budget))
        for pattern in ["a((|){20000}){20000}b", "a(x{0}){20000}b", "a(((((b){1}){1}){1}){1})", "a()b", "a(?:)*b"] {
            let compiled = try SchemaPattern(pattern)
            #expect(try compiled.matches("zabz", budget: budget) && !compiled.matches("za-bz", budget: budget), "\(pattern)")
        }
        let deepest = String(repeating: "(", count: 256) + "a" + String(repeating: ")", count: 256)
        #expect(try SchemaPattern(deepest + "{3}").matches("aaa", budget: budget))
    }

    /// Every node the compiler visits is charged, so a pattern whose copies add few instructions
    /// still stops at the compile budget.
    @Test func compilingIsChargedNodeByNode() throws {
        #expect(throws: SchemaPattern.Refusal.self) { try SchemaPattern("((ab|cd){2}){2}", compileLimit: 10) }
        #expect(throws: Never.self) { try SchemaPattern("((ab|cd){2}){2}", compileLimit: 40) }
        #expect(throws: Never.self) { try SchemaPattern("[a-z]{19990}") }
    }

    @Test func patternsMatchAsECMAScriptDoes() throws {
        let cases: [(String, String, Bool)] = [
            ("^[a-z]+-[0-9]+$", "run-12", true), ("^[a-z]+-[0-9]+$", "Run-12", false), ("b+", "abbc", true),
            ("^$", "", true), ("^a|b$", "xb", true), ("^(?:ab)*c$", "ababc", true), ("^(?:ab)*c$", "abac", false),
            ("^a{2,3}$", "aaaa", false), ("^a{2,3}$", "aa", true), ("^a{2,}$", "aaaaa", true), ("^a{2}$", "aaa", false),
            ("x{", "x{", true), ("^a.c$", "a\nc", false), ("^a.c$", "a東c", true), ("^\\d\\s\\w$", "1 _", true),
            ("^[^\\d]+$", "abc", true), ("^[^\\d]+$", "a1c", false), ("^[\\D]$", "x", true), ("\\bcat\\b", "a cat!", true),
            ("\\bcat\\b", "concat", false), ("^\\u00e9$", "é", true), ("^\\x41\\.$", "A.", true), ("^[a\\-z]+$", "-az", true),
            ("^(?<year>\\d{4})-\\d{2}$", "2025-12", true), ("^\\uD83D\\uDE00$", "😀", true), ("^.$", "😀", true),
        ]
        for (pattern, text, expected) in cases {
            let compiled = try SchemaPattern(pattern)
            #expect(try compiled.matches(text, budget: CheckBudget(steps: 100_000, seconds: 60)) == expected, "\(pattern) on \(text)")
        }
    }

    /// A node whose three oneOf branches each recurse into the child before they differ:
    /// 3^20 paths on a reply 20 deep, checked once per place instead.
    @Test func aRecursiveOneOfOnADeepReplyIsCheckedOncePerPlace() throws {
        func branch(_ kind: String) -> JSONValue {
            .object(["type": .string("object"), "properties": .object([
                "child": .object(["$ref": .string("#/$defs/node")]), "kind": .object(["const": .string(kind)]),
            ])])
        }
        let schema: JSONValue = .object(["$defs": .object(["node": .object(["oneOf": .array([branch("a"), branch("b"), branch("c")])])]),
                                         "$ref": .string("#/$defs/node")])
        func reply(deepest: String) -> JSONValue {
            var value = JSONValue.object(["kind": .string(deepest)])
            for level in 0..<20 { value = .object(["child": value, "kind": .string(["a", "b", "c"][level % 3])]) }
            return value
        }
        let check = try JSONSchemaCheck(schema)
        #expect(try check.firstViolation(in: reply(deepest: "a"), steps: 5_000) == nil)
        #expect(try check.firstViolation(in: reply(deepest: "z"), steps: 5_000) == "/: matches 0 of the schemas of oneOf, not exactly one")
    }

    /// A `$ref` that comes back to the same value without going into it would never end.
    @Test func aReferenceBackToItselfOnTheSameValueIsRefused() throws {
        let endless: [JSONValue] = [
            .object(["anyOf": .array([.object(["$ref": .string("#")]), .object(["type": .string("string")])])]),
            .object(["$defs": .object(["a": .object(["allOf": .array([.object(["$ref": .string("#/$defs/b")])])]),
                                       "b": .object(["not": .object(["$ref": .string("#/$defs/a")])])]),
                     "properties": .object(["x": .object(["$ref": .string("#/$defs/a")])])]),
        ]
        for schema in endless {
            #expect(throws: JSONSchemaCheck.SchemaError.self) { try JSONSchemaCheck(schema) }
            do { _ = try JSONSchemaCheck(schema) } catch { #expect(error.message.contains("leads back to itself without going into the value")) }
        }
        // Through a property it goes into the value each time, and ends with the reply.
        let tree: JSONValue = .object(["type": .string("object"), "properties": .object([
            "next": .object(["anyOf": .array([.object(["$ref": .string("#")]), .object(["type": .string("null")])])]),
        ])])
        let check = try JSONSchemaCheck(tree)
        var value = JSONValue.null
        for _ in 0..<15 { value = .object(["next": value]) }
        #expect(try check.firstViolation(in: value, steps: 5_000) == nil)
    }

    /// Whatever is left costly stops at the step budget, neither matched nor refuted.
    @Test func aCheckOverItsBudgetStopsWithTooCostly() throws {
        let branches = JSONValue.array((0..<30).map { _ in .object(["type": .string("string")]) } + [.object(["type": .string("number")])])
        let check = try JSONSchemaCheck(.object(["items": .object(["anyOf": branches])]))
        let reply = JSONValue.array(Array(repeating: .number(1), count: 1_000))
        #expect(throws: JSONSchemaCheck.TooCostly(steps: 10_000, seconds: 60)) { try check.firstViolation(in: reply, steps: 10_000, seconds: 60) }
        let long = try JSONSchemaCheck(.object(["pattern": .string("[a-z]{0,60}x")]))
        #expect(throws: JSONSchemaCheck.TooCostly.self) { try long.firstViolation(in: .string(String(repeating: "a", count: 10_000)), steps: 100_000) }
    }
}
