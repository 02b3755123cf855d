import Testing
@testable import TerminalIO

@Suite struct EscapeNeutralizerTests {
    @Test func controlSequencesBecomeVisible() {
        #expect(EscapeNeutralizer.neutralize("\u{1B}[31mred\u{1B}[0m") == "^[[31mred^[[0m")
        #expect(EscapeNeutralizer.neutralize("\u{1B}]52;c;ZXZpbA==\u{07}") == "^[]52;c;ZXZpbA==^G")
        #expect(EscapeNeutralizer.neutralize("a\u{9B}2J") == "a\\u{9b}2J")
        #expect(EscapeNeutralizer.neutralize("over\rwrite") == "over^Mwrite")
        #expect(EscapeNeutralizer.neutralize("abc\u{202E}fed") == "abc\\u{202e}fed")
        // Characters that draw nothing are shown, so the screen carries the whole text.
        #expect(EscapeNeutralizer.neutralize("rm -rf ~/\u{200B}tmp\u{FEFF}\u{2060}") == "rm -rf ~/\\u{200b}tmp\\u{feff}\\u{2060}")
        #expect(EscapeNeutralizer.neutralize("pa\u{200D}ss \u{E0041}\u{E0042}") == "pa\\u{200d}ss \\u{e0041}\\u{e0042}")
        // Joiners that shape emoji and scripts, and the tags of a flag, stay.
        let family = "👨\u{200D}👩\u{200D}👧", england = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}"
        #expect(EscapeNeutralizer.neutralize(family + " " + england) == family + " " + england)
    }

    /// The byte scan that skips the work decides as the scalar walk would: every scalar the
    /// walk changes or looks around is caught, and text it keeps comes back as it was.
    @Test func theByteScanAgreesWithTheWalkOnEveryCharacterItCouldMeet() {
        let special: [UInt32] = Array(0x00...0x20) + [0x7E, 0x7F] + Array(0x80...0xA0) + [0xE9, 0x061B, 0x061C, 0x061D, 0x180D, 0x180E, 0x180F]
            + Array(0x2009...0x2030) + Array(0x205F...0x206A) + [0x2014, 0x2026, 0xFEFE, 0xFEFF, 0xFF01, 0x1F3F4, 0x1F600, 0xE0000, 0xE0041, 0xE007F, 0xE0100]
        for value in special {
            let scalar = Unicode.Scalar(value)!
            for text in ["a\(scalar)b", "\(scalar)", "é\(scalar)é", "\(scalar)\n"] {
                var context = EscapeNeutralizer.Context()
                let scalars = Array(text.unicodeScalars)
                let walked = String(EscapeNeutralizer.neutralize(scalars, upTo: scalars.count, context: &context))
                #expect(EscapeNeutralizer.neutralize(text) == walked, "U+\(String(value, radix: 16))")
                if walked != text { #expect(EscapeNeutralizer.needsChange(text), "U+\(String(value, radix: 16))") }
            }
        }
        #expect(!EscapeNeutralizer.needsChange("Plain text — “quoted”, café, 日本語, 🚀…\n\tindented"))
    }

    /// Joiners, CRLF and a flag's tags in a stream: split at every scalar (and at every pair of
    /// scalars), the pieces neutralised one by one read as the whole text neutralised at once.
    @Test func aStreamSplitAnywhereReadsAsTheWholeText() {
        let family = "👨\u{200D}👩\u{200D}👧", hindi = "क्\u{200D}ष", persian = "می\u{200C}خواهم"
        let england = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}"
        let text = family + " " + hindi + " " + persian + " x\u{200D}y \u{200D}" + england + "\r\nend\r"
        let whole = EscapeNeutralizer.neutralize(text)
        #expect(!whole.contains("\\u{200d}\u{1F469}") && whole.contains(family) && whole.contains(persian))
        let scalars = Array(text.unicodeScalars)
        func streamed(_ cuts: [Int]) -> String {
            var stream = StreamingNeutralizer()
            var output = ""
            var start = 0
            for cut in cuts + [scalars.count] {
                output += stream.feed(String(String.UnicodeScalarView(scalars[start..<cut])))
                start = cut
            }
            return output + stream.finish()
        }
        for first in 0...scalars.count {
            #expect(streamed([first]) == whole, "split at \(first)")
            for second in first...scalars.count where second % 3 == first % 3 {
                #expect(streamed([first, second]) == whole, "split at \(first) and \(second)")
            }
        }
        // One scalar at a time, too.
        #expect(streamed(Array(1..<scalars.count)) == whole)
    }

    @Test func ordinaryTextIsUntouched() {
        let text = "tab\there\nline two — 你好 🚀\r\n"
        #expect(EscapeNeutralizer.neutralize(text) == "tab\there\nline two — 你好 🚀\n")
    }
}

@Suite struct StyleTests {
    @Test func colourDecision() {
        #expect(Style.decide(mode: .auto, environment: [:], isTerminal: true).enabled)
        #expect(!Style.decide(mode: .auto, environment: ["NO_COLOR": "1"], isTerminal: true).enabled)
        #expect(!Style.decide(mode: .auto, environment: [:], isTerminal: false).enabled)
        #expect(!Style.decide(mode: .auto, environment: ["TERM": "dumb"], isTerminal: true).enabled)
        #expect(Style.decide(mode: .always, environment: ["NO_COLOR": "1"], isTerminal: false).enabled)
        #expect(!Style.decide(mode: .never, environment: [:], isTerminal: true).enabled)
        #expect(Style(enabled: false).blue("x") == "x" && Style(enabled: true).blue("x") == "\u{1B}[34mx\u{1B}[0m")
    }
}

@Suite struct SecretInputTests {
    @Test func descriptorReadsOneLineAndLeavesTheRest() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let text = Array("first secret\r\nsecond\n".utf8)
        _ = text.withUnsafeBytes { write(fds[1], $0.baseAddress!, $0.count) }
        close(fds[1])
        let first = try SecretInput.read(from: .fileDescriptor(fds[0]), prompt: "")
        let second = try SecretInput.read(from: .fileDescriptor(fds[0]), prompt: "")
        #expect(first.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "first secret")
        #expect(second.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "second")
        #expect(throws: SecretInputError.empty) { try SecretInput.read(from: .fileDescriptor(fds[0]), prompt: "") }
        close(fds[0])
    }

    /// Asking whether there is a terminal, however often, opens /dev/tty once in the process;
    /// a prompt then reads from that descriptor (the e2e test counts a prompt's opens).
    @Test func theTerminalIsOpenedOnce() {
        let first = SecretInput.hasTerminal
        #expect(SecretInput.hasTerminal == first && TerminalQuestion.available == first)
        #expect(ControllingTerminal.opens == 1)
    }
}

#if canImport(Glibc)
import Glibc
#endif

@Suite struct TerminalClipboardTests {
    @Test func theSequenceCarriesOnlyBase64() {
        #expect(TerminalClipboard.sequence(for: "hi\u{1B}") == "\u{1B}]52;c;aGkb\u{07}")
    }

    @Test func terminalsWithoutTheEscapeAreRefused() {
        #expect(TerminalClipboard(environment: ["TERM": "xterm-256color"], outputIsTerminal: true).refusal == nil)
        #expect(TerminalClipboard(environment: ["TERM": "xterm-256color"], outputIsTerminal: false).refusal != nil)
        #expect(TerminalClipboard(environment: ["TERM": "dumb"], outputIsTerminal: true).refusal != nil)
        #expect(TerminalClipboard(environment: ["TERM_PROGRAM": "Apple_Terminal"], outputIsTerminal: true).refusal != nil)
    }
}
