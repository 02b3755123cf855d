import Conversations
import KeyResolution
import Settings
import Spending
import TerminalIO
import VaultAccess
import VaultCore

/// The spend guard as `ask` and `chat` use it: the key's ledger name from where it came, the
/// vault asked without a prompt, and notes and errors worded as every command words them.
extension SpendGuard {
    convenience init(context: Context, settings: Settings, key: ResolvedKey, overBudget: Bool) throws {
        let fromVault = if case .vault = key.source { true } else { false }
        try self.init(keyName: key.source.ledgerName, fromVault: fromVault, key: key.secret, settings: settings,
                      vault: SessionBudgetVault(vault: context.vault), history: context.history, stateHome: context.paths.stateHome,
                      cacheHome: context.paths.cacheHome, overBudget: overBudget, reporter: ConsoleSpendReporter())
    }

    /// The model a reply is priced and filed as: its modelVersion (the model that ran), else the
    /// one asked for, with the service tier that served it (`gemini-3.8-flash:flex`). A reply
    /// from another model than the one asked for is said once.
    func servedModel(_ reply: ChatReply, requested: String) -> String {
        var model = requested
        if let version = reply.modelVersion?.trimmedWhitespace, !version.isEmpty {
            let served = version.hasPrefix("models/") ? String(version.dropFirst(7)) : version
            if let notice = ProviderChoice.routingNotice(requested: requested, served: served) {
                noteOnce(EscapeNeutralizer.neutralize(notice))
            }
            model = served
        }
        return ServiceTier(header: reply.serviceTier).ledgerModel(model)
    }

    /// Records `reply` as the model that ran, with its search queries; returns its estimated cost.
    @discardableResult
    func record(_ reply: ChatReply, requested: String) -> Double? {
        record(reply.usage, model: servedModel(reply, requested: requested), searchQueries: reply.searchQueryCount)
    }
}

/// The vault as a spend check reads it: open already, or through the session; never a prompt.
struct SessionBudgetVault: BudgetVault {
    let vault: VaultAccess

    var exists: Bool { vault.exists }

    func settingsAndConversationKeys() -> (settings: [String: String], conversationKeys: [SecretBytes])? {
        (try? vault.settingsAndConversationKeysWithoutPrompt()) ?? nil
    }

    func sessionKey(_ name: String) -> SecretBytes? {
        vault.sessionKey(named: name)?.secret
    }
}

/// Notes and warnings on stderr; an error worded by the one error map.
struct ConsoleSpendReporter: SpendReporter {
    func note(_ text: String) { Console.note(text) }
    func warning(_ text: String) { Console.warning(text) }

    func describe(_ error: any Error) -> (message: String, interrupted: Bool) {
        let (code, message, _) = ErrorReport.describe(error)
        return (message, code == .interrupted)
    }
}
