/// Breaks styled text into lines that fit a width, the way a reader expects prose to wrap:
/// newlines are kept, lines break at spaces (runs of spaces inside a line are kept), Chinese
/// and other wide characters may break between any two (except before closing punctuation),
/// a word wider than the line is cut only as a last resort, and URLs and code words never are.
///
/// The text is taken one character at a time and a word is placed as soon as it ends, so the
/// memory it needs is the lines it makes, even for one endless word from a hostile server.
enum LineBreaker {
    /// Closing punctuation that must not begin a line (a small part of the Japanese and Chinese rules).
    static let noLineStart: Set<Character> = ["，", "。", "、", "！", "？", "：", "；", "）", "」", "』", "》", "〉", "】", "〕", "〗", "…", "・", "ー"]

    /// `runs` in lines: the first at most `firstWidth` columns, the others `width`. With
    /// `start`, the characters before it (counted over all runs, newlines included) are left
    /// out: the layout resumes there, on a line of `width`. Each line's position holds the
    /// offset of the character it starts with.
    static func wrap(_ runs: [StyledRun], firstWidth: Int, width: Int, from start: Int = 0) -> [StyledLine] {
        var filler = Filler(firstWidth: max(1, start > 0 ? width : firstWidth), width: max(1, width), start: start)
        var index = 0
        var previous: Character = " "
        for run in runs {
            // Inline code that fits a line is one unit: its spaces do not break it.
            let codeFits = run.kind == .code && DisplayWidth.of(run.text) <= width
            var position = run.text.startIndex
            while position < run.text.endIndex {
                let character = run.text[position]
                defer {
                    index += 1
                    previous = character
                    position = run.text.index(after: position)
                }
                if index < start { continue }
                if character == "\n" {
                    filler.endSourceLine(next: index + 1)
                    continue
                }
                let space = character == " " || character == "\t"
                let cells = space ? 1 : DisplayWidth.of(character)
                let mark = character == "[" && !previous.isWhitespace && isCitationMark(run.text[position...])
                filler.take(Glyph(character: space ? " " : character, width: cells, style: run.style, kind: run.kind,
                                  isSpace: space && !codeFits, standsAlone: cells == 2 && run.kind == .text, index: index, joinsPrevious: mark))
            }
        }
        filler.endSourceLine(next: index)
        return filler.lines
    }

    /// One character with what the breaker needs to know about it.
    struct Glyph {
        let character: Character
        let width: Int
        let style: TextStyle
        let kind: StyledRun.Kind
        let isSpace: Bool
        /// May end a line before it and start one after it, with no space between (wide text).
        let standsAlone: Bool
        /// Its offset in the text being wrapped.
        let index: Int
        /// Starts a citation mark (`[2]`) that stays with the character before it.
        var joinsPrevious = false
    }

    /// Whether `text` begins with a citation mark: `[`, one to three digits, `]`.
    static func isCitationMark(_ text: Substring) -> Bool {
        let head = text.prefix(5)
        guard let close = head.firstIndex(of: "]") else { return false }
        let digits = head[head.index(after: head.startIndex)..<close]
        return !digits.isEmpty && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
    }

    /// The greedy filling of lines, fed character by character.
    private struct Filler {
        let width: Int
        var available: Int
        private(set) var lines: [StyledLine] = []
        private var line: LineBuilder
        /// The line holds a word (not just indentation).
        private var hasWord = false
        /// Spaces seen since the last word, placed only if a word follows on the same line.
        private var gap: [Glyph] = []
        private var gapWidth = 0
        /// The word being read.
        private var word: [Glyph] = []
        private var wordWidth = 0
        private var wordHead = ""
        private var wordMayBeCut = true
        /// The word is too wide for any line and goes straight onto lines, cut as they fill.
        private var cutting = false
        private var lastStandsAlone = false

        init(firstWidth: Int, width: Int, start: Int) {
            self.width = width
            self.available = firstWidth
            self.line = LineBuilder(begun: start)
        }

        mutating func take(_ glyph: Glyph) {
            if glyph.isSpace {
                finishWord()
                gap.append(glyph)
                gapWidth += glyph.width
                return
            }
            // A wide character is a word of its own; closing punctuation stays with the one before.
            if (!word.isEmpty || cutting) && (lastStandsAlone || glyph.standsAlone) && !LineBreaker.noLineStart.contains(glyph.character) && !glyph.joinsPrevious {
                finishWord()
            }
            lastStandsAlone = glyph.standsAlone
            if cutting {
                placeCut(glyph)
                return
            }
            word.append(glyph)
            wordWidth += glyph.width
            if glyph.kind != .text { wordMayBeCut = false }
            if wordHead.count < 12 { wordHead.append(glyph.character) }
            // Wider than any line, and known not to be a URL: it will be cut, so place it now.
            if wordWidth > width && wordMayBeCut && (wordHead.count >= 12 || word.count > 12) && !Self.looksLikeURL(wordHead) {
                beginCutting()
            }
        }

        /// The end of a line of the source: what is pending is placed, trailing spaces dropped;
        /// the next line begins at offset `next`.
        mutating func endSourceLine(next: Int) {
            finishWord()
            endLine()
            line = LineBuilder(begun: next)
        }

        private mutating func finishWord() {
            defer {
                word.removeAll(keepingCapacity: true)
                wordWidth = 0
                wordHead = ""
                wordMayBeCut = true
                cutting = false
            }
            if cutting { return }
            guard !word.isEmpty else { return }
            if line.width + gapWidth + wordWidth <= available {
                placeGap()
                place(word)
                return
            }
            if hasWord {
                endLine()
            } else if wordWidth <= width && available < width {
                // The short first line (after a label) cannot hold it; a whole line can.
                endLine()
            }
            dropGap()
            if wordWidth <= available || !wordMayBeCut || Self.looksLikeURL(wordHead) {
                // Too wide even alone: a URL or code is never cut, it overflows the line.
                place(word)
            } else {
                for glyph in word { placeCut(glyph) }
            }
        }

        private mutating func beginCutting() {
            if hasWord { endLine() }
            dropGap()
            cutting = true
            for glyph in word { placeCut(glyph) }
            word.removeAll(keepingCapacity: true)
        }

        private mutating func placeCut(_ glyph: Glyph) {
            if line.width > 0 && line.width + glyph.width > available { endLine() }
            line.append(glyph)
            hasWord = true
        }

        private mutating func place(_ glyphs: [Glyph]) {
            for glyph in glyphs { line.append(glyph) }
            hasWord = true
        }

        private mutating func placeGap() {
            for glyph in gap { line.append(glyph) }
            dropGap()
        }

        private mutating func dropGap() {
            gap.removeAll(keepingCapacity: true)
            gapWidth = 0
        }

        private mutating func endLine() {
            lines.append(line.finished())
            line = LineBuilder(begun: line.end)
            hasWord = false
            available = width
            dropGap()
        }

        static func looksLikeURL(_ head: String) -> Bool {
            head.hasPrefix("http://") || head.hasPrefix("https://") || head.hasPrefix("www.") || head.hasPrefix("file://")
                || head.hasPrefix("ftp://") || head.hasPrefix("mailto:")
        }
    }

    /// A line made glyph by glyph, gathered into runs.
    private struct LineBuilder {
        private var line = StyledLine()
        private var text = ""
        private var textWidth = 0
        private var style = TextStyle.plain
        private var kind = StyledRun.Kind.text
        /// The offset after the last glyph placed.
        private(set) var end: Int
        private var placedAny = false

        /// A line that starts at offset `begun` unless a glyph is placed on it.
        init(begun: Int) {
            end = begun
            line.position.offset = begun
        }

        var width: Int { line.width + textWidth }

        mutating func append(_ glyph: Glyph) {
            if !placedAny {
                placedAny = true
                line.position.offset = glyph.index
            }
            end = glyph.index + 1
            if !text.isEmpty && (glyph.style != style || glyph.kind != kind) { flush() }
            style = glyph.style
            kind = glyph.kind
            text.append(glyph.character)
            textWidth += glyph.width
        }

        private mutating func flush() {
            line.append(text, style: style, kind: kind, width: textWidth)
            text = ""
            textWidth = 0
        }

        mutating func finished() -> StyledLine {
            flush()
            return line
        }
    }
}
