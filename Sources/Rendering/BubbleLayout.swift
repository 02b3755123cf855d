/// The seed's chat screen drawn in a terminal: the user's messages in right-aligned blue
/// bubbles with their avatar on the right, the model's in left-aligned gray bubbles with its
/// avatar on the left. The user's bubble fits its text, up to 70 % of the width; the model's
/// fits its reply, up to the width but for a margin (a live reply grows its box while it is
/// redrawn, and takes the widest box once it is taller than the part of the window redrawn).
/// Every line is measured by display width and is never wider than `width`; what cannot be
/// wrapped (a code line, a table row, a URL) is clipped at the frame with a `…`.
public struct BubbleLayout: Sendable {
    public let width: Int
    public let color: Bool
    static let userAvatar = "🧑"
    static let modelAvatar = "🤖"
    /// The avatar (two columns) and a space.
    static let avatarColumns = 3

    public init(width: Int, color: Bool) {
        self.width = max(20, width)
        self.color = color
    }

    public enum Speaker: Sendable { case user, model }

    /// The widest box a speaker's bubble may have.
    func maxBoxWidth(_ speaker: Speaker) -> Int {
        switch speaker {
        case .user: return min(Int(Double(width) * 0.7), width - Self.avatarColumns)
        case .model: return width - Self.avatarColumns - max(2, width / 10)
        }
    }

    /// Columns for text inside the widest box of `speaker`.
    public func contentWidth(_ speaker: Speaker) -> Int { maxBoxWidth(speaker) - 4 }

    private func frameStyle(_ speaker: Speaker) -> TextStyle { TextStyle(color: speaker == .user ? 34 : 90) }
    private static let clipMarker = StyledRun("…", style: TextStyle(dim: true))

    // MARK: Frame lines

    /// `╭──╮` with the avatar beside it.
    func top(_ speaker: Speaker, box: Int) -> StyledLine {
        placed(StyledLine("╭" + String(repeating: "─", count: box - 2) + "╮", style: frameStyle(speaker)), speaker, box: box, avatar: true)
    }

    /// `│ text │`, the text clipped to the box.
    func middle(_ content: StyledLine, _ speaker: Speaker, box: Int) -> StyledLine {
        let inner = box - 4
        var text = content.clipped(to: inner, marker: Self.clipMarker).padded(to: inner)
        // The user's plain text takes the bubble's blue; the model's keeps its markdown styles.
        if speaker == .user { text = text.within(frameStyle(.user)) }
        let line = StyledLine("│ ", style: frameStyle(speaker)) + text + StyledLine(" │", style: frameStyle(speaker))
        return placed(line, speaker, box: box, avatar: false)
    }

    func bottom(_ speaker: Speaker, box: Int) -> StyledLine {
        placed(StyledLine("╰" + String(repeating: "─", count: box - 2) + "╯", style: frameStyle(speaker)), speaker, box: box, avatar: false)
    }

    private func placed(_ line: StyledLine, _ speaker: Speaker, box: Int, avatar: Bool) -> StyledLine {
        switch speaker {
        case .model:
            return StyledLine(avatar ? Self.modelAvatar + " " : String(repeating: " ", count: Self.avatarColumns)) + line
        case .user:
            let left = StyledLine(String(repeating: " ", count: max(0, width - box - Self.avatarColumns)))
            return left + line + StyledLine(avatar ? " " + Self.userAvatar : String(repeating: " ", count: Self.avatarColumns))
        }
    }

    // MARK: Whole bubbles

    /// A bubble around lines laid out for it; the user's fits its widest line.
    public func bubble(lines: [StyledLine], from speaker: Speaker) -> [StyledLine] {
        let content = lines.isEmpty ? [StyledLine.empty] : lines
        var box = maxBoxWidth(speaker)
        if speaker == .user { box = min(box, (content.map(\.width).max() ?? 0) + 4) }
        return [top(speaker, box: box)] + content.map { middle($0, speaker, box: box) } + [bottom(speaker, box: box)]
    }

    /// Plain text (the user's message) laid out for a bubble: its line breaks and spaces kept.
    public func messageLines(_ text: String, from speaker: Speaker) -> [StyledLine] {
        LineBreaker.wrap([StyledRun(text)], firstWidth: contentWidth(speaker), width: contentWidth(speaker))
    }

    /// The lines of one bubble of plain text, for a terminal (coloured when `color`).
    public func bubble(_ text: String, from speaker: Speaker) -> [String] {
        bubble(lines: messageLines(text, from: speaker), from: speaker).map { $0.encoded(styled: color) }
    }

    /// One exchange: the user's bubble, then the reply's (already laid out for it), each
    /// followed by a blank line; an interrupted reply is marked under its bubble.
    public func exchange(user: String, reply: [StyledLine], interrupted: Bool = false) -> [StyledLine] {
        var lines = bubble(lines: messageLines(user, from: .user), from: .user) + [.empty] + bubble(lines: reply, from: .model)
        if interrupted { lines.append(StyledLine(String(repeating: " ", count: Self.avatarColumns)) + StyledLine("[interrupted]", style: TextStyle(color: 33))) }
        return lines + [.empty]
    }

    /// A whole conversation, a blank line between bubbles; the replies rendered from markdown
    /// by `markdown`, or shown as plain text without it.
    public func render(_ turns: [(user: String, model: String)], markdown: MarkdownRenderer? = nil) -> String {
        let lines = turns.flatMap { turn in
            exchange(user: turn.user, reply: markdown?.lines(turn.model, width: contentWidth(.model)) ?? messageLines(turn.model, from: .model))
        }
        return lines.map { $0.encoded(styled: color) }.joined(separator: "\n") + (lines.isEmpty ? "" : "\n")
    }
}
