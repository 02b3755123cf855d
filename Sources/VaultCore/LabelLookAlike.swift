/// The label rules a sender's name meets on screen: which labels `identity --label` takes now,
/// and the form two labels compare in when the question is whether they look the same.
extension VaultIdentity {
    /// A label `identity --label` takes: printable ASCII, no space at either end, no two spaces
    /// in a row. Labels older vaults hold (any text without controls, `isValidLabel`) still open
    /// and travel in shares; an importer is warned about a share carrying one.
    public static func isPlainLabel(_ label: String) -> Bool {
        isValidLabel(label) && label.utf8.allSatisfy { (0x20...0x7e).contains($0) }
            && label.first != " " && label.last != " " && !label.contains("  ")
    }

    /// `label` with what a terminal does not tell apart taken out: invisible and format
    /// characters and combining marks dropped, every kind of space made one space and trimmed,
    /// compatibility forms (fullwidth, mathematical, circled, accented) and the common Cyrillic
    /// and Greek look-alikes turned into the Latin letter they resemble, lower-cased, and `i`,
    /// `I`, `1`, `|` made `l`, `0` made `o`, `rn` made `m`, `vv` made `w`, `cl` made `d`.
    /// Two labels with one form look alike. A heuristic of the usual tricks, not Unicode's
    /// whole confusables table: it errs towards calling labels alike.
    public static func lookAlikeForm(of label: String) -> String {
        var text = ""
        for scalar in label.unicodeScalars {
            let properties = scalar.properties
            switch properties.generalCategory {
            case .format, .nonspacingMark, .enclosingMark, .control, .surrogate, .privateUse, .unassigned: continue
            case .spaceSeparator, .lineSeparator, .paragraphSeparator: text += " "; continue
            default: break
            }
            if properties.isDefaultIgnorableCodePoint { continue }
            if properties.isWhitespace { text += " "; continue }
            text += LookAlikeTable.latin(for: scalar) ?? properties.lowercaseMapping
        }
        text = text.lowercased()
        for (from, to) in [("i", "l"), ("1", "l"), ("|", "l"), ("0", "o"), ("rn", "m"), ("vv", "w"), ("cl", "d")] {
            text = text.replacing(from, with: to)
        }
        return text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}

/// Non-ASCII scalars and the ASCII text they pass for.
enum LookAlikeTable {
    /// The ASCII a scalar passes for: from the table below, the fullwidth block, or its Unicode
    /// name (`CYRILLIC SMALL LETTER A`, `MATHEMATICAL BOLD CAPITAL A`, `FULLWIDTH DIGIT ONE`).
    static func latin(for scalar: Unicode.Scalar) -> String? {
        let value = scalar.value
        guard value > 0x7f else { return nil }
        if let mapped = table[value] { return mapped }
        if (0xff01...0xff5e).contains(value), let ascii = Unicode.Scalar(value - 0xfee0) { return String(ascii) }
        guard let name = scalar.properties.name else { return nil }
        let words = name.split(separator: " ").prefix { $0 != "WITH" }
        guard let last = words.last else { return nil }
        if last.count == 1, let letter = last.unicodeScalars.first, ("A"..."Z").contains(letter), words.count > 1 { return last.lowercased() }
        if let digit = digits.firstIndex(of: String(last)),
           words.dropLast().last == "DIGIT" || name.hasPrefix("SUPERSCRIPT") || name.hasPrefix("SUBSCRIPT") {
            return String(digit)
        }
        return nil
    }

    private static let digits = ["ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE"]

    /// Letters whose names do not say what they look like (Cyrillic `е` is `IE`, Greek `ο` is
    /// `OMICRON`), and punctuation that passes for ASCII's.
    private static let table: [UInt32: String] = [
        // Greek capitals, then small letters
        0x391: "a", 0x392: "b", 0x395: "e", 0x396: "z", 0x397: "h", 0x399: "l", 0x39a: "k", 0x39c: "m", 0x39d: "n", 0x39f: "o",
        0x3a1: "p", 0x3a4: "t", 0x3a5: "y", 0x3a7: "x",
        0x3b1: "a", 0x3b2: "b", 0x3b3: "y", 0x3b5: "e", 0x3b7: "n", 0x3b9: "i", 0x3ba: "k", 0x3bd: "v", 0x3bf: "o", 0x3c1: "p",
        0x3c4: "t", 0x3c5: "u", 0x3c7: "x", 0x3c9: "w",
        // Cyrillic capitals, then small letters
        0x405: "s", 0x406: "i", 0x407: "i", 0x408: "j", 0x410: "a", 0x412: "b", 0x415: "e", 0x41a: "k", 0x41c: "m", 0x41d: "h",
        0x41e: "o", 0x420: "p", 0x421: "c", 0x422: "t", 0x423: "y", 0x425: "x", 0x4ae: "y", 0x4c0: "l",
        0x430: "a", 0x432: "b", 0x433: "r", 0x435: "e", 0x43a: "k", 0x43c: "m", 0x43d: "h", 0x43e: "o", 0x440: "p", 0x441: "c",
        0x442: "t", 0x443: "y", 0x445: "x", 0x44c: "b", 0x451: "e", 0x455: "s", 0x456: "i", 0x457: "i", 0x458: "j", 0x4bb: "h",
        0x4cf: "l", 0x501: "d", 0x51b: "q", 0x51d: "w",
        // Latin letters named for a sound, and signs that are letters
        0x269: "i", 0x1c0: "l", 0x2113: "l", 0x212a: "k", 0x212b: "a", 0x2160: "l", 0x2164: "v", 0x2169: "x", 0x216c: "l",
        0x216d: "c", 0x216e: "d", 0x216f: "m", 0x2170: "l", 0x2174: "v", 0x2179: "x", 0x217c: "l", 0x217d: "c", 0x217e: "d", 0x217f: "m",
        // Punctuation
        0x2010: "-", 0x2011: "-", 0x2012: "-", 0x2013: "-", 0x2014: "-", 0x2043: "-", 0x2212: "-", 0x2d7: "-",
        0x2024: ".", 0x2027: ".", 0xfe6b: "@", 0x2044: "/", 0x2215: "/", 0x2018: "'", 0x2019: "'", 0x2bc: "'",
    ]
}
