import Conversations
import FoundationEssentials
import GoogleHTTP

/// One attempt at a streamed reply: the events parsed so far, the reply they assemble, and
/// the first problem met, as `GeminiClient.streamGenerateContent` reads them.
final class StreamAttempt {
    let errors: ErrorMapper
    let handlers: StreamHandlers
    var parser = SSEParser()
    var assembly = ReplyAssembly()
    var errorBody: [UInt8] = []
    var streamError: GeminiError?
    /// What the retry policy weighs of `streamError`: only Google's own errors may pass.
    var streamFailure = RetryPolicy.Failure.final
    var blockReason: String?
    var finishMessage: String?
    var eventCount = 0
    var received = 0
    let decoder = JSONDecoder()

    init(errors: ErrorMapper, handlers: StreamHandlers) {
        self.errors = errors
        self.handlers = handlers
    }

    /// An error Google reported inside the stream, weighed by its status (its delay is not read there).
    func googleFailure(_ envelope: GoogleStatus, status: Int) -> GeminiError {
        let error = errors.apiError(status: status, envelope: envelope)
        streamFailure = .status(error.status ?? status, serverDelay: nil, dailyQuota: envelope.isDailyQuota)
        return error
    }

    /// The bytes of an answer as they come: an error's body kept, a stream's events handled.
    func take(_ status: Int, _ bytes: UnsafeRawBufferPointer) -> HTTPDataVerdict {
        if status != 200 {
            errorBody.append(contentsOf: bytes)
            return errorBody.count < 1 << 20 ? .more : .abort
        }
        received += bytes.count
        guard received <= GeminiClient.maxStreamBytes else {
            streamError = GeminiError(category: .network, message: "the server sent more than \(GeminiClient.maxStreamBytes >> 20) MiB for one reply", cause: .oversizedReply)
            return .abort
        }
        let before = eventCount
        handle(parser.feed(bytes))
        if parser.overflowed {
            streamError = GeminiError(category: .network, message: "the server sent an event larger than \(parser.limit >> 20) MiB", cause: .oversizedEvent)
        }
        guard streamError == nil else { return .abort }
        return eventCount > before ? .progress : .more
    }

    /// `unterminated`: the events the stream ended inside of, which may be cut short.
    func handle(_ events: [[UInt8]], unterminated: Bool = false) {
        eventCount += events.count
        for event in events where streamError == nil {
            if GoogleStatus.mayBeEnvelope(event), let envelope = GoogleStatus.decode(event), envelope.code != nil || envelope.status != nil {
                streamError = googleFailure(envelope, status: envelope.code ?? 500)
                continue
            }
            guard let chunk = try? decoder.decode(GenerateContentResponse.self, from: Data(event)) else {
                streamError = unterminated
                    ? GeminiError(category: .network, message: "the stream was cut off in the middle of an event: the reply is incomplete", cause: .cutStream)
                    : GeminiError(category: .network, message: "the server sent an event that is not a Gemini response", cause: .badEvent)
                continue
            }
            let candidate = chunk.candidates?.first
            if candidate?.content?.parts?.contains(where: { $0.thought == true }) == true { handlers.onThinking() }
            let (text, thought) = assembly.add(candidate?.content)
            if !thought.isEmpty { handlers.onThought(thought) }
            if !text.isEmpty { handlers.onText(text) }
            assembly.note(candidate)
            if let reason = candidate?.finishReason { assembly.reply.finishName = reason }
            if let message = candidate?.finishMessage { finishMessage = message }
            if let usage = chunk.usage { assembly.reply.usage = usage }
            if let version = chunk.modelVersion { assembly.reply.modelVersion = version }
            if let block = chunk.promptFeedback?.blockReason { blockReason = block }
        }
    }
}
