import CSystemShims
import Rendering
import SystemIO
import TerminalIO

/// Output taller than the terminal goes through the user's pager (`$PAGER`, else `less -FRX`),
/// as git does. The pager is started without a shell and with only descriptors 0, 1 and 2.
enum Pager {
    static let defaultCommand = ["less", "-FRX"]

    /// The pager's argv from `$PAGER`, split at white space (no shell, so no quoting); nil to
    /// print directly (`$PAGER` empty or `cat`).
    static func command(_ environment: [String: String]) -> [String]? {
        guard let value = environment["PAGER"] else { return defaultCommand }
        let words = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        return words.isEmpty || words == ["cat"] ? nil : words
    }

    /// Writes `text` to stdout, through the pager when stdout is a terminal that it does not fit.
    /// `environment` is the pager's (`Context.helperEnvironment`: no API key).
    static func show(_ text: String, environment: [String: String]) throws(StandardOutputFailure) {
        guard Terminal.stdoutIsTerminal, let rows = Terminal.rows, let columns = Terminal.columns,
              rowsNeeded(text, columns: columns) >= rows, let argv = command(environment) else {
            try Console.out(text)
            return
        }
        let pager: ChildProcess
        do {
            pager = try ProcessSpawner.spawn(argv, environment: environment, input: .pipe)
        } catch {
            Console.warning("the pager '\(argv.joined(separator: " "))' could not start (\(error.reason)); printing directly")
            try Console.out(text)
            return
        }
        // Ctrl-C is the pager's to handle; gemvault only waits for it to end.
        gv_interrupt_install()
        defer { gv_interrupt_uninstall() }
        // A pager quit before the end (q in less) closes the pipe: EPIPE, nothing to report.
        try? pager.standardInput?.writeAll(text)
        pager.closeStandardInput()
        _ = pager.wait()
    }

    /// Terminal rows `text` takes: each line's display width, colours left out, over the width.
    static func rowsNeeded(_ text: String, columns: Int) -> Int {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast(text.hasSuffix("\n") ? 1 : 0).reduce(0) { rows, line in
            let width = DisplayWidth.of(withoutColours(line))
            return rows + max(1, (width + columns - 1) / columns)
        }
    }

    /// The text without `ESC [ … letter` sequences (the styles gemvault adds).
    static func withoutColours(_ line: Substring) -> String {
        var result = ""
        var inSequence = false
        var afterEscape = false
        for scalar in line.unicodeScalars {
            if afterEscape {
                afterEscape = false
                inSequence = scalar == "["
                continue
            }
            if inSequence {
                if (0x40...0x7E).contains(scalar.value) { inSequence = false }
                continue
            }
            if scalar == "\u{1B}" { afterEscape = true; continue }
            result.unicodeScalars.append(scalar)
        }
        return result
    }
}
