import Foundation
import Glibc
import Testing
import SystemIO
import VaultCore
@testable import SSHAgent

/// The ssh-agent client against a listener in this process that answers as told: the real
/// agent is tested end to end (Tests/EndToEnd/test_ssh_slot.py).
@Suite struct SSHAgentClientTests {
    /// Serves one connection on a fresh socket with `answer` (raw bytes), then closes.
    private func agent(answering answer: [UInt8], pauseFirst: Double = 0, timeout: Double = 10) throws -> (client: SSHAgentClient, done: () -> Void) {
        let folder = "/tmp/gv-ssh-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(folder, 0o700)
        let opened = try #require(try FileDescriptor.openIfPresent(folder, flags: O_RDONLY | O_DIRECTORY))
        let listening = try UnixSocket.listen("agent", in: opened, path: folder + "/agent")
        let served = DispatchGroup()
        DispatchQueue.global().async(group: served) {
            if let connection = UnixSocket.accept(listening) {
                var request = [UInt8](repeating: 0, count: 4096)
                _ = request.withUnsafeMutableBytes { try? connection.read(into: $0) }
                if pauseFirst > 0 { Clock.sleep(pauseFirst) }
                try? connection.writeAll(answer)
            }
        }
        return (SSHAgentClient(socketPath: folder + "/agent", listTimeout: timeout, signTimeout: timeout), {
            served.wait()
            unlink(folder + "/agent")
            rmdir(folder)
        })
    }

    private func framed(_ body: [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.uint32(UInt32(body.count))
        return writer.bytes + body
    }

    @Test func identitiesAreParsedWithTheirFingerprints() throws {
        var body = SSHWireWriter()
        body.byte(12)
        body.uint32(1)
        var blob = SSHWireWriter()
        blob.string(Array("ssh-ed25519".utf8))
        blob.string([UInt8](repeating: 7, count: 32))
        body.string(blob.bytes)
        body.string(Array("me@laptop".utf8))
        let (client, done) = try agent(answering: framed(body.bytes))
        defer { done() }
        let keys = try client.identities()
        #expect(keys.count == 1)
        #expect(keys[0].keyType == "ssh-ed25519")
        #expect(keys[0].comment == "me@laptop")
        #expect(keys[0].fingerprintText == SSHSlotKey.fingerprintText(Sodium.sha256(blob.bytes)))
    }

    @Test func aHugeLengthIsRefusedWithoutReadingIt() throws {
        let (client, done) = try agent(answering: [0xff, 0xff, 0xff, 0xff, 12])
        defer { done() }
        #expect(throws: SSHAgentError.malformed("it announces a message of 4294967295 bytes")) { try client.identities() }
    }

    @Test func aSilentAgentTimesOut() throws {
        let (client, done) = try agent(answering: [], pauseFirst: 2, timeout: 0.5)
        defer { done() }
        #expect(throws: SSHAgentError.timedOut(0.5)) { try client.identities() }
    }

    @Test func aCountBeyondTheKeysIsMalformed() throws {
        var body = SSHWireWriter()
        body.byte(12)
        body.uint32(3)
        let (client, done) = try agent(answering: framed(body.bytes))
        defer { done() }
        #expect(throws: SSHAgentError.malformed("a key is cut short")) { try client.identities() }
    }

    @Test func aSignatureOfAnotherTypeIsRefused() throws {
        var signature = SSHWireWriter()
        signature.string(Array("ssh-rsa".utf8))
        signature.string([UInt8](repeating: 1, count: 64))
        var body = SSHWireWriter()
        body.byte(14)
        body.string(signature.bytes)
        let (client, done) = try agent(answering: framed(body.bytes))
        defer { done() }
        var blob = SSHWireWriter()
        blob.string(Array("ssh-ed25519".utf8))
        blob.string([UInt8](repeating: 7, count: 32))
        let identity = SSHAgentIdentity(blob: blob.bytes, comment: "")
        #expect(throws: SSHAgentError.malformed("it signed with ssh-rsa where ssh-ed25519 was asked for")) {
            try client.sign([1, 2, 3], with: identity, algorithm: .ed25519)
        }
    }

    /// A listener that never accepts, its queue full: the connect itself gives up at the deadline.
    @Test func anAgentThatNeverAcceptsCostsTheDeadlineNotAHang() throws {
        let folder = "/tmp/gv-ssh-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(folder, 0o700)
        defer {
            unlink(folder + "/agent")
            rmdir(folder)
        }
        // A listener with the smallest queue the kernel allows, so a few connections fill it.
        let listening = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let path = Array((folder + "/agent").utf8)
            raw.copyBytes(from: path)
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0 && listen(listening, 0) == 0)
        defer { close(listening) }
        var fillers: [FileDescriptor] = []
        while let filler = try? UnixSocket.connect(path: folder + "/agent", deadline: Clock.monotonicSeconds()) {
            fillers.append(filler)
            if fillers.count > 1000 { break }
        }
        #expect(fillers.count < 1000)
        let started = Clock.monotonicSeconds()
        #expect(throws: SSHAgentError.timedOut(0.5)) {
            try SSHAgentClient(socketPath: folder + "/agent", listTimeout: 0.5, signTimeout: 0.5).identities()
        }
        #expect(Clock.monotonicSeconds() - started < 5)
        withExtendedLifetime(fillers) {}
    }

    /// An RSA signature an agent sent without its leading zeros is padded to the modulus, so a
    /// slot's secret is the same through every agent; a longer one, and weak keys, are refused.
    @Test func rsaSignaturesArePaddedToTheModulusAndWeakKeysRefused() throws {
        func rsa(bits: Int, exponent: [UInt8] = [1, 0, 1]) -> SSHAgentIdentity {
            var blob = SSHWireWriter()
            blob.string(Array("ssh-rsa".utf8))
            blob.string(exponent)
            blob.string([0] + [UInt8](repeating: 0xc5, count: bits / 8))
            return SSHAgentIdentity(blob: blob.bytes, comment: "")
        }
        let key = rsa(bits: 2048)
        let short = SecretBytes(copying: [UInt8](repeating: 9, count: 255))
        let padded = try SSHAgentClient.paddedToModulus(short, of: key)
        #expect(padded.count == 256)
        #expect(padded.withUnsafeBytes { $0[0] == 0 && $0[1] == 9 })
        #expect(throws: SSHAgentError.self) { try SSHAgentClient.paddedToModulus(SecretBytes(count: 257), of: key) }
        #expect(throws: SSHAgentError.self) { try SSHAgentClient.rsaKey(of: rsa(bits: 1024)) }
        #expect(throws: SSHAgentError.self) { try SSHAgentClient.rsaKey(of: rsa(bits: 2048, exponent: [1])) }
        #expect(throws: SSHAgentError.self) { try SSHAgentClient.rsaKey(of: rsa(bits: 2048, exponent: [1, 0, 0])) }
        #expect(try SSHAgentClient.rsaKey(of: key).modulus.count == 256)
    }
}
