/// A JSON Schema `pattern` (ECMA-262 syntax, unanchored, matched on Unicode scalars), run by
/// an NFA simulation: time grows with the text's length times the pattern's size and never
/// backtracks, so `^(a+)+$` costs what `^a+$` does. Backreferences and lookaround need
/// backtracking and are refused when the schema is read.
struct SchemaPattern: Sendable {
    struct Refusal: Error, Equatable { let message: String }

    /// One instruction; a thread at `consume` moves on when the scalar is in the set.
    enum Step: Sendable, Equatable {
        case consume(ScalarSet)
        case split(Int, Int)
        case jump(Int)
        case assert(Anchor)
        case match
    }

    enum Anchor: Sendable, Equatable { case start, end, wordBoundary, notWordBoundary }

    /// Instructions beyond this (counted repetitions copy their body) are refused.
    static let sizeLimit = 20_000
    /// Nodes the compiler may visit while emitting (each copy of a repeated body visits it
    /// again): what bounds compiling a pattern whose copies add few instructions.
    static let compileLimit = 5 * sizeLimit
    /// Groups nested deeper than this are refused: the parser and compiler recurse into them.
    static let nestingLimit = 256

    let steps: [Step]

    init(_ pattern: String, compileLimit: Int = compileLimit) throws(Refusal) {
        var parser = PatternParser(Array(pattern.unicodeScalars))
        let tree = try parser.parseWhole()
        var program: [Step] = []
        var visits = compileLimit
        try Self.emit(tree, into: &program, visits: &visits)
        program.append(.match)
        steps = program
    }

    /// Whether the pattern occurs anywhere in `text`, charging each thread step to `budget`.
    func matches(_ text: String, budget: CheckBudget) throws(CheckBudget.Exhausted) -> Bool {
        let scalars = Array(text.unicodeScalars)
        var current: [Int] = [], next: [Int] = []
        var seen = [Int](repeating: -1, count: steps.count)
        var mark = 0, visited = 0
        for position in 0...scalars.count {
            mark += 1
            visited = 0
            let previous = current
            current.removeAll(keepingCapacity: true)
            // Unanchored: a new thread starts at every position, after the surviving ones.
            for thread in previous + [0] {
                if addThread(thread, at: position, in: scalars, to: &current, seen: &seen, mark: mark, visited: &visited) { return true }
            }
            try budget.charge(visited + 1)
            guard position < scalars.count else { break }
            next.removeAll(keepingCapacity: true)
            for thread in current {
                if case .consume(let set) = steps[thread], set.contains(scalars[position]) { next.append(thread + 1) }
            }
            current = next
        }
        return false
    }

    /// Follows the thread through splits, jumps and assertions; true when it reaches `match`.
    private func addThread(_ start: Int, at position: Int, in text: [Unicode.Scalar],
                           to list: inout [Int], seen: inout [Int], mark: Int, visited: inout Int) -> Bool {
        var stack = [start]
        while let index = stack.popLast() {
            guard seen[index] != mark else { continue }
            seen[index] = mark
            visited += 1
            switch steps[index] {
            case .consume: list.append(index)
            case .match: return true
            case .jump(let target): stack.append(target)
            case .split(let first, let second): stack.append(second); stack.append(first)
            case .assert(let anchor): if Self.holds(anchor, at: position, in: text) { stack.append(index + 1) }
            }
        }
        return false
    }

    private static func holds(_ anchor: Anchor, at position: Int, in text: [Unicode.Scalar]) -> Bool {
        switch anchor {
        case .start: return position == 0
        case .end: return position == text.count
        case .wordBoundary, .notWordBoundary:
            let before = position > 0 && ScalarSet.word.contains(text[position - 1])
            let after = position < text.count && ScalarSet.word.contains(text[position])
            return (before != after) == (anchor == .wordBoundary)
        }
    }

    // MARK: Compiling

    private static func emit(_ node: PatternNode, into program: inout [Step], visits: inout Int) throws(Refusal) {
        visits -= 1
        guard program.count < sizeLimit, visits >= 0 else {
            throw Refusal(message: "is too large to check (its repetitions come to more than \(sizeLimit) steps)")
        }
        switch node {
        case .scalars(let set): program.append(.consume(set))
        case .anchor(let anchor): program.append(.assert(anchor))
        case .sequence(let parts): for part in parts { try emit(part, into: &program, visits: &visits) }
        case .alternation(let choices):
            var jumps: [Int] = []
            for (index, choice) in choices.enumerated() {
                if index == choices.count - 1 { try emit(choice, into: &program, visits: &visits); break }
                let split = program.count
                program.append(.split(split + 1, 0))
                try emit(choice, into: &program, visits: &visits)
                jumps.append(program.count)
                program.append(.jump(0))
                program[split] = .split(split + 1, program.count)
            }
            for jump in jumps { program[jump] = .jump(program.count) }
        case .repeated(let body, let least, let most):
            for _ in 0..<least { try emit(body, into: &program, visits: &visits) }
            if let most {
                for _ in least..<most { try emitOptional(body, into: &program, visits: &visits) }
            } else {
                let split = program.count
                program.append(.split(split + 1, 0))
                try emit(body, into: &program, visits: &visits)
                program.append(.jump(split))
                program[split] = .split(split + 1, program.count)
            }
        }
    }

    private static func emitOptional(_ body: PatternNode, into program: inout [Step], visits: inout Int) throws(Refusal) {
        let split = program.count
        program.append(.split(split + 1, 0))
        try emit(body, into: &program, visits: &visits)
        program[split] = .split(split + 1, program.count)
    }
}

/// A set of Unicode scalars: ranges, possibly negated.
struct ScalarSet: Sendable, Equatable {
    var ranges: [ClosedRange<UInt32>]
    var negated = false

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        ranges.contains { $0.contains(scalar.value) } != negated
    }

    static func single(_ scalar: Unicode.Scalar) -> ScalarSet { ScalarSet(ranges: [scalar.value...scalar.value]) }
    static let digit = ScalarSet(ranges: [0x30...0x39])
    static let word = ScalarSet(ranges: [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
    /// ECMA-262's WhiteSpace and LineTerminator.
    static let space = ScalarSet(ranges: [0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A,
                                          0x2028...0x2029, 0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF])
    /// `.`: anything but a line terminator.
    static let dot = ScalarSet(ranges: [0x0A...0x0A, 0x0D...0x0D, 0x2028...0x2029], negated: true)
}

indirect enum PatternNode: Sendable {
    case scalars(ScalarSet)
    case anchor(SchemaPattern.Anchor)
    case sequence([PatternNode])
    case alternation([PatternNode])
    case repeated(PatternNode, least: Int, most: Int?)

    static let empty = PatternNode.sequence([])

    /// Matches only the empty text and compiles to nothing: `()`, `(|)`, `x{0}`.
    var isEmpty: Bool {
        switch self {
        case .sequence(let parts): return parts.allSatisfy(\.isEmpty)
        case .alternation(let choices): return choices.allSatisfy(\.isEmpty)
        case .scalars, .anchor, .repeated: return false
        }
    }
}

/// ECMA-262 pattern syntax (with Annex B's lenient literals) into a `PatternNode` tree.
struct PatternParser {
    private let text: [Unicode.Scalar]
    private var index = 0
    /// Groups open at `index`.
    private var depth = 0

    init(_ text: [Unicode.Scalar]) { self.text = text }

    typealias Refusal = SchemaPattern.Refusal

    private var current: Unicode.Scalar? { index < text.count ? text[index] : nil }

    private mutating func take(_ scalar: Unicode.Scalar) -> Bool {
        guard current == scalar else { return false }
        index += 1
        return true
    }

    private func refuse(_ why: String) -> Refusal { Refusal(message: why) }

    mutating func parseWhole() throws(Refusal) -> PatternNode {
        let tree = try parseAlternation()
        guard index == text.count else { throw refuse("is not a regular expression (an unmatched ')')") }
        return tree
    }

    private mutating func parseAlternation() throws(Refusal) -> PatternNode {
        var choices = [try parseSequence()]
        while take("|") { choices.append(try parseSequence()) }
        if choices.allSatisfy(\.isEmpty) { return .empty }
        return choices.count == 1 ? choices[0] : .alternation(choices)
    }

    /// A sequence without its empty parts, one part standing for itself: so copying a repeated
    /// body visits about as many nodes as it emits instructions.
    private mutating func parseSequence() throws(Refusal) -> PatternNode {
        var parts: [PatternNode] = []
        while let scalar = current, scalar != "|", scalar != ")" {
            if let anchor = try parseAnchor() { parts.append(.anchor(anchor)); continue }
            let atom = try parseAtom()
            let part = try parseQuantifier(on: atom)
            if !part.isEmpty { parts.append(part) }
        }
        return parts.count == 1 ? parts[0] : .sequence(parts)
    }

    private mutating func parseAnchor() throws(Refusal) -> SchemaPattern.Anchor? {
        let anchor: SchemaPattern.Anchor?
        if take("^") { anchor = .start } else if take("$") { anchor = .end }
        else if current == "\\", index + 1 < text.count, text[index + 1] == "b" || text[index + 1] == "B" {
            anchor = text[index + 1] == "b" ? .wordBoundary : .notWordBoundary
            index += 2
        } else { return nil }
        if let next = current, "*+?".unicodeScalars.contains(next) { throw refuse("is not a regular expression (a quantifier after an anchor)") }
        return anchor
    }

    private mutating func parseAtom() throws(Refusal) -> PatternNode {
        guard let scalar = current else { throw refuse("is not a regular expression") }
        index += 1
        switch scalar {
        case ".": return .scalars(.dot)
        case "[": return .scalars(try parseClass())
        case "\\": return .scalars(try parseEscape(inClass: false))
        case "(":
            if take("?") {
                if take(":") {} else if current == "<", index + 1 < text.count, text[index + 1] != "=", text[index + 1] != "!" {
                    while let next = current, next != ">" { index += 1 }
                    guard take(">") else { throw refuse("is not a regular expression (an unclosed group name)") }
                } else {
                    throw refuse("uses lookahead or lookbehind, which gemvault cannot check in bounded time")
                }
            }
            depth += 1
            guard depth <= SchemaPattern.nestingLimit else {
                throw refuse("nests groups more than \(SchemaPattern.nestingLimit) deep, more than gemvault checks")
            }
            let inner = try parseAlternation()
            guard take(")") else { throw refuse("is not a regular expression (an unclosed '(')") }
            depth -= 1
            return inner
        case "*", "+", "?": throw refuse("is not a regular expression (nothing to repeat)")
        case "{" where quantifierBounds(from: index - 1) != nil: throw refuse("is not a regular expression (nothing to repeat)")
        default: return .scalars(.single(scalar))
        }
    }

    private mutating func parseQuantifier(on atom: PatternNode) throws(Refusal) -> PatternNode {
        let bounds: (Int, Int?)
        if take("*") { bounds = (0, nil) } else if take("+") { bounds = (1, nil) } else if take("?") { bounds = (0, 1) }
        else if current == "{", let (least, most, end) = quantifierBounds(from: index) {
            index = end
            bounds = (least, most)
        } else { return atom }
        _ = take("?")  // lazy or greedy: the same for whether it matches
        let limit = SchemaPattern.sizeLimit
        guard bounds.0 <= limit, (bounds.1 ?? 0) <= limit else { throw refuse("repeats more than \(limit) times, more than gemvault checks") }
        if let most = bounds.1, most < bounds.0 { throw refuse("is not a regular expression (numbers out of order in a quantifier)") }
        if let next = current, "*+?".unicodeScalars.contains(next) { throw refuse("is not a regular expression (nothing to repeat)") }
        // Repeating the empty text, or nothing at all, is the empty text: emitting it would copy
        // nothing any number of times. Once exactly is the body itself.
        if atom.isEmpty || bounds.1 == 0 { return .empty }
        if bounds.0 == 1, bounds.1 == 1 { return atom }
        return .repeated(atom, least: bounds.0, most: bounds.1)
    }

    /// `{n}`, `{n,}` or `{n,m}` starting at `start`, with the index after it; nil when it is a literal brace.
    private func quantifierBounds(from start: Int) -> (Int, Int?, Int)? {
        var position = start + 1
        func number() -> Int? {
            var value: Int?
            while position < text.count, (48...57).contains(text[position].value) {
                value = min((value ?? 0) * 10 + Int(text[position].value - 48), Int(Int32.max))
                position += 1
            }
            return value
        }
        guard let least = number() else { return nil }
        var most: Int? = least
        if position < text.count, text[position] == "," {
            position += 1
            most = number()
        }
        guard position < text.count, text[position] == "}" else { return nil }
        return (least, most, position + 1)
    }

    private mutating func parseClass() throws(Refusal) -> ScalarSet {
        let negated = take("^")
        var ranges: [ClosedRange<UInt32>] = []
        while let scalar = current, scalar != "]" {
            let low = try parseClassAtom()
            if current == "-", index + 1 < text.count, text[index + 1] != "]" {
                index += 1
                let high = try parseClassAtom()
                guard low.count == 1, high.count == 1, low[0].count == 1, high[0].count == 1 else {
                    throw refuse("is not a regular expression (a class escape in a range)")
                }
                guard low[0].lowerBound <= high[0].lowerBound else { throw refuse("is not a regular expression (a range out of order)") }
                ranges.append(low[0].lowerBound...high[0].lowerBound)
            } else {
                ranges += low
            }
        }
        guard take("]") else { throw refuse("is not a regular expression (an unclosed '[')") }
        return ScalarSet(ranges: ranges, negated: negated)
    }

    private mutating func parseClassAtom() throws(Refusal) -> [ClosedRange<UInt32>] {
        guard let scalar = current else { throw refuse("is not a regular expression (an unclosed '[')") }
        index += 1
        guard scalar == "\\" else { return [scalar.value...scalar.value] }
        if take("b") { return [0x08...0x08] }
        if take("-") { return [0x2D...0x2D] }
        let set = try parseEscape(inClass: true)
        return set.negated ? ScalarSet.complement(set.ranges) : set.ranges
    }

    /// What follows a backslash (already taken).
    private mutating func parseEscape(inClass: Bool) throws(Refusal) -> ScalarSet {
        guard let scalar = current else { throw refuse("is not a regular expression (a trailing backslash)") }
        index += 1
        switch scalar {
        case "d": return .digit
        case "D": return ScalarSet(ranges: ScalarSet.digit.ranges, negated: true)
        case "w": return .word
        case "W": return ScalarSet(ranges: ScalarSet.word.ranges, negated: true)
        case "s": return .space
        case "S": return ScalarSet(ranges: ScalarSet.space.ranges, negated: true)
        case "t": return .single("\t")
        case "n": return .single("\n")
        case "r": return .single("\r")
        case "f": return .single("\u{0C}")
        case "v": return .single("\u{0B}")
        case "0" where !(current.map { ("0"..."9").contains($0) } ?? false): return .single("\0")
        case "1"..."9", "k":
            throw refuse("uses a backreference, which gemvault cannot check in bounded time")
        case "p", "P": throw refuse("uses a Unicode property escape (\\\(scalar){…}), which gemvault does not check")
        case "c":
            guard let letter = current, letter.isASCII, letter.properties.isAlphabetic else { return .single("\\") }
            index += 1
            return ScalarSet(ranges: [letter.value % 32...letter.value % 32])
        case "x": return try hexEscape(digits: 2, fallback: "x")
        case "u": return try unicodeEscape()
        default: return .single(scalar)
        }
    }

    private mutating func hexEscape(digits: Int, fallback: Unicode.Scalar) throws(Refusal) -> ScalarSet {
        guard let value = hexValue(digits) else { return .single(fallback) }
        guard let scalar = Unicode.Scalar(value) else { throw refuse("is not a regular expression (an escape that is no character)") }
        return .single(scalar)
    }

    private mutating func unicodeEscape() throws(Refusal) -> ScalarSet {
        if current == "{" {
            let start = index
            index += 1
            var value: UInt32 = 0
            while let next = current, let digit = next.properties.isASCIIHexDigit ? UInt32(String(next), radix: 16) : nil, value <= 0x10FFFF {
                value = value * 16 + digit
                index += 1
            }
            if take("}"), index - start > 2, let scalar = Unicode.Scalar(value) { return .single(scalar) }
            index = start
            return .single("u")
        }
        guard let high = hexValue(4) else { return .single("u") }
        if (0xD800...0xDBFF).contains(high), current == "\\", index + 1 < text.count, text[index + 1] == "u" {
            let save = index
            index += 2
            if let low = hexValue(4), (0xDC00...0xDFFF).contains(low), let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) {
                return .single(scalar)
            }
            index = save
        }
        // A lone surrogate matches nothing: Swift strings hold scalars only.
        return Unicode.Scalar(high).map(ScalarSet.single) ?? ScalarSet(ranges: [])
    }

    private mutating func hexValue(_ digits: Int) -> UInt32? {
        guard index + digits <= text.count else { return nil }
        var value: UInt32 = 0
        for offset in 0..<digits {
            let scalar = text[index + offset]
            guard scalar.properties.isASCIIHexDigit, let digit = UInt32(String(scalar), radix: 16) else { return nil }
            value = value * 16 + digit
        }
        index += digits
        return value
    }
}

extension ScalarSet {
    /// Every scalar value outside `ranges`.
    static func complement(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound > next { result.append(next...range.lowerBound - 1) }
            next = max(next, range.upperBound &+ 1)
        }
        if next <= 0x10FFFF { result.append(next...0x10FFFF) }
        return result
    }
}
