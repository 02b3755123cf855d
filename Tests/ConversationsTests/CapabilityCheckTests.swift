import Conversations
import Testing

@Suite struct CapabilityCheckTests {
    @Test func whatAProviderCannotDoIsNamedWithTheOptionThatAskedForIt() {
        var generation = GenerationOptions()
        #expect(ProviderCapabilities().refusal(of: generation, provider: "X") == nil)
        generation.tools = ModelTools(urlContext: true)
        #expect(ProviderCapabilities().refusal(of: generation, provider: "X") == "--url-context: X cannot read web pages")
        #expect(ProviderCapabilities(tools: ModelTools(urlContext: true)).refusal(of: generation, provider: "X") == nil)
        generation = GenerationOptions()
        generation.thinking = .budget(10)
        #expect(ProviderCapabilities(thinking: .levels).refusal(of: generation, provider: "X") == "--think-budget: X takes no thinking budget")
        generation.thinking = nil
        generation.includeThoughts = true
        #expect(ProviderCapabilities().refusal(of: generation, provider: "X") == "--thoughts (or the 'show_thoughts' setting): X sends no thought summaries")
    }
}
