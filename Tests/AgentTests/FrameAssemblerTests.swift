import Testing
@testable import Agent
import VaultCore

/// Bytes handed to an assembler in reads of at most `chunk`, as a socket would.
final class ByteFeed {
    let bytes: [UInt8]
    let chunk: Int
    var offset = 0
    /// After the last byte: 0 (the peer left) or nil (it stays, silent).
    let endsWithClose: Bool

    init(_ bytes: [UInt8], chunk: Int = .max, endsWithClose: Bool = false) {
        self.bytes = bytes
        self.chunk = chunk
        self.endsWithClose = endsWithClose
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard offset < bytes.count else { return endsWithClose ? 0 : nil }
        let count = min(buffer.count, chunk, bytes.count - offset)
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<offset + count])) }
        offset += count
        return count
    }
}

func header(announcing length: Int) -> [UInt8] {
    AgentProtocol.magic + [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 24 & 0xff)]
}

func requestFrame(_ operation: AgentProtocol.Operation, _ build: (inout AgentMessage) -> Void = { _ in }) -> [UInt8] {
    var message = AgentMessage(code: operation.rawValue)
    build(&message)
    return message.frame().withUnsafeBytes { Array($0) }
}

@Suite struct FrameAssemblerTests {
    static let smallOperations: [AgentProtocol.Operation] = [.status, .unlock, .contents, .rekey, .lock, .keyNames, .followKey]

    @Test func noRequestMayAnnounceAWholeVault() {
        for operation in Self.smallOperations {
            #expect(AgentProtocol.maxRequestBody(operation: operation.rawValue) == AgentProtocol.maxSmallRequest)
        }
        #expect(AgentProtocol.maxRequestBody(operation: AgentProtocol.Operation.change.rawValue) == AgentProtocol.maxChangeRequest)
        // 4 was the whole-vault write: gone, it is as unknown as any other number.
        #expect(AgentProtocol.maxRequestBody(operation: 4) == nil)
        #expect(AgentProtocol.maxRequestBody(operation: 0) == nil && AgentProtocol.maxRequestBody(operation: 99) == nil)
    }

    @Test(arguments: smallOperations)
    func aSmallRequestAnnouncingMoreThanItsBoundIsRefusedBeforeAnyAllocation(_ operation: AgentProtocol.Operation) {
        var assembler = FrameAssembler(kind: .request)
        let feed = ByteFeed(header(announcing: AgentProtocol.maxSmallRequest + 1) + [operation.rawValue])
        guard case .refused(.tooLarge(let limit)) = assembler.take(feed.read) else {
            Issue.record("a \(operation) request of \(AgentProtocol.maxSmallRequest + 1) bytes was not refused")
            return
        }
        #expect(limit == AgentProtocol.maxSmallRequest && assembler.held == 0)
        // At the bound itself, the request is taken.
        var atBound = FrameAssembler(kind: .request)
        let whole = ByteFeed(header(announcing: AgentProtocol.maxSmallRequest) + [operation.rawValue] + [UInt8](repeating: 0, count: AgentProtocol.maxSmallRequest - 1))
        guard case .complete(let body) = atBound.take(whole.read) else {
            Issue.record("a \(operation) request at its bound was not taken")
            return
        }
        #expect(body.count == AgentProtocol.maxSmallRequest)
    }

    @Test func aChangeAnnouncingMoreThanItsBoundIsRefused() {
        var assembler = FrameAssembler(kind: .request)
        let feed = ByteFeed(header(announcing: AgentProtocol.maxChangeRequest + 1) + [AgentProtocol.Operation.change.rawValue])
        guard case .refused(.tooLarge(let limit)) = assembler.take(feed.read) else {
            Issue.record("an oversized change was not refused")
            return
        }
        #expect(limit == AgentProtocol.maxChangeRequest && assembler.held == 0)
        var write = FrameAssembler(kind: .request)
        guard case .refused(.unknownOperation(4)) = write.take(ByteFeed(header(announcing: AgentProtocol.maxFrame) + [4]).read) else {
            Issue.record("a whole-vault write was not refused as unknown")
            return
        }
        #expect(write.held == 0)
    }

    @Test func aHeaderAloneCostsNothingWhateverItAnnounces() {
        var assembler = FrameAssembler(kind: .request)
        let feed = ByteFeed(header(announcing: AgentProtocol.maxFrame))
        guard case .waiting = assembler.take(feed.read) else {
            Issue.record("a header alone was not left waiting")
            return
        }
        #expect(assembler.hasStarted && assembler.held == 0)
    }

    @Test func aLargeAnswerHoldsMemoryForTheBytesThatCameNotForWhatItAnnounced() {
        var assembler = FrameAssembler(kind: .response)
        let feed = ByteFeed(header(announcing: AgentProtocol.maxFrame) + [0] + [UInt8](repeating: 7, count: 300_000))
        guard case .waiting = assembler.take(feed.read) else {
            Issue.record("a partial answer was not left waiting")
            return
        }
        #expect(assembler.received == 8 + 1 + 300_000)
        #expect(assembler.held >= 300_001 && assembler.held <= 2 * 300_001)
    }

    @Test func unknownOperationsAndWrongMagicAreRefusedAtOnce() {
        var unknown = FrameAssembler(kind: .request)
        let feed = ByteFeed(header(announcing: 1) + [99])
        guard case .refused(.unknownOperation(99)) = unknown.take(feed.read) else {
            Issue.record("an unknown operation was not refused")
            return
        }
        var garbage = FrameAssembler(kind: .request)
        let text = ByteFeed(Array("hello".utf8))
        guard case .refused(.malformed) = garbage.take(text.read) else {
            Issue.record("bytes without the magic were not refused")
            return
        }
        var empty = FrameAssembler(kind: .request)
        let zero = ByteFeed(header(announcing: 0))
        guard case .refused(.malformed) = empty.take(zero.read) else {
            Issue.record("an empty body was not refused")
            return
        }
    }

    @Test func aFrameCutAnywhereAssemblesTheSameBody() throws {
        let kek = SecretBytes(utf8: "0123456789abcdef0123456789abcdef")
        let bytes = requestFrame(.unlock) { message in
            message.add(.keyEncryptionKey, secret: kek)
            message.add(.idleSeconds, number: 900)
        }
        for chunk in [1, 2, 8, 9, 10, 1000] {
            var assembler = FrameAssembler(kind: .request)
            let feed = ByteFeed(bytes, chunk: chunk)
            var outcome = FrameAssembler.Outcome.waiting
            // One byte per call as well: a read that finds nothing leaves it waiting.
            for _ in 0..<bytes.count {
                outcome = assembler.take { buffer in
                    guard feed.offset < feed.bytes.count else { return nil }
                    return feed.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, chunk)]))
                }
                if case .complete = outcome { break }
            }
            guard case .complete(let body) = outcome else {
                Issue.record("in pieces of \(chunk), the frame was not assembled")
                continue
            }
            let parsed = try #require(AgentMessage.parse(body: body))
            #expect(parsed.code == AgentProtocol.Operation.unlock.rawValue && parsed.number(.idleSeconds) == 900)
            #expect(parsed.secret(.keyEncryptionKey)?.isEqual(to: kek) == true)
        }
    }

    @Test func aLargeAnswerGrowsToItsLengthAndStopsAtTheRoomItIsGiven() {
        let length = 1 + 5 + 1_000_000
        var payload = [UInt8](repeating: 0, count: 1_000_000)
        for index in payload.indices { payload[index] = UInt8(truncatingIfNeeded: index) }
        let bytes = header(announcing: length) + [0, 4, 0x40, 0x42, 0x0f, 0] + payload
        var whole = FrameAssembler(kind: .response)
        let feed = ByteFeed(bytes, chunk: 4096)
        guard case .complete(let body) = whole.take(feed.read) else {
            Issue.record("a 1 MB answer was not assembled")
            return
        }
        #expect(body.count == length)
        #expect(AgentMessage.parse(body: body)?.secret(.payload)?.withUnsafeBytes { Array($0) } == payload)
        // Others hold the memory: growing past the room is refused, and the memory goes.
        var crowded = FrameAssembler(kind: .response)
        let again = ByteFeed(bytes, chunk: 4096)
        guard case .refused(.noRoom) = crowded.take(room: 300_000, again.read) else {
            Issue.record("an answer was not refused beyond its room")
            return
        }
        #expect(crowded.held == 0)
    }

    @Test func aPeerLeavingHalfWayIsClosedNotComplete() {
        var assembler = FrameAssembler(kind: .request)
        let feed = ByteFeed(Array(requestFrame(.status) { $0.add(.keyName, text: "default") }.dropLast(3)), endsWithClose: true)
        guard case .closed = assembler.take(feed.read) else {
            Issue.record("a truncated frame was not reported closed")
            return
        }
    }

    @Test func responsesMayCarryAWholeVaultWhateverTheirStatus() {
        var assembler = FrameAssembler(kind: .response)
        let feed = ByteFeed(header(announcing: AgentProtocol.maxFrame) + [0])
        guard case .waiting = assembler.take(feed.read) else {
            Issue.record("a large response was refused")
            return
        }
        var oversized = FrameAssembler(kind: .response)
        let more = ByteFeed(header(announcing: AgentProtocol.maxFrame + 1) + [1])
        guard case .refused(.tooLarge) = oversized.take(more.read) else {
            Issue.record("an oversized response was taken")
            return
        }
    }
}
