import SystemIO
import Testing
@testable import GemvaultCLI

/// The rotator's claim as the secret's annotation carries it (Docs/fleet.md, "One rotator for the fleet").
@Suite struct FleetRotationClaimTests {
    let now: Int64 = 1_700_000_000

    @Test func aClaimReadsBackWhatItWrote() throws {
        let claim = try #require(FleetRotation.Claim(FleetRotation.Claim.claiming(at: now)))
        #expect(claim.state == "claimed" && claim.time(now: now) == now && claim.pid == ProcessIdentity.current)
        #expect(claim.host == FleetRotation.Claim.thisHost && !claim.isLeftHere)  // this process runs
        let done = try #require(FleetRotation.Claim(FleetRotation.Claim.rotated(to: 8, at: 5)))
        #expect(done.state == "rotated" && done.fields["version"] == "8" && done.time(now: now) == 5)
    }

    /// A machine is told by its id: a clone with the same host name does not take over a live claim.
    @Test func onlyThisMachinesClaimOfAProcessThatIsGoneIsLeftHere() throws {
        let machine = FleetRotation.Claim.thisMachine
        let gone = try #require(FleetRotation.Claim("claimed host=x machine=\(machine) pid=\(Int32.max) time=1"))
        #expect(gone.isLeftHere)
        let clone = try #require(FleetRotation.Claim("claimed host=\(FleetRotation.Claim.thisHost) machine=other pid=\(Int32.max) time=1"))
        #expect(!clone.isLeftHere)
    }

    /// Someone else's annotation text: no control characters survive into a message, and a time
    /// out of range (the future, a huge negative) counts as none, so the claim can be taken over.
    @Test func hostileTextIsShownPlainAndItsTimeIsNone() throws {
        #expect(FleetRotation.Claim(nil) == nil && FleetRotation.Claim("") == nil)
        let hostile = try #require(FleetRotation.Claim("claimed host=evil\u{1b}[2J\u{7}x pid=- time=-9223372036854775808"))
        #expect(hostile.host == "evil2Jx" && hostile.pid == nil && hostile.time(now: now) == 0)
        let future = try #require(FleetRotation.Claim("claimed host=a time=\(now + 86400)"))
        #expect(future.time(now: now) == 0)
        #expect(FleetRotation.Claim(String(repeating: "x", count: 2000)) == nil)
    }
}
