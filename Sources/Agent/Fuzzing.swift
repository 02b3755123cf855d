import VaultCore

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the agent's framing
/// and message parser: the bytes a client of any kind can send. The check returns the
/// property the input broke, or nil.
public enum AgentFuzzing {
    public static func check(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 8 else { return nil }
        let announced: Int
        do throws(FrameReader.Failure) { announced = try FrameReader.bodyLength(Array(bytes.prefix(8))) } catch { return nil }
        guard announced >= 1, announced <= AgentProtocol.maxFrame else { return "a frame length outside the bounds was accepted" }
        let body = SecretBytes(copying: Array(bytes.dropFirst(8).prefix(announced)))
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
