import Conversations
import SystemIO

extension GeminiClient {
    /// The first run's check of a pasted key: the models listed, the cheapest call a key can
    /// make, all of it (retries too) within `limit` seconds.
    public func checkKey(within limit: Double) throws {
        let start = Clock.monotonicSeconds()
        do {
            _ = try listModels(handlers: StreamHandlers(isCancelled: { Clock.monotonicSeconds() - start > limit }))
        } catch let error as GeminiError where error.category == .interrupted || error.cause == .timeout {
            throw GeminiError(category: .network, message: "the Gemini API at \(configuration.endpoint) did not answer within \(Int(limit)) s",
                              cause: .timeout)
        }
    }
}
