extension ProviderCapabilities {
    /// What of `generation` a provider (called `name`) cannot honour, worded as the usage error
    /// it is before anything is sent, not a refusal after: its tools, its kind of thinking,
    /// thought summaries. Nil when it can honour all of it.
    public func refusal(of generation: GenerationOptions, provider name: String) -> String? {
        let asked = [(generation.tools.search, tools.search, "--search (or the 'search' setting)", "search the web"),
                     (generation.tools.urlContext, tools.urlContext, "--url-context", "read web pages"),
                     (generation.tools.codeExecution, tools.codeExecution, "--code", "run code")]
        for (wanted, offered, option, what) in asked where wanted && !offered { return "\(option): \(name) cannot \(what)" }
        switch generation.thinking {
        case .level?: if !thinking.takesLevels { return "--think (or the 'thinking' setting): \(name) takes no thinking level" }
        case .budget?: if !thinking.takesBudget { return "--think-budget: \(name) takes no thinking budget" }
        case nil: break
        }
        if generation.includeThoughts && !thoughtSummaries { return "--thoughts (or the 'show_thoughts' setting): \(name) sends no thought summaries" }
        return nil
    }
}
