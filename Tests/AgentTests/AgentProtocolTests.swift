import Testing
@testable import Agent
import SystemIO
import VaultCore

@Suite struct AgentProtocolTests {
    @Test func framesRoundTripWithSecretAndNumberFields() throws {
        var message = AgentMessage(code: AgentProtocol.Operation.unlock.rawValue)
        message.add(.keyEncryptionKey, secret: SecretBytes(utf8: "0123456789abcdef0123456789abcdef"))
        message.add(.idleSeconds, number: 900)
        message.add(.keyName, text: "default")
        let frame = message.frame()
        let body = frame.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[8...])) }
        let parsed = try #require(AgentMessage.parse(body: body))
        #expect(parsed.code == AgentProtocol.Operation.unlock.rawValue)
        #expect(parsed.number(.idleSeconds) == 900 && parsed.text(.keyName) == "default")
        #expect(parsed.secret(.keyEncryptionKey)?.isEqual(to: SecretBytes(utf8: "0123456789abcdef0123456789abcdef")) == true)
        frame.withUnsafeBytes { #expect(Array($0.prefix(4)) == Array("GVA1".utf8)) }
    }

    @Test func namesAndNumbersInOrdinaryMemoryTravelAsSecretFieldsDo() throws {
        var message = AgentMessage(code: AgentProtocol.Operation.key.rawValue)
        message.add(.keyName, name: "work-key")
        message.add(.markUsed, number: 1)
        message.add(.created, number: -5)
        message.add(.keyValue, secret: SecretBytes(utf8: "AQ.value-in-secret-memory"))
        #expect(message.text(.keyName) == "work-key" && message.number(.created) == -5)
        let frame = message.frame()
        let parsed = try #require(AgentMessage.parse(body: frame.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[8...])) }))
        #expect(parsed.text(.keyName) == "work-key" && parsed.number(.markUsed) == 1 && parsed.number(.created) == -5)
        #expect(parsed.secret(.keyValue)?.isEqual(to: SecretBytes(utf8: "AQ.value-in-secret-memory")) == true)
        #expect(parsed.fields.map(\.0) == [.keyName, .markUsed, .created, .keyValue])
    }

    @Test func onlyQuestionsAreAskedAgainWhenTheAgentIsBusy() {
        #expect(AgentClient.onlyAsks(AgentProtocol.Operation.key.rawValue) && AgentClient.onlyAsks(AgentProtocol.Operation.toolSecret.rawValue))
        #expect(AgentClient.onlyAsks(AgentProtocol.Operation.settingsAndKey.rawValue) && AgentClient.onlyAsks(AgentProtocol.Operation.status.rawValue))
        #expect(!AgentClient.onlyAsks(AgentProtocol.Operation.change.rawValue) && !AgentClient.onlyAsks(AgentProtocol.Operation.unlock.rawValue))
        #expect(!AgentClient.onlyAsks(AgentProtocol.Operation.putToken.rawValue) && !AgentClient.onlyAsks(250))
    }

    @Test func truncatedOrLyingFieldsAreRefused() {
        // op, then a field that claims 100 bytes but carries 3.
        let lying = SecretBytes(copying: [3, 6, 100, 0, 0, 0, 1, 2, 3])
        #expect(AgentMessage.parse(body: lying) == nil)
        #expect(AgentMessage.parse(body: SecretBytes(copying: [UInt8]())) == nil)
        // Unknown tags are skipped, not fatal.
        let unknown = SecretBytes(copying: [1, 200, 1, 0, 0, 0, 9])
        #expect(AgentMessage.parse(body: unknown)?.code == 1)
    }

    @Test func socketNamesDependOnTheVaultAndTheRuntimeFolder() {
        let a = AgentPaths(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], vaultPath: "/home/a/vault")
        let b = AgentPaths(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], vaultPath: "/home/a/other")
        #expect(a.folder == "/run/user/1000/gemvault" && a.socketPath != b.socketPath)
        // Without the variable: the login manager's folder when it made one, else /tmp.
        for environment in [[:], ["XDG_RUNTIME_DIR": "relative"]] {
            let folder = AgentPaths(environment: environment, vaultPath: "/v").folder
            if let login = CurrentUser.loginRuntimeFolder() { #expect(folder == login + "/gemvault") } else { #expect(folder.hasPrefix("/tmp/gemvault-")) }
        }
    }
}

@Suite struct AgentProtocolLimitTests {
    @Test func tooManyFieldsAreRefusedBeforeTheyCostMemory() {
        var many: [UInt8] = [3]
        for _ in 0..<(AgentMessage.maxFields + 1) { many += [6, 0, 0, 0, 0] }
        #expect(AgentMessage.parse(body: SecretBytes(copying: many)) == nil)
        #expect(AgentMessage.parse(body: SecretBytes(copying: Array(many.prefix(1 + 5 * AgentMessage.maxFields)))) != nil)
    }
}
