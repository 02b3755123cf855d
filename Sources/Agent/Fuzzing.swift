import VaultCore

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the agent's framing
/// and message parser: the bytes a client of any kind can send. The check returns the
/// property the input broke, or nil.
public enum AgentFuzzing {
    public static func check(_ bytes: [UInt8]) -> String? {
        // The bytes arrive in reads of 7, as a client's can be cut anywhere.
        var assembler = FrameAssembler(kind: .request)
        var offset = 0
        var outcome = FrameAssembler.Outcome.waiting
        while case .waiting = outcome {
            outcome = assembler.take { buffer in
                guard offset < bytes.count else { return 0 }
                let count = min(buffer.count, 7, bytes.count - offset)
                bytes.withUnsafeBytes { source in buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count])) }
                offset += count
                return count
            }
            // Memory follows the bytes that came, never what was announced.
            if assembler.held > max(FrameAssembler.firstChunk, 2 * assembler.received) {
                return "a frame holds more memory than its bytes need"
            }
        }
        guard case .complete(let body) = outcome else { return nil }
        let bound = body.withUnsafeBytes { AgentProtocol.maxRequestBody(operation: $0[0]) }
        guard let bound, body.count >= 1, body.count <= bound else { return "a frame length outside its operation's bound was accepted" }
        guard let message = AgentMessage.parse(body: body) else { return nil }
        _ = AgentProtocol.Operation(rawValue: message.code)
        for field in message.fields {
            _ = message.number(field.0)
            _ = message.text(field.0)
        }
        // What parses must travel again unchanged.
        let frame = message.frame()
        let again = frame.withUnsafeBytes { raw in AgentMessage.parse(body: SecretBytes(copying: UnsafeRawBufferPointer(rebasing: raw[8...]))) }
        guard let again, again.code == message.code, again.fields.count == message.fields.count,
              zip(again.fields, message.fields).allSatisfy({ $0.0 == $1.0 && $0.1.isEqual(to: $1.1) }) else {
            return "a message changes when framed and parsed again"
        }
        return nil
    }
}
