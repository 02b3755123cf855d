import TerminalIO
import Testing
@testable import ChatUI
@testable import Conversations
@testable import Rendering

private func reply(_ text: String, interrupted: Bool = false, total: Int? = nil, finish: FinishReason? = .complete) -> ChatReply {
    ChatReply(text: text, finish: interrupted ? nil : finish, usage: total.map { TokenUsage(totalTokens: $0) }, interrupted: interrupted)
}

@Suite struct ConversationTests {
    @Test func requestCarriesWholeHistoryAndOptions() {
        var conversation = Conversation(model: "m", systemPrompt: "terse", generation: GenerationOptions(temperature: 0.2))
        conversation.record(user: "one", reply: reply("uno"))
        let request = conversation.request(for: "two")
        #expect(request.messages.map(\.role) == [.user, .model, .user])
        #expect(request.messages.map(\.text) == ["one", "uno", "two"])
        #expect(request.system == "terse")
        #expect(request.options.temperature == 0.2)
        #expect(Conversation(model: "m", systemPrompt: "", generation: GenerationOptions()).request(for: "x").system == nil)
    }

    @Test func interruptedTurnsKeepOnlyTheirPartialText() {
        var conversation = Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions())
        conversation.record(user: "stopped early", reply: reply("", interrupted: true))
        #expect(conversation.turns.isEmpty)
        conversation.record(user: "stopped later", reply: reply("half an ans", interrupted: true, total: 10))
        #expect(conversation.turns == [Conversation.Turn(user: "stopped later", model: "half an ans", interrupted: true, modelName: "m")])
        #expect(conversation.sessionTokens == 10)
        #expect(conversation.markdown(provider: "Parrot").contains("## Parrot\n\nhalf an ans\n\n_[interrupted]_"))
    }

    /// The one rule for cut-off replies: cut at the token limit with text, kept; filtered,
    /// blocked or ended otherwise, not kept and not counted; thinking that wrote nothing, not kept.
    @Test func aReplyCutAtItsLengthIsKeptAndAFilteredOneIsNot() {
        var conversation = Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions())
        for finish: FinishReason in [.safety, .recitation, .blocked("SAFETY"), .other("OTHER")] {
            #expect(conversation.record(user: "no", reply: reply("some text", total: 5, finish: finish)) == nil)
        }
        #expect(conversation.record(user: "thinking", reply: reply("", total: 5, finish: .maxTokens)) == nil)
        #expect(conversation.turns.isEmpty && conversation.sessionTokens == 0)
        #expect(conversation.record(user: "long", reply: reply("cut sh", total: 7, finish: .maxTokens))?.model == "cut sh")
        #expect(conversation.record(user: "empty", reply: reply("", finish: nil)) != nil)
        #expect(conversation.turns.count == 2 && conversation.sessionTokens == 7)
    }

    @Test func undoAndClear() {
        var conversation = Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions())
        conversation.record(user: "a", reply: reply("1"))
        conversation.record(user: "b", reply: reply("2"))
        #expect(conversation.undo()?.user == "b" && conversation.turns.count == 1)
        conversation.clear()
        #expect(conversation.turns.isEmpty && conversation.undo() == nil)
    }
}

@Suite struct SecretScannerTests {
    @Test(arguments: [
        ("k=AIzaSyUnitTest-0123456789abcdefghijklmn;", "a Google API key (AIza…klmn)"),
        ("my new key AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp works?", "a Google auth key (AQ.A…MhKp)"),
        ("key: AQ.Ab8RN6K2x9vQp3LmTzYw0cHsJd5fGuE4bQiRtYnXoCzM.hKpL7.", "a Google auth key (AQ.A…KpL7)"),
        ("Authorization: Bearer ya29.a0AfB_byC1234567890abcdefghij", "a Google access token (ya29…ghij)"),
        ("token ghp_0123456789abcdefghijABCDEFGHIJ012345 here", "a GitHub token (ghp_…2345)"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "a GitHub token (gith…wxyz)"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345", "an OpenAI key (sk-p…2345)"),
        ("sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "an OpenAI key (sk-a…ABCD)"),
        ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "an AWS access key (AKIA…MPLE)"),
        ("xoxb-123456789012-abcdefghijkl", "a Slack token (xoxb…ijkl)"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----", "a private key (-----BEGIN … PRIVATE KEY-----)"),
        ("{\"type\": \"service_account\", \"private_key\" : \"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\"}",
         "a service account's private key (\"private_key\") (-----BEGIN … PRIVATE KEY-----)"),
        ("{\"refresh_token\": \"1//0gAbCdEf-GhIjKlMnOp\", \"type\": \"authorized_user\"}",
         "an OAuth refresh token (\"refresh_token\", as in gcloud's credentials) (1//0…MnOp)"),
        ("code: 7k2m-9qxd-a1b2-c3d4-e5f6-g7h8-j9k0-mnpq.", "a gemvault recovery code (7k2m…mnpq)"),
    ])
    func credentialShapesAreFoundAndMasked(text: String, expected: String) {
        #expect(SecretScanner.findings(in: text).map(\.description) == [expected])
    }

    @Test func ordinaryTextIsNotACredential() {
        #expect(SecretScanner.findings(in: "AIza is a prefix, AIzaShort, sk-short, task-force, AKIA lowercase akiaiosfodnn7example").isEmpty)
        #expect(SecretScanner.findings(in: "the risk-management-framework-document-for-2026 plan").isEmpty)
        #expect(SecretScanner.findings(in: "auth keys start with AQ. and AQ.short is too short; see AQ.md").isEmpty)
        #expect(SecretScanner.findings(in: "\"refresh_token\": \"\", \"private_key\": null, ABCD-EFGH-JKMN-PQRS-TVWX-YZ01-2345-678I").isEmpty)
    }

    @Test func aPDFsUncompressedTextIsScannedAndItsCompressedStreamsAreLeftOut() {
        let key = "AIzaSyUnitTest-0123456789abcdefghijklmn"
        let pdf = Array("%PDF-1.4\n1 0 obj\n<< /Length 40 >>\nstream\nBT (see \(key)) Tj ET\nendstream\nendobj\n".utf8)
            + Array("2 0 obj\n<< /Length 8 /Filter /FlateDecode >>\nstream\n".utf8) + [0x78, 0x9c, 0xff, 0x00, 0x41, 0x49, 0x7a, 0x61]
            + Array("\nendstream\nendobj\n%%EOF\n".utf8)
        let attachment = Attachment(name: "a.pdf", size: pdf.count, sha256: "", mimeType: "application/pdf", content: .binary(pdf))
        let text = AttachmentReader.scannedText(attachment) ?? ""
        #expect(SecretScanner.findings(in: text).map(\.description) == ["a Google API key (AIza…klmn)"])
        // The compressed stream's bytes (which spell "AIza" here) are not in the scanned text.
        #expect(text.split(separator: "AIza", omittingEmptySubsequences: false).count == 2 && text.contains("/Filter /FlateDecode"))
    }
}

@Suite struct LiveLabelTests {
    /// The live reply's label reads and measures as the prompt's: it takes nine columns before
    /// the first line, which is shortened by as much.
    @Test func theModelsLabelTakesItsColumnsFromTheFirstLine() {
        let label = ChatREPL.liveModelLabel("gemini ›")
        #expect(label.plainText == "gemini › " && label.width == 9)
        #expect(label.encoded(styled: true).contains("\u{1B}[1;90mgemini ›"))
        var now = 0.0
        let live = LiveReply(markdown: MarkdownRenderer(styled: false), frame: .labelled(label),
                             size: { TerminalSize(columns: 20, rows: 10) }, reflows: true, clock: { now += 1; return now })
        var screen = ScreenReplay(size: TerminalSize(columns: 20, rows: 10))
        screen.feed(live.feed("one two three four") + live.finish())
        #expect(screen.lines == ["gemini › one two", "three four", ""])
    }
}

/// The chat through the provider seam: any `ChatProvider` drives it, and what a turn keeps
/// follows the one rule for cut-off replies.
@Suite struct ProviderSeamTests {
    struct Refusal: ChatFailure {
        let kind = ChatErrorKind.refused
        let message: String
        let hint: String? = nil
        let status: Int? = nil
        let reason: String
    }

    /// A provider that answers from a script and remembers what it was asked.
    final class ScriptedProvider: ChatProvider {
        var answers: [(text: String, finish: FinishReason)]
        var requests: [ChatRequest] = []
        init(_ answers: [(text: String, finish: FinishReason)]) { self.answers = answers }
        let displayName = "Scripted"
        let capabilities = ProviderCapabilities()

        func checkModelName(_ name: String) throws {
            if name.contains(" ") { throw Refusal(message: "'\(name)' is not a model name", reason: "invalid-model") }
        }
        func stream(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply {
            requests.append(request)
            let answer = answers.removeFirst()
            let reply = ChatReply(text: answer.text, finish: answer.finish, usage: TokenUsage(totalTokens: 3))
            if answer.finish != .complete { throw CutReply(failure: Refusal(message: "cut", reason: "\(answer.finish)"), reply: reply) }
            return reply
        }
        func reply(to request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply { try stream(request, model: model, handlers: handlers) }
        func countTokens(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> Int { request.messages.count }
        func chatModels(handlers: StreamHandlers) throws -> [ChatModel] { [ChatModel(name: "scripted")] }
        func modelFacts(_ name: String, handlers: StreamHandlers) throws -> ChatModel { ChatModel(name: name, outputTokenLimit: 100) }
    }

    @Test func aChatTurnKeepsACutReplyAndDropsAFilteredOne() throws {
        let provider = ScriptedProvider([("whole", .complete), ("cut sh", .maxTokens), ("unsafe", .safety), ("again", .complete)])
        let repl = ChatREPL(conversation: Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions()), client: provider,
                            style: Style(enabled: false), interactive: false)
        for message in ["one", "two", "three", "four"] { try repl.send(message) }
        #expect(repl.conversation.turns.map(\.model) == ["whole", "cut sh", "again"])
        // The filtered turn left nothing behind: the last request carries the kept turns only.
        #expect(provider.requests.last?.messages.map(\.text) == ["one", "whole", "two", "cut sh", "four"])
        #expect(repl.conversation.sessionTokens == 9 && provider.isModelName("m") && !provider.isModelName("a b"))
    }
}
