import SystemIO
import Testing
@testable import Rotation

/// The rotator's claim as the secret's annotation carries it (Docs/fleet.md, "One rotator for the fleet").
@Suite struct FleetRotationClaimTests {
    let now: Int64 = 1_700_000_000

    @Test func aClaimReadsBackWhatItWrote() throws {
        let claim = try #require(FleetRotation.Claim(FleetRotation.Claim.claiming(since: now - 60, at: now)))
        #expect(claim.state == "claimed" && claim.time(now: now) == now && claim.since(now: now) == now - 60 && claim.pid == ProcessIdentity.current)
        #expect(claim.host == FleetRotation.Claim.thisHost && !claim.isLeftHere && claim.isThisRun)  // this process runs
        #expect(claim.abandoned(now: now) == nil)
        let done = try #require(FleetRotation.Claim(FleetRotation.Claim.rotated(to: 8, at: 5)))
        #expect(done.state == "rotated" && done.fields["version"] == "8" && done.time(now: now) == 5)
    }

    /// A run is told by its machine id, boot and PID namespace together: a clone with the same
    /// host name, or a container with the same machine id, does not take over a live claim.
    @Test func onlyThisMachinesBootsAndNamespacesClaimOfAProcessThatIsGoneIsLeftHere() throws {
        let here = "machine=\(FleetRotation.Claim.thisMachine) boot=\(FleetRotation.Claim.thisBoot)"
        let gone = try #require(FleetRotation.Claim("claimed host=x \(here) pidns=\(FleetRotation.Claim.thisPIDNamespace) pid=\(Int32.max) time=1"))
        #expect(gone.isLeftHere)
        let clone = try #require(FleetRotation.Claim("claimed host=\(FleetRotation.Claim.thisHost) machine=other pid=\(Int32.max) time=1"))
        #expect(!clone.isLeftHere)
        let container = try #require(FleetRotation.Claim("claimed host=x \(here) pidns=1 pid=\(Int32.max) time=1"))
        #expect(!container.isLeftHere)
        let rebootedClone = try #require(FleetRotation.Claim("claimed host=x machine=\(FleetRotation.Claim.thisMachine) boot=other pidns=\(FleetRotation.Claim.thisPIDNamespace) pid=\(Int32.max) time=1"))
        #expect(!rebootedClone.isLeftHere)
    }

    /// Taken over when renewal stopped, when claimed longer ago than any run, or without a time.
    @Test func aClaimIsAbandonedWhenNotRenewedOrTooOld() throws {
        func claim(since: Int64, time: Int64) throws -> FleetRotation.Claim {
            try #require(FleetRotation.Claim("claimed host=a pid=1 since=\(now - since) time=\(now - time)"))
        }
        #expect(try claim(since: 100, time: 10).abandoned(now: now) == nil)
        #expect(try claim(since: 400, time: 180).abandoned(now: now)?.contains("stopped renewing") == true)
        #expect(try claim(since: FleetRotation.claimLimit, time: 1).abandoned(now: now)?.contains("longer ago than any run") == true)
        #expect(try #require(FleetRotation.Claim("claimed host=a pid=1")).abandoned(now: now) == "with no readable time")
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
