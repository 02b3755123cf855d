import ChatUI
import CSystemShims
import GeminiClient
import GemvaultConfig
import SystemIO
import TerminalIO
import VaultCore

let chatCommands: [CommandSpec] = [
    CommandSpec(path: ["chat"], arguments: "", argumentRange: 0...0,
                summary: "chat with Gemini (Ctrl-C stops a reply, Ctrl-D leaves)",
                options: generationOptions + keySourceOptions,
                details: "Type /help inside the chat for its commands. Multi-line input: paste it, or open and close a block with \"\"\".",
                run: ChatCommand.chat),
    CommandSpec(path: ["ask"], arguments: "[PROMPT...]", argumentRange: 0...Int.max,
                summary: "ask once and stream the answer to stdout (stdin is added to the prompt)",
                options: generationOptions + keySourceOptions + [
                    OptionSpec(name: "--no-stream", value: nil, help: "wait for the whole answer (generateContent)"),
                    OptionSpec(name: "--count-tokens", value: nil, help: "print the prompt's token count instead of asking"),
                    jsonOption],
                details: "Example: git diff | gemvault ask \"review this\"",
                run: ChatCommand.ask),
    CommandSpec(path: ["models"], arguments: "", argumentRange: 0...0,
                summary: "list the models that support generateContent, with token limits",
                options: [jsonOption, OptionSpec(name: "--timeout", value: "SECONDS", help: "wait for the first byte")] + keySourceOptions,
                details: "", run: ChatCommand.models),
]

enum ChatCommand {
    /// Resolves the key and settings, then builds a client.
    static func client(_ call: Invocation) throws -> (GeminiClient, Settings) {
        GeminiClient.prepareNetwork()
        let resolver = try call.context.keyResolver(call)
        let (key, settings) = try resolver.resolve()
        let configuration = ClientConfiguration(endpoint: settings.endpoint, apiVersion: settings.apiVersion, timeout: settings.timeout,
                                                maxAttempts: (settings.int("retries") ?? 4) + 1)
        let errors = ErrorMapper(keyOrigin: key.source.label, keyReplaceHint: key.source.replaceHint,
                                 model: settings.model, apiVersion: settings.apiVersion)
        return (GeminiClient(configuration: configuration, apiKey: key.secret, errors: errors), settings)
    }

    static func conversation(_ settings: Settings) throws -> Conversation {
        _ = try GeminiClient.modelResource(settings.model)
        return Conversation(model: settings.model, systemPrompt: settings.string("system_prompt"),
                            generation: GenerationConfig(temperature: settings.double("temperature"), topP: settings.double("top_p"),
                                                         topK: settings.int("top_k"), maxOutputTokens: settings.int("max_output_tokens")))
    }

    static func style(_ settings: Settings, environment: [String: String], fd: Int32) -> Style {
        Style.decide(mode: ColorMode(rawValue: settings.string("color") ?? "auto") ?? .auto, environment: environment, isTerminal: Terminal.isTerminal(fd))
    }

    static func chat(_ call: Invocation) throws {
        let (client, settings) = try client(call)
        let repl = ChatREPL(conversation: try conversation(settings), client: client,
                            style: style(settings, environment: call.context.environment, fd: FileDescriptor.standardOutput.raw),
                            interactive: Terminal.stdinIsTerminal)
        repl.run()
    }

    struct AskResult: Encodable {
        let text: String
        let model: String
        let finishReason: String?
        let usage: UsageMetadata?
        let interrupted: Bool
    }

    static func ask(_ call: Invocation) throws {
        var prompt = call.positionals.joined(separator: " ")
        if !Terminal.stdinIsTerminal {
            let input = try readStandardInput()
            if !input.isEmpty { prompt = prompt.isEmpty ? input : prompt + "\n\n" + input }
        }
        guard !prompt.trimmedWhitespace.isEmpty else {
            throw UsageError("nothing to ask: give a prompt or pipe text in", command: call.command)
        }
        let (client, settings) = try client(call)
        let conversation = try conversation(settings)
        for finding in SecretScanner.findings(in: prompt) {
            Console.warning("the prompt contains what looks like \(finding); it is being sent to Gemini")
        }
        let request = conversation.request(for: prompt)
        if call.flag("--count-tokens") {
            let total = try client.countTokens(model: conversation.model, contents: request.contents)
            Console.out("\(total)\n")
            return
        }
        let json = call.flag("--json")
        let streaming = !call.flag("--no-stream")
        let printer = ReplyPrinter(spinner: Terminal.stderrIsTerminal)
        var handlers = printer.handlers()
        if json || !streaming { handlers.onText = { _ in } }
        gv_interrupt_install()
        defer { gv_interrupt_uninstall() }
        var result: TurnResult
        var failure: GeminiError?
        do {
            result = streaming
                ? try client.streamGenerateContent(model: conversation.model, request: request, handlers: handlers)
                : try client.generateContent(model: conversation.model, request: request, handlers: handlers)
        } catch let partial as PartialReply {
            result = partial.result
            failure = partial.error
        } catch {
            printer.finish()
            throw error
        }
        if json {
            printer.clearSpinner()
            Output.json(AskResult(text: result.text, model: result.modelVersion ?? conversation.model, finishReason: result.finishReason,
                                  usage: result.usage, interrupted: result.interrupted))
        } else {
            if !streaming { printer.print(result.text) }
            printer.finish()
        }
        if let failure { throw failure }
        if result.interrupted { throw GeminiError(category: .interrupted, message: "", reason: "interrupted") }
    }

    struct ModelListing: Encodable {
        let name: String
        let displayName: String?
        let inputTokenLimit: Int?
        let outputTokenLimit: Int?
    }

    static func models(_ call: Invocation) throws {
        let (client, _) = try client(call)
        let printer = ReplyPrinter(spinner: Terminal.stderrIsTerminal)
        let models = try client.listModels(handlers: printer.handlers()).filter { $0.supportedGenerationMethods?.contains("generateContent") ?? false }
        printer.clearSpinner()
        let listings = models.map { ModelListing(name: $0.shortName, displayName: $0.displayName, inputTokenLimit: $0.inputTokenLimit, outputTokenLimit: $0.outputTokenLimit) }
        if call.flag("--json") { Output.json(listings); return }
        let rows = listings.map { [EscapeNeutralizer.neutralize($0.name), $0.inputTokenLimit.map(String.init) ?? "-", $0.outputTokenLimit.map(String.init) ?? "-",
                                   EscapeNeutralizer.neutralize($0.displayName ?? "")] }
        Console.out(Output.table([["MODEL", "INPUT TOKENS", "OUTPUT TOKENS", "NAME"]] + rows))
    }

    /// Standard input as text (at most 16 MiB), for `git diff | gemvault ask`.
    static func readStandardInput() throws -> String {
        do {
            return String(decoding: try FileDescriptor.standardInput.readAll(limit: 16 << 20), as: UTF8.self)
        } catch {
            throw CommandFailure(.failure, "cannot read standard input (\(error)); the limit is 16 MiB")
        }
    }
}
