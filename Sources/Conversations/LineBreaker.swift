/// Breaks styled text into lines that fit a width, the way a reader expects prose to wrap:
/// newlines are kept, lines break at spaces (runs of spaces inside a line are kept), Chinese
/// and other wide characters may break between any two (except before closing punctuation),
/// a word wider than the line is cut only as a last resort, and URLs and code words never are.
enum LineBreaker {
    /// One character with what the breaker needs to know about it.
    private struct Glyph {
        let character: Character
        let width: Int
        let run: Int
        var isSpace: Bool
        /// May end a line before it and start one after it, with no space between (wide text).
        let standsAlone: Bool
    }

    /// A word or a gap of spaces: a range of glyphs.
    private struct Piece {
        var range: Range<Int>
        var width: Int
        let isSpace: Bool
        /// A word that may be cut between its characters when it alone is wider than a line.
        let mayCut: Bool
    }

    /// Closing punctuation that must not begin a line (a small part of the Japanese and Chinese rules).
    private static let noLineStart: Set<Character> = ["，", "。", "、", "！", "？", "：", "；", "）", "」", "』", "》", "〉", "】", "〕", "〗", "…", "・", "ー"]

    /// `runs` in lines: the first at most `firstWidth` columns, the others `width`.
    static func wrap(_ runs: [StyledRun], firstWidth: Int, width: Int) -> [StyledLine] {
        let first = max(1, firstWidth)
        let rest = max(1, width)
        var lines: [StyledLine] = []
        var glyphs: [Glyph] = []
        var lineRuns: [StyledRun] = []
        func flushHardLine() {
            lines += breakLine(glyphs, runs: lineRuns, firstWidth: lines.isEmpty ? first : rest, width: rest)
            glyphs.removeAll(keepingCapacity: true)
            lineRuns.removeAll(keepingCapacity: true)
        }
        for run in runs {
            // Inline code that fits a line is one unit: its spaces do not break it.
            let codeFits = run.kind == .code && DisplayWidth.of(run.text) <= rest
            var pieceStart = run.text.startIndex
            var index = run.text.startIndex
            func takeRunPiece(upTo end: String.Index) {
                guard pieceStart < end else { return }
                lineRuns.append(StyledRun(String(run.text[pieceStart..<end]), style: run.style, kind: run.kind))
                let runIndex = lineRuns.count - 1
                for character in lineRuns[runIndex].text {
                    let width = character == "\t" ? 1 : DisplayWidth.of(character)
                    let isSpace = (character == " " || character == "\t") && !codeFits
                    glyphs.append(Glyph(character: character == "\t" ? " " : character, width: width, run: runIndex, isSpace: isSpace,
                                        standsAlone: width == 2 && run.kind == .text))
                }
            }
            while index < run.text.endIndex {
                if run.text[index] == "\n" {
                    takeRunPiece(upTo: index)
                    flushHardLine()
                    pieceStart = run.text.index(after: index)
                }
                index = run.text.index(after: index)
            }
            takeRunPiece(upTo: run.text.endIndex)
        }
        flushHardLine()
        return lines
    }

    /// One line of the source (no newline in it) broken to fit.
    private static func breakLine(_ glyphs: [Glyph], runs: [StyledRun], firstWidth: Int, width: Int) -> [StyledLine] {
        let pieces = self.pieces(glyphs, runs: runs)
        var lines: [StyledLine] = []
        var current: [Range<Int>] = []
        var currentWidth = 0
        var hasWord = false
        var available = firstWidth
        var pendingGap: Piece?
        func endLine() {
            lines.append(line(current, glyphs, runs))
            current = []
            currentWidth = 0
            hasWord = false
            available = width
            pendingGap = nil
        }
        for piece in pieces {
            if piece.isSpace {
                pendingGap = piece
                continue
            }
            let gapWidth = pendingGap?.width ?? 0
            if currentWidth + gapWidth + piece.width <= available {
                if let gap = pendingGap { current.append(gap.range) }
                current.append(piece.range)
                currentWidth += gapWidth + piece.width
                hasWord = true
                pendingGap = nil
                continue
            }
            if hasWord {
                endLine()
            } else if currentWidth + piece.width > available {
                // Indentation that leaves no room for the word is dropped rather than pushing it out.
                current = []
                currentWidth = 0
            }
            pendingGap = nil
            if piece.width <= available - currentWidth || !piece.mayCut {
                current.append(piece.range)
                currentWidth += piece.width
                hasWord = true
                continue
            }
            // A word wider than a whole line: cut between characters, as little as it needs.
            var start = piece.range.lowerBound
            var pieceWidth = 0
            for index in piece.range {
                if currentWidth + pieceWidth + glyphs[index].width > available && (index > start || hasWord) {
                    current.append(start..<index)
                    endLine()
                    start = index
                    pieceWidth = 0
                }
                pieceWidth += glyphs[index].width
            }
            current.append(start..<piece.range.upperBound)
            currentWidth += pieceWidth
            hasWord = true
        }
        // Trailing spaces are dropped: they only make lines wider than they look.
        lines.append(line(current, glyphs, runs))
        return lines
    }

    /// The source line as words and gaps. A wide character is a word of its own (closing
    /// punctuation stays with the one before it); URLs and inline code words may not be cut.
    private static func pieces(_ glyphs: [Glyph], runs: [StyledRun]) -> [Piece] {
        var pieces: [Piece] = []
        var index = 0
        while index < glyphs.count {
            let start = index
            if glyphs[index].isSpace {
                while index < glyphs.count && glyphs[index].isSpace { index += 1 }
                pieces.append(Piece(range: start..<index, width: index - start, isSpace: true, mayCut: false))
                continue
            }
            var width = 0
            var cuttable = true
            repeat {
                width += glyphs[index].width
                if runs[glyphs[index].run].kind != .text { cuttable = false }
                index += 1
                // A wide character ends its word, unless closing punctuation follows it.
                if glyphs[index - 1].standsAlone, index < glyphs.count, !noLineStart.contains(glyphs[index].character) { break }
            } while index < glyphs.count && !glyphs[index].isSpace && !(glyphs[index].standsAlone && !noLineStart.contains(glyphs[index].character))
            let word = glyphs[start..<index]
            if cuttable, word.count > 7, looksLikeURL(word) { cuttable = false }
            pieces.append(Piece(range: start..<index, width: width, isSpace: false, mayCut: cuttable))
        }
        return pieces
    }

    private static func looksLikeURL(_ word: ArraySlice<Glyph>) -> Bool {
        let text = String(word.prefix(12).map(\.character))
        return text.hasPrefix("http://") || text.hasPrefix("https://") || text.hasPrefix("www.") || text.hasPrefix("file://")
            || text.hasPrefix("ftp://") || text.hasPrefix("mailto:")
    }

    private static func line(_ ranges: [Range<Int>], _ glyphs: [Glyph], _ runs: [StyledRun]) -> StyledLine {
        var line = StyledLine()
        var text = ""
        var run = -1
        for range in ranges {
            for glyph in glyphs[range] {
                if glyph.run != run {
                    if run >= 0 { line.append(text, style: runs[run].style, kind: runs[run].kind) }
                    text = ""
                    run = glyph.run
                }
                text.append(glyph.character)
            }
        }
        if run >= 0 { line.append(text, style: runs[run].style, kind: runs[run].kind) }
        return line
    }
}
