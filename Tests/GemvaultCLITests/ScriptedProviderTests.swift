import Conversations
import Foundation
import GemvaultCLI
import GemvaultTesting
import Testing

/// `ask` and `chat` driven through the CLI's entry with a second provider (GemvaultTesting's
/// `ScriptedProvider`): what the CLI prints, what it asks the provider, and the options a
/// provider without a capability refuses before anything is sent.
@Suite(.serialized) struct ScriptedProviderTests {
    static let key = "AQ.Scripted-0123456789abcdefghijklmnopqrstuvwxyz012345"

    /// An isolated user with a key in the environment and no vault.
    final class User {
        let folder = TemporaryFolder("scripted")
        var environment: [String: String] {
            ["HOME": folder.path, "XDG_DATA_HOME": folder.appending("data"), "XDG_CONFIG_HOME": folder.appending("config"),
             "XDG_STATE_HOME": folder.appending("state"), "XDG_RUNTIME_DIR": folder.path, "LANG": "C.UTF-8", "GEMINI_API_KEY": ScriptedProviderTests.key]
        }

        func run(_ arguments: [String], provider: ScriptedProvider, stdin: String = "") -> StandardStreams.Captured<Int32> {
            let choice = ProviderChoice(build: { _ in provider }, checkModelName: provider.checkModelName)
            return StandardStreams.capture(stdin: stdin) { GemvaultMain.run(arguments: arguments, environment: environment, provider: choice) }
        }
    }

    static func fixture() -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/scripted-replies.json").path
    }

    @Test func askPrintsTheScriptedReplyAndSendsThePromptToThatProvider() throws {
        let provider = try ScriptedProvider(fixture: Self.fixture())
        let run = User().run(["ask", "--no-save", "--model", "scripted-1", "What", "is", "the", "capital?"], provider: provider)
        #expect(run.result == 0, "\(run.stderr)")
        #expect(run.stdout == "Paris is the capital of France.\n")
        let asked = try #require(provider.asked.first)
        #expect(provider.asked.count == 1 && asked.model == "scripted-1" && asked.streamed)
        #expect(asked.request.messages.map(\.text) == ["What is the capital?"])
        // A provider that takes no `store` is said so, by the CLI asking it, not assumed to be Gemini.
        #expect(run.stderr.contains("does not take \"store\""))
    }

    @Test func askJSONKeepsItsUsageNamesWhateverTheProvider() throws {
        let provider = try ScriptedProvider(fixture: Self.fixture())
        let run = User().run(["ask", "--no-save", "--json", "--model", "scripted-1", "capital?"], provider: provider)
        #expect(run.result == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let usage = try #require(object?["usage"] as? [String: Any])
        #expect(usage["promptTokenCount"] as? Int == 7 && usage["candidatesTokenCount"] as? Int == 6 && usage["totalTokenCount"] as? Int == 13)
        #expect(object?["text"] as? String == "Paris is the capital of France." && object?["model"] as? String == "scripted-1")
    }

    @Test(arguments: [
        (["--search"], "--search (or the 'search' setting): Scripted cannot search the web"),
        (["--url-context"], "--url-context: Scripted cannot read web pages"),
        (["--code"], "--code: Scripted cannot run code"),
        (["--think", "low"], "--think (or the 'thinking' setting): Scripted takes no thinking level"),
        (["--think-budget", "100"], "--think-budget: Scripted takes no thinking budget"),
        (["--thoughts"], "--thoughts (or the 'show_thoughts' setting): Scripted sends no thought summaries"),
    ])
    func anOptionTheProviderCannotHonourIsAUsageErrorBeforeAnythingIsSent(options: [String], message: String) throws {
        let provider = try ScriptedProvider(fixture: Self.fixture())
        let run = User().run(["ask", "--no-save", "--model", "scripted-1"] + options + ["capital?"], provider: provider)
        #expect(run.result == 64)
        #expect(run.stderr.contains("gemvault: error: " + message), "\(run.stderr)")
        #expect(provider.asked.isEmpty)
    }

    @Test func aProviderWithTheCapabilityTakesTheSameOption() throws {
        let provider = ScriptedProvider(capabilities: ProviderCapabilities(thinking: .levels, store: true),
                                        replies: [ScriptedProvider.Reply(text: "thought about it")])
        let run = User().run(["ask", "--no-save", "--model", "scripted-1", "--think", "low", "capital?"], provider: provider)
        #expect(run.result == 0, "\(run.stderr)")
        #expect(provider.asked.first?.request.options.thinking == .level("low"))
        #expect(!run.stderr.contains("store"))
    }

    @Test func aModelNameTheProviderRefusesIsAUsageError() throws {
        let provider = try ScriptedProvider(fixture: Self.fixture())
        let run = User().run(["ask", "--no-save", "--model", "no/such", "capital?"], provider: provider)
        #expect(run.result == 64 && run.stderr.contains("--model: 'no/such' is not a valid model name"), "\(run.stderr)")
        #expect(provider.asked.isEmpty)
    }

    @Test func chatFromPipedStdinSendsEachMessageWithTheTurnsBeforeIt() throws {
        let provider = try ScriptedProvider(displayName: "Parrot", fixture: Self.fixture())
        let run = User().run(["chat", "--no-save", "--model", "scripted-1"], provider: provider,
                             stdin: "What is the capital?\nHow many live there?\n")
        #expect(run.result == 0, "\(run.stderr)")
        // Labels come from the provider's name.
        #expect(run.stdout.contains("parrot › Paris is the capital of France."), "\(run.stdout)")
        #expect(run.stdout.contains("parrot › About two million people live there."), "\(run.stdout)")
        #expect(!run.stdout.contains("gemini"))
        #expect(provider.asked.map { $0.request.messages.map(\.text) } == [
            ["What is the capital?"],
            ["What is the capital?", "Paris is the capital of France.", "How many live there?"],
        ])
    }

    @Test func chatRefusesAToolTheProviderLacks() throws {
        let provider = try ScriptedProvider(fixture: Self.fixture())
        let run = User().run(["chat", "--no-save", "--model", "scripted-1", "--search"], provider: provider, stdin: "hello\n")
        #expect(run.result == 64 && run.stderr.contains("Scripted cannot search the web"), "\(run.stderr)")
        #expect(provider.asked.isEmpty)
    }

    @Test func theChatsSlashCommandsAskTheProviderToo() throws {
        let provider = try ScriptedProvider(fixture: Self.fixture())
        let run = User().run(["chat", "--no-save", "--model", "scripted-1"], provider: provider,
                             stdin: "/search on\n/think low\n/think 100\n/thoughts on\nWhat is the capital?\n")
        #expect(run.result == 0, "\(run.stderr)")
        for refusal in ["Scripted cannot search the web", "Scripted takes no thinking level", "Scripted takes no thinking budget",
                        "Scripted sends no thought summaries"] {
            #expect(run.stderr.contains("gemvault: error: " + refusal), "\(run.stderr)")
        }
        let options = try #require(provider.asked.first).request.options
        #expect(!options.tools.search && options.thinking == nil && !options.includeThoughts)
    }

    @Test func aProviderWithoutSignaturesGetsRepliesBackAsText() throws {
        var conversation = Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions())
        var reply = ChatReply(text: "signed", finish: .complete)
        reply.notePart(text: "signed", thoughtSignature: "c2ln")
        conversation.record(user: "one", reply: reply)
        #expect(conversation.request(for: "two").messages[1].parts == [.reply(ReplyPart(text: "signed", thoughtSignature: "c2ln"))])
        conversation.sendsSignatures = false
        #expect(conversation.request(for: "two").messages[1].parts == [.text("signed")])
    }
}
