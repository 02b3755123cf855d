import Conversations
import TerminalIO
import Testing
@testable import ChatUI

/// What a grounded answer shows under it: sources, searches, pages not read; links written by
/// gemvault only, for http(s) URLs only.
@Suite struct GroundedAnswerTests {
    private func reply() -> ChatReply {
        var reply = ChatReply(text: "Tall.")
        reply.grounding = Grounding(queries: ["höhe turm"], sources: [Grounding.Source(title: "T\u{1B}[31mitle", domain: "t.example", uri: "https://t.example/x"),
                                                                     Grounding.Source(title: nil, domain: "evil.example", uri: "https://evil.example/\u{1B}]8;;x")],
                                    supports: [Grounding.Support(start: 0, end: 5, sources: [0])])
        reply.urlRetrievals = [URLRetrieval(url: "https://ok.example", status: "URL_RETRIEVAL_STATUS_SUCCESS"),
                               URLRetrieval(url: "https://unsafe.example", status: "URL_RETRIEVAL_STATUS_UNSAFE")]
        return reply
    }

    @Test func plainURLsOffATerminalAndNothingThatDrivesIt() {
        let footer = GroundedAnswer.footer(reply(), style: Style(enabled: false), hyperlinks: false)
        #expect(footer == """

            Sources
             [1] T^[[31mitle — t.example
                 https://t.example/x
             [2] evil.example
            Searches
             höhe turm
                 https://www.google.com/search?q=höhe+turm
            Not read
             https://unsafe.example (unsafe)

            """)
    }

    @Test func onATerminalTitlesWrapBetweenWordsAndEachURLHasItsLine() {
        var long = reply()
        long.grounding?.sources[0].title = "A title long enough to wrap twice at thirty columns"
        long.grounding?.queries = ["東京タワー 高さ & more"]
        let footer = GroundedAnswer.footer(long, style: Style(enabled: false), hyperlinks: false, columns: 30)
        #expect(footer == """

            Sources
             [1] A title long enough to
                 wrap twice at thirty
                 columns — t.example
                 https://t.example/x
             [2] evil.example
            Searches
             東京タワー 高さ & more
                 https://www.google.com/search?q=東京タワー+高さ+%26+more
            Not read
             https://unsafe.example (unsafe)

            """)
    }

    @Test func hyperlinksAreOSC8ForWebLinksOnly() {
        let footer = GroundedAnswer.footer(reply(), style: Style(enabled: false), hyperlinks: true)
        #expect(footer.contains("\u{1B}]8;;https://t.example/x\u{1B}\\T^[[31mitle\u{1B}]8;;\u{1B}\\"))
        #expect(footer.components(separatedBy: "\u{1B}]8;;").count - 1 == 4)
        #expect(GroundedAnswer.webLink("javascript:alert(1)") == nil && GroundedAnswer.webLink("https://a b") == nil)
        #expect(GroundedAnswer.text(reply()) == "Tall.[1]")
    }

    @Test func nothingIsAddedToAnAnswerThatWasNotGrounded() {
        #expect(GroundedAnswer.footer(ChatReply(text: "x"), style: Style(enabled: true), hyperlinks: true) == "")
        #expect(GroundedAnswer.warning(ChatReply(text: "x")) == nil)
    }
}
