import VaultCore

/// A JSON Schema (`ask --schema FILE`) checked locally against a structured reply: Gemini's
/// `responseJsonSchema` constrains the model, but a script should trust only what it checks.
/// The keywords Gemini's structured output supports are enforced (type, enum, const,
/// properties, required, additionalProperties, items, prefixItems, minItems, maxItems,
/// minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, anyOf,
/// oneOf, allOf, $ref into $defs); the others (title, description, format, …) only describe.
public struct JSONSchemaCheck: Sendable {
    public struct SchemaError: Error, Equatable {
        public let message: String
    }

    let root: JSONValue
    /// Nesting deeper than this in the schema or the reply is refused, not followed.
    static let depthLimit = 64

    /// The schema, refused when it is not a schema gemvault can enforce.
    public init(_ schema: JSONValue) throws(SchemaError) {
        root = schema
        try Self.checkSchema(schema, at: "", root: schema, depth: 0)
    }

    /// The first place `value` breaks the schema, as `/path: what`; nil when it matches.
    public func firstViolation(in value: JSONValue) -> String? {
        violation(value, root, at: "", depth: 0)
    }

    // MARK: The schema itself

    static let typeNames: Set<String> = ["object", "array", "string", "number", "integer", "boolean", "null"]

    private static func checkSchema(_ schema: JSONValue, at path: String, root: JSONValue, depth: Int) throws(SchemaError) {
        guard depth < depthLimit else { throw SchemaError(message: "the schema nests deeper than \(depthLimit) levels at \(path.isEmpty ? "/" : path)") }
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
            for (name, child) in children { try checkSchema(child, at: path + "/\(keyword)/" + name, root: root, depth: depth + 1) }
        }
        for keyword in ["items", "additionalProperties", "not"] {
            if let child = members[keyword] { try checkSchema(child, at: path + "/" + keyword, root: root, depth: depth + 1) }
        }
        for keyword in ["prefixItems", "anyOf", "oneOf", "allOf"] {
            guard let value = members[keyword] else { continue }
            guard case .array(let children) = value, !children.isEmpty || keyword == "prefixItems" else { throw fail(keyword, "must be an array of schemas") }
            for (index, child) in children.enumerated() { try checkSchema(child, at: path + "/\(keyword)/\(index)", root: root, depth: depth + 1) }
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
            guard let text = pattern.stringValue, (try? Regex(text)) != nil else { throw fail("pattern", "must be a regular expression") }
        }
        if let reference = members["$ref"] {
            guard let text = reference.stringValue, resolve(text, in: root) != nil else {
                throw fail("$ref", "must point into this schema's $defs (#/$defs/NAME)")
            }
        }
    }

    /// `#`, `#/$defs/NAME` or `#/definitions/NAME` (JSON Pointer escapes `~0` and `~1`).
    static func resolve(_ reference: String, in root: JSONValue) -> JSONValue? {
        if reference == "#" { return root }
        guard reference.hasPrefix("#/") else { return nil }
        var node = root
        for raw in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let name = String(raw).replacing("~1", with: "/").replacing("~0", with: "~")
            guard let next = node[String(name)] else { return nil }
            node = next
        }
        return node
    }

    // MARK: A value against it

    private func violation(_ value: JSONValue, _ schema: JSONValue, at path: String, depth: Int) -> String? {
        let place = path.isEmpty ? "/" : path
        guard depth < Self.depthLimit else { return "\(place): nests deeper than \(Self.depthLimit) levels" }
        if case .bool(let allowed) = schema { return allowed ? nil : "\(place): no value is allowed here" }
        guard case .object(let rules) = schema else { return nil }
        if let reference = rules["$ref"]?.stringValue, let target = Self.resolve(reference, in: root),
           let found = violation(value, target, at: path, depth: depth + 1) { return found }
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
        switch value {
        case .object(let members):
            if case .array(let required) = rules["required"] {
                for case .string(let name) in required where members[name] == nil { return "\(place): '\(name)' is required" }
            }
            let properties: [String: JSONValue]
            if case .object(let declared) = rules["properties"] { properties = declared } else { properties = [:] }
            for name in members.keys.sorted() {
                let child = path + "/" + name.replacing("~", with: "~0").replacing("/", with: "~1")
                if let rule = properties[name] {
                    if let found = violation(members[name]!, rule, at: child, depth: depth + 1) { return found }
                } else if let extra = rules["additionalProperties"] {
                    if case .bool(false) = extra { return "\(place): '\(name)' is not an allowed property" }
                    if let found = violation(members[name]!, extra, at: child, depth: depth + 1) { return found }
                }
            }
        case .array(let items):
            if case .number(let least) = rules["minItems"], Double(items.count) < least { return "\(place): \(items.count) items, fewer than \(Int(least))" }
            if case .number(let most) = rules["maxItems"], Double(items.count) > most { return "\(place): \(items.count) items, more than \(Int(most))" }
            var prefix: [JSONValue] = []
            if case .array(let rulesByPosition) = rules["prefixItems"] { prefix = rulesByPosition }
            for (index, item) in items.enumerated() {
                let rule = index < prefix.count ? prefix[index] : rules["items"]
                if let rule, let found = violation(item, rule, at: path + "/\(index)", depth: depth + 1) { return found }
            }
        case .string(let text):
            let length = text.unicodeScalars.count
            if case .number(let least) = rules["minLength"], Double(length) < least { return "\(place): \(length) characters, fewer than \(Int(least))" }
            if case .number(let most) = rules["maxLength"], Double(length) > most { return "\(place): \(length) characters, more than \(Int(most))" }
            if let pattern = rules["pattern"]?.stringValue, let regex = try? Regex(pattern), (try? regex.firstMatch(in: text)) == nil {
                return "\(place): \(Self.shown(value)) does not match the pattern \(pattern)"
            }
        case .number(let number):
            if case .number(let bound) = rules["minimum"], number < bound { return "\(place): \(Self.shown(value)) is less than \(Self.shown(.number(bound)))" }
            if case .number(let bound) = rules["maximum"], number > bound { return "\(place): \(Self.shown(value)) is more than \(Self.shown(.number(bound)))" }
            if case .number(let bound) = rules["exclusiveMinimum"], number <= bound { return "\(place): \(Self.shown(value)) is not more than \(Self.shown(.number(bound)))" }
            if case .number(let bound) = rules["exclusiveMaximum"], number >= bound { return "\(place): \(Self.shown(value)) is not less than \(Self.shown(.number(bound)))" }
        default:
            break
        }
        if case .array(let all) = rules["allOf"] {
            for schema in all { if let found = violation(value, schema, at: path, depth: depth + 1) { return found } }
        }
        if case .array(let any) = rules["anyOf"], !any.contains(where: { violation(value, $0, at: path, depth: depth + 1) == nil }) {
            return "\(place): matches none of the \(any.count) schemas of anyOf"
        }
        if case .array(let one) = rules["oneOf"] {
            let matching = one.filter { violation(value, $0, at: path, depth: depth + 1) == nil }.count
            if matching != 1 { return "\(place): matches \(matching) of the schemas of oneOf, not exactly one" }
        }
        if let not = rules["not"], violation(value, not, at: path, depth: depth + 1) == nil { return "\(place): matches the schema of 'not'" }
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
