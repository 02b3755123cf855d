import Testing
@testable import VaultCore

/// A kind larger than an ssh-agent slot (a stanza to a post-quantum recipient) says so, and the
/// largest file a vault may be grows with it.
private struct LargeTestSlot: SlotKind, Equatable {
    static let kindByte: UInt8 = 0xF6
    static let name = "large-test"
    static let placement = SlotPlacement.additional(most: 1)
    /// Larger than any kind a test registers (they share one process).
    static let maximumBytes = 100_000
    let bytes: [UInt8]
    var body: [UInt8] { bytes }
    var identity: [UInt8] { [] }
    var holder: [UInt8] { [] }
    var listing: SlotListing { SlotListing() }
    func resealed(dataKey: SecretBytes) throws(VaultError) -> LargeTestSlot? { self }
    static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> LargeTestSlot { LargeTestSlot(bytes: try reader.readBytes(maximumBytes - 1)) }
}

@Suite struct SlotSizeTests {
    @Test func theLargestFileFollowsTheLargestRegisteredKind() {
        let floor = KeySlot.maxAdditionalSlots * LargeTestSlot.maximumBytes + (16 << 20)
        #expect(SSHAgentSlot.maximumBytes == SSHAgentSlot.encodedBytes)
        #expect(VaultFile.maximumSize < floor)
        SlotKinds.register(LargeTestSlot.self)
        #expect(VaultFile.maximumSize > floor)
    }
}
