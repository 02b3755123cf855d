extension ErrorMapper.OptionAdvice {
    /// What to change when Gemini refuses an option (a 400 that names it), said once for ask and chat
    /// in gemvault's words (its options, slash commands and settings).
    public static let gemvault = [
        ErrorMapper.OptionAdvice(words: ["include_thoughts", "includethoughts"],
                                 hint: "this model does not think, so it has no thought summaries: leave out --thoughts (in a chat, /thoughts off), or 'gemvault config set show_thoughts off'"),
        // The Developer API's words for any thinkingConfig sent to a model that does not think.
        ErrorMapper.OptionAdvice(words: ["thinking is not enabled"],
                                 hint: "this model does not think: leave out --think, --think-budget and --thoughts (in a chat, /think and /thoughts off), and the 'thinking' and 'show_thoughts' settings"),
        ErrorMapper.OptionAdvice(words: ["thinking_level", "thinking level", "thinkinglevel", "thinking_budget", "thinking budget", "thinkingbudget", "thinking_config"],
                                 hint: "change --think or --think-budget (in a chat, /think), or the 'thinking' setting: this model takes another level or budget, or none",
                                 namesThinkingLevels: true),
        ErrorMapper.OptionAdvice(words: ["google_search", "googlesearch", "search grounding"],
                                 hint: "this model cannot search with Google: leave out --search (in a chat, /search off), or 'gemvault config set search off'"),
        ErrorMapper.OptionAdvice(words: ["url_context", "urlcontext"], hint: "this model cannot read web pages: leave out --url-context"),
        ErrorMapper.OptionAdvice(words: ["code_execution", "codeexecution"], hint: "this model cannot run code: leave out --code"),
        ErrorMapper.OptionAdvice(words: ["response_schema", "response_json_schema", "responsejsonschema", "responseschema"],
                                 hint: "Gemini refused the schema given with --schema: simplify it (fewer nesting levels, no unsupported keywords) or try another model"),
    ]
}
