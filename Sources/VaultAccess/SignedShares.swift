import Agent
import Sharing
import SystemIO
import VaultCore

extension VaultAccess {
    /// The next share of `name` for each group of recipients (canonical texts), as the JSON each
    /// file holds, and its serial: built and signed from the key this vault holds, by the
    /// session's agent or by the vault opened here, with the serial recorded as sent.
    public func signNextShare(of name: String, for groups: [[String]]) throws -> (serial: UInt64, documents: [SecretBytes]) {
        if let signed = try throughSession({ agent throws(AgentError) in try agent.signNextShare(name, for: groups) }) { return signed }
        var signed: (serial: UInt64, documents: [ShareDocument])?
        try openedVault().modify { document in
            signed = try document.contents.signNextShare(of: name, for: groups, now: Clock.now())
        }
        return (signed!.serial, signed!.documents.map { $0.encoded() })
    }
}
