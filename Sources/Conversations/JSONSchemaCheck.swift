import VaultCore

/// A JSON Schema (`ask --schema FILE`) checked locally against a structured reply: Gemini's
/// `responseJsonSchema` constrains the model, but a script should trust only what it checks.
/// The keywords Gemini's structured output supports are enforced (type, enum, const,
/// properties, required, additionalProperties, items, prefixItems, minItems, maxItems,
/// minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, anyOf,
/// oneOf, allOf, $ref into $defs); the others (title, description, format, …) only describe.
/// A check is bounded: patterns run without backtracking, each schema is checked once per
/// place in the reply, and the whole check has a step budget and a deadline.
public struct JSONSchemaCheck: Sendable {
    public struct SchemaError: Error, Equatable {
        public let message: String
    }

    /// The check ran out of its budget before it could say whether the reply matches.
    public struct TooCostly: Error, Equatable {
        public let steps: Int
        public let seconds: Double
    }

    let root: JSONValue
    private let patterns: [String: SchemaPattern]
    /// Nesting deeper than this in the schema or the reply is refused, not followed.
    static let depthLimit = 64
    /// What a check may spend: far above what a reply Gemini can send needs with a sane schema.
    public static let stepLimit = 5_000_000
    public static let secondsLimit = 10.0

    /// The schema, refused when it is not a schema gemvault can enforce.
    public init(_ schema: JSONValue) throws(SchemaError) {
        root = schema
        var patterns: [String: SchemaPattern] = [:], places: [String] = []
        try Self.checkSchema(schema, at: "", root: schema, depth: 0, patterns: &patterns, places: &places)
        self.patterns = patterns
        var states: [String: Bool] = [:]
        for place in places { try Self.refuseEndlessReference(at: place, in: schema, states: &states) }
    }

    /// The first place `value` breaks the schema, as `/path: what`; nil when it matches.
    /// Throws when the check would spend more than `steps` steps or `seconds` seconds.
    public func firstViolation(in value: JSONValue, steps: Int = stepLimit, seconds: Double = secondsLimit) throws(TooCostly) -> String? {
        let run = Run(budget: CheckBudget(steps: steps, seconds: seconds))
        do {
            return try violation(value, root, at: "", schemaAt: "", depth: 0, run: run)
        } catch {
            throw TooCostly(steps: error.steps, seconds: error.seconds)
        }
    }

    /// One check's budget and what it already knows: (schema place, reply place) to outcome.
    private final class Run {
        let budget: CheckBudget
        var known: [String: String?] = [:]
        init(budget: CheckBudget) { self.budget = budget }
    }

    // MARK: The schema itself

    static let typeNames: Set<String> = ["object", "array", "string", "number", "integer", "boolean", "null"]

    private static func checkSchema(_ schema: JSONValue, at path: String, root: JSONValue, depth: Int,
                                    patterns: inout [String: SchemaPattern], places: inout [String]) throws(SchemaError) {
        guard depth < depthLimit else { throw SchemaError(message: "the schema nests deeper than \(depthLimit) levels at \(path.isEmpty ? "/" : path)") }
        places.append(path)
        if case .bool = schema { return }
        guard case .object(let members) = schema else {
            throw SchemaError(message: "\(path.isEmpty ? "the schema" : "the schema at \(path)") is not an object (or true/false)")
        }
        func fail(_ keyword: String, _ what: String) -> SchemaError { SchemaError(message: "'\(keyword)' at \(path.isEmpty ? "/" : path) \(what)") }
        if let type = members["type"] {
            let names: [JSONValue]
            if case .array(let list) = type { names = list } else { names = [type] }
            guard !names.isEmpty, names.allSatisfy({ $0.stringValue.map(typeNames.contains) ?? false }) else {
                throw fail("type", "must name object, array, string, number, integer, boolean or null")
            }
        }
        for keyword in ["properties", "$defs", "definitions"] {
            guard let value = members[keyword] else { continue }
            guard case .object(let children) = value else { throw fail(keyword, "must be an object of schemas") }
            for (name, child) in children { try checkSchema(child, at: path + "/\(keyword)/" + escaped(name), root: root, depth: depth + 1, patterns: &patterns, places: &places) }
        }
        for keyword in ["items", "additionalProperties", "not"] {
            if let child = members[keyword] { try checkSchema(child, at: path + "/" + keyword, root: root, depth: depth + 1, patterns: &patterns, places: &places) }
        }
        for keyword in ["prefixItems", "anyOf", "oneOf", "allOf"] {
            guard let value = members[keyword] else { continue }
            guard case .array(let children) = value, !children.isEmpty || keyword == "prefixItems" else { throw fail(keyword, "must be an array of schemas") }
            for (index, child) in children.enumerated() { try checkSchema(child, at: path + "/\(keyword)/\(index)", root: root, depth: depth + 1, patterns: &patterns, places: &places) }
        }
        if let required = members["required"] {
            guard case .array(let names) = required, names.allSatisfy({ $0.stringValue != nil }) else { throw fail("required", "must be an array of names") }
        }
        if let values = members["enum"] {
            guard case .array = values else { throw fail("enum", "must be an array") }
        }
        for keyword in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if let bound = members[keyword], case .number = bound {} else if members[keyword] != nil { throw fail(keyword, "must be a number") }
        }
        for keyword in ["minItems", "maxItems", "minLength", "maxLength"] {
            guard let bound = members[keyword] else { continue }
            guard case .number(let count) = bound, count >= 0, count == count.rounded() else { throw fail(keyword, "must be a whole number") }
        }
        if let pattern = members["pattern"] {
            guard let text = pattern.stringValue else { throw fail("pattern", "must be a regular expression") }
            do { patterns[text] = try SchemaPattern(text) } catch { throw fail("pattern", error.message) }
        }
        if let reference = members["$ref"] {
            guard let text = reference.stringValue, resolve(text, in: root) != nil else {
                throw fail("$ref", "must point into this schema's $defs (#/$defs/NAME)")
            }
        }
    }

    /// A name as one JSON Pointer step.
    static func escaped(_ name: String) -> String { name.replacing("~", with: "~0").replacing("/", with: "~1") }

    /// The keywords that apply another schema to the same value, not to a part of it.
    static let sameValueKeywords = ["allOf", "anyOf", "oneOf", "not", "$ref"]

    /// Refuses a `$ref` that leads back to where it started without going into the value (an
    /// `anyOf` naming its own root): checking it would never end. Depth first over the places
    /// that apply to the same value; `states` is false while a place is open, true once done.
    /// (Places inside the value, such as `properties`, start walks of their own.)
    private static func refuseEndlessReference(at place: String, in root: JSONValue, states: inout [String: Bool]) throws(SchemaError) {
        if let done = states[place] {
            if done { return }
            throw SchemaError(message: "'$ref' at \(place.isEmpty ? "/" : place) leads back to itself without going into the value, so checking it would never end")
        }
        guard case .object(let members)? = resolve("#" + place, in: root) else { states[place] = true; return }
        states[place] = false
        for keyword in sameValueKeywords {
            switch (keyword, members[keyword]) {
            case ("$ref", .string(let reference)?) where reference.hasPrefix("#"):
                try refuseEndlessReference(at: String(reference.dropFirst()), in: root, states: &states)
            case ("not", let child?) where child.stringValue == nil:
                try refuseEndlessReference(at: place + "/not", in: root, states: &states)
            case (_, .array(let children)?):
                for index in children.indices { try refuseEndlessReference(at: place + "/\(keyword)/\(index)", in: root, states: &states) }
            default: break
            }
        }
        states[place] = true
    }

    /// `#`, `#/$defs/NAME`, `#/definitions/NAME` or any JSON Pointer into the schema (escapes `~0` and `~1`).
    static func resolve(_ reference: String, in root: JSONValue) -> JSONValue? {
        if reference == "#" { return root }
        guard reference.hasPrefix("#/") else { return nil }
        var node = root
        for raw in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let name = String(raw).replacing("~1", with: "/").replacing("~0", with: "~")
            if case .array(let items) = node, let index = Int(name), items.indices.contains(index) {
                node = items[index]
            } else if let next = node[name] {
                node = next
            } else {
                return nil
            }
        }
        return node
    }

    // MARK: A value against it

    /// The first violation of the schema at `schemaAt` by the value at `path`; each pair is
    /// checked once per run, so schemas that branch back into themselves cost no more each level.
    private func violation(_ value: JSONValue, _ schema: JSONValue, at path: String, schemaAt: String,
                           depth: Int, run: Run) throws(CheckBudget.Exhausted) -> String? {
        let place = path.isEmpty ? "/" : path
        guard depth < Self.depthLimit else { return "\(place): nests deeper than \(Self.depthLimit) levels" }
        if case .bool(let allowed) = schema { return allowed ? nil : "\(place): no value is allowed here" }
        guard case .object(let rules) = schema else { return nil }
        let key = schemaAt + "\u{0}" + path
        if let known = run.known[key] { return known }
        try run.budget.charge()
        let found = try ownViolation(value, rules, at: path, schemaAt: schemaAt, depth: depth, run: run)
        run.known[key] = .some(found)
        return found
    }

    private func ownViolation(_ value: JSONValue, _ rules: [String: JSONValue], at path: String, schemaAt: String,
                              depth: Int, run: Run) throws(CheckBudget.Exhausted) -> String? {
        let place = path.isEmpty ? "/" : path
        if let reference = rules["$ref"]?.stringValue, let target = Self.resolve(reference, in: root),
           let found = try violation(value, target, at: path, schemaAt: String(reference.dropFirst()), depth: depth + 1, run: run) { return found }
        if let type = rules["type"] {
            let names: [String]
            if case .array(let list) = type { names = list.compactMap(\.stringValue) } else { names = [type.stringValue ?? ""] }
            guard names.contains(where: { Self.matches(value, type: $0) }) else {
                return "\(place): expected \(names.joined(separator: " or ")), found \(Self.kind(of: value))"
            }
        }
        if case .array(let allowed) = rules["enum"], !allowed.contains(where: { Self.same($0, value) }) {
            return "\(place): \(Self.shown(value)) is not one of \(allowed.prefix(10).map(Self.shown).joined(separator: ", "))"
        }
        if let constant = rules["const"], !Self.same(constant, value) { return "\(place): expected \(Self.shown(constant)), found \(Self.shown(value))" }
        let found: String?
        switch value {
        case .object(let members): found = try objectViolation(members, rules, at: path, schemaAt: schemaAt, depth: depth, run: run)
        case .array(let items): found = try arrayViolation(items, rules, at: path, schemaAt: schemaAt, depth: depth, run: run)
        case .string(let text): found = try stringViolation(text, rules, at: place, run: run)
        case .number(let number): found = Self.numberViolation(number, rules, at: place)
        default: found = nil
        }
        if let found { return found }
        return try combinedViolation(value, rules, at: path, schemaAt: schemaAt, depth: depth, run: run)
    }

    private func objectViolation(_ members: [String: JSONValue], _ rules: [String: JSONValue], at path: String, schemaAt: String,
                                 depth: Int, run: Run) throws(CheckBudget.Exhausted) -> String? {
        let place = path.isEmpty ? "/" : path
        if case .array(let required) = rules["required"] {
            for case .string(let name) in required where members[name] == nil { return "\(place): '\(name)' is required" }
        }
        let properties: [String: JSONValue]
        if case .object(let declared) = rules["properties"] { properties = declared } else { properties = [:] }
        for name in members.keys.sorted() {
            let child = path + "/" + Self.escaped(name)
            if let rule = properties[name] {
                let ruleAt = schemaAt + "/properties/" + Self.escaped(name)
                if let found = try violation(members[name]!, rule, at: child, schemaAt: ruleAt, depth: depth + 1, run: run) { return found }
            } else if let extra = rules["additionalProperties"] {
                if case .bool(false) = extra { return "\(place): '\(name)' is not an allowed property" }
                let ruleAt = schemaAt + "/additionalProperties"
                if let found = try violation(members[name]!, extra, at: child, schemaAt: ruleAt, depth: depth + 1, run: run) { return found }
            }
        }
        return nil
    }

    private func arrayViolation(_ items: [JSONValue], _ rules: [String: JSONValue], at path: String, schemaAt: String,
                                depth: Int, run: Run) throws(CheckBudget.Exhausted) -> String? {
        let place = path.isEmpty ? "/" : path
        if case .number(let least) = rules["minItems"], Double(items.count) < least { return "\(place): \(items.count) items, fewer than \(Int(least))" }
        if case .number(let most) = rules["maxItems"], Double(items.count) > most { return "\(place): \(items.count) items, more than \(Int(most))" }
        var prefix: [JSONValue] = []
        if case .array(let rulesByPosition) = rules["prefixItems"] { prefix = rulesByPosition }
        for (index, item) in items.enumerated() {
            let rule = index < prefix.count ? prefix[index] : rules["items"]
            let ruleAt = index < prefix.count ? schemaAt + "/prefixItems/\(index)" : schemaAt + "/items"
            if let rule, let found = try violation(item, rule, at: path + "/\(index)", schemaAt: ruleAt, depth: depth + 1, run: run) { return found }
        }
        return nil
    }

    private func stringViolation(_ text: String, _ rules: [String: JSONValue], at place: String, run: Run) throws(CheckBudget.Exhausted) -> String? {
        let length = text.unicodeScalars.count
        if case .number(let least) = rules["minLength"], Double(length) < least { return "\(place): \(length) characters, fewer than \(Int(least))" }
        if case .number(let most) = rules["maxLength"], Double(length) > most { return "\(place): \(length) characters, more than \(Int(most))" }
        if let pattern = rules["pattern"]?.stringValue, let compiled = patterns[pattern], try !compiled.matches(text, budget: run.budget) {
            return "\(place): \(Self.shown(.string(text))) does not match the pattern \(pattern)"
        }
        return nil
    }

    private static func numberViolation(_ number: Double, _ rules: [String: JSONValue], at place: String) -> String? {
        let value = JSONValue.number(number)
        if case .number(let bound) = rules["minimum"], number < bound { return "\(place): \(shown(value)) is less than \(shown(.number(bound)))" }
        if case .number(let bound) = rules["maximum"], number > bound { return "\(place): \(shown(value)) is more than \(shown(.number(bound)))" }
        if case .number(let bound) = rules["exclusiveMinimum"], number <= bound { return "\(place): \(shown(value)) is not more than \(shown(.number(bound)))" }
        if case .number(let bound) = rules["exclusiveMaximum"], number >= bound { return "\(place): \(shown(value)) is not less than \(shown(.number(bound)))" }
        return nil
    }

    /// allOf, anyOf, oneOf and not: other schemas applied to the same value.
    private func combinedViolation(_ value: JSONValue, _ rules: [String: JSONValue], at path: String, schemaAt: String,
                                   depth: Int, run: Run) throws(CheckBudget.Exhausted) -> String? {
        let place = path.isEmpty ? "/" : path
        func check(_ keyword: String, _ index: Int?, _ schema: JSONValue) throws(CheckBudget.Exhausted) -> String? {
            let at = schemaAt + "/" + keyword + (index.map { "/\($0)" } ?? "")
            return try violation(value, schema, at: path, schemaAt: at, depth: depth + 1, run: run)
        }
        if case .array(let all) = rules["allOf"] {
            for (index, schema) in all.enumerated() { if let found = try check("allOf", index, schema) { return found } }
        }
        if case .array(let any) = rules["anyOf"] {
            var matched = false
            for (index, schema) in any.enumerated() {
                if try check("anyOf", index, schema) == nil { matched = true; break }
            }
            if !matched { return "\(place): matches none of the \(any.count) schemas of anyOf" }
        }
        if case .array(let one) = rules["oneOf"] {
            var matching = 0
            for (index, schema) in one.enumerated() {
                if try check("oneOf", index, schema) == nil { matching += 1 }
            }
            if matching != 1 { return "\(place): matches \(matching) of the schemas of oneOf, not exactly one" }
        }
        if let not = rules["not"], try check("not", nil, not) == nil { return "\(place): matches the schema of 'not'" }
        return nil
    }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null), ("number", .number): true
        case ("integer", .number(let number)): number.isFinite && number == number.rounded()
        default: false
        }
    }

    static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Equal as JSON: numbers by value, objects whatever their order.
    static func same(_ one: JSONValue, _ other: JSONValue) -> Bool { one == other }

    /// A value in a message: short, on one line, with no control characters.
    static func shown(_ value: JSONValue) -> String {
        let text: String
        switch value {
        case .null: text = "null"
        case .bool(let flag): text = flag ? "true" : "false"
        case .number(let number): text = number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let string): text = "\"" + string + "\""
        case .array: text = "an array"
        case .object: text = "an object"
        }
        let plain = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return plain.count > 60 ? String(plain.prefix(57)) + "…" : plain
    }
}
