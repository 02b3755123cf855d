@preconcurrency import CCmark
import Synchronization
import TerminalIO

/// Tables laid out to a width: narrowed columns with wrapped cells, else a record per row.
extension MarkdownRenderer {
    /// Columns aligned by display width, so Chinese and emoji line up; a cell's line breaks
    /// become spaces. A table wider than `width` has its wide columns narrowed and their cells
    /// wrapped inside them; one that cannot fit even so (no column may be narrower than its
    /// longest word) is shown a record per row, as `column: value` lines. Each element is one
    /// row of the table (the header's rule with it), in the lines it takes.
    static func table(_ rows: [[[StyledRun]]], _ alignments: [MarkdownBlock.TableAlignment], width: Int) -> [[StyledLine]] {
        let columns = alignments.count
        guard columns > 0, !rows.isEmpty else { return [] }
        let cells = rows.map { row in (0..<columns).map { index -> [StyledRun] in
            index < row.count ? row[index].map { StyledRun($0.text.flattened(), style: $0.style, kind: $0.kind) } : []
        } }
        let natural = (0..<columns).map { index in cells.map { DisplayWidth.of($0[index].map(\.text).joined()) }.max() ?? 0 }
        let separatorWidth = 3 * (columns - 1)
        if natural.reduce(0, +) + separatorWidth <= width {
            return grid(cells, alignments, widths: natural)
        }
        // The narrowest each column may be: its longest word, and a few columns for short text.
        let floor = (0..<columns).map { index in
            min(natural[index], max(min(natural[index], 6), cells.map { longestWord($0[index]) }.max() ?? 0))
        }
        let room = width - separatorWidth
        guard floor.reduce(0, +) <= room else { return records(cells, width: width) }
        // What is left goes, a column at a time, to the column that lacks the most.
        var widths = floor
        var left = room - floor.reduce(0, +)
        while left > 0, let index = (0..<columns).filter({ widths[$0] < natural[$0] }).max(by: { natural[$0] - widths[$0] < natural[$1] - widths[$1] }) {
            widths[index] += 1
            left -= 1
        }
        return grid(cells, alignments, widths: widths)
    }

    /// The widest run of characters a line may not break inside (a wide character stands alone).
    private static func longestWord(_ runs: [StyledRun]) -> Int {
        var longest = 0
        var current = 0
        for character in runs.map(\.text).joined() {
            let cells = DisplayWidth.of(character)
            if character == " " { current = 0 } else if cells == 2 { current = 0; longest = max(longest, 2) } else {
                current += cells
                longest = max(longest, current)
            }
        }
        return longest
    }

    /// Rows of cells in columns of `widths`, each cell wrapped inside its column.
    private static func grid(_ cells: [[[StyledRun]]], _ alignments: [MarkdownBlock.TableAlignment], widths: [Int]) -> [[StyledLine]] {
        let separator = StyledLine(" │ ", style: frameStyle)
        let marker = StyledRun("…", style: frameStyle)
        var rows: [[StyledLine]] = []
        for (number, row) in cells.enumerated() {
            let wrapped = row.enumerated().map { index, runs -> [StyledLine] in
                let styled = number == 0 ? runs.map { StyledRun($0.text, style: $0.style.within(TextStyle(bold: true)), kind: $0.kind) } : runs
                let lines = LineBreaker.wrap(styled, firstWidth: widths[index], width: widths[index])
                // Nothing wider than its column, even a word the breaker keeps whole.
                return (lines.isEmpty ? [StyledLine.empty] : lines).map { $0.clipped(to: widths[index], marker: marker) }
            }
            let height = wrapped.map(\.count).max() ?? 1
            var lines: [StyledLine] = []
            for rowLine in 0..<height {
                var line = StyledLine()
                for (index, cellLines) in wrapped.enumerated() {
                    if index > 0 { line.append(separator) }
                    let cell = rowLine < cellLines.count ? cellLines[rowLine] : StyledLine.empty
                    let space = widths[index] - cell.width
                    let before = alignments[index] == .right ? space : alignments[index] == .center ? space / 2 : 0
                    line.append(String(repeating: " ", count: before))
                    line.append(cell)
                    line.append(String(repeating: " ", count: space - before))
                }
                lines.append(line)
            }
            if number == 0 {
                lines.append(StyledLine(widths.map { String(repeating: "─", count: $0) }.joined(separator: "─┼─"), style: frameStyle))
            }
            rows.append(lines)
        }
        return rows
    }

    /// A record per row: each cell on a line of its own after its column's name, wrapped under
    /// it; a blank line between records.
    private static func records(_ cells: [[[StyledRun]]], width: Int) -> [[StyledLine]] {
        let names = cells[0].map { StyledLine($0.map(\.text).joined(), style: TextStyle(bold: true)) + StyledLine(": ") }
        // The header row takes no lines of its own, but keeps its place: row N is element N in both layouts.
        return [[]] + cells.dropFirst().enumerated().map { number, row in
            var lines: [StyledLine] = number > 0 ? [.empty] : []
            for (index, runs) in row.enumerated() {
                let name = names[index]
                let wrapped = LineBreaker.wrap(runs, firstWidth: max(1, width - name.width), width: max(1, width - 2))
                for (line, text) in (wrapped.isEmpty ? [StyledLine.empty] : wrapped).enumerated() {
                    lines.append(line == 0 ? name + text : StyledLine("  ") + text)
                }
            }
            return lines
        }
    }
}
