import Dispatch
import GoogleAuth
import Synchronization
import SystemIO
import VaultCore

/// One rotator for the fleet: the claim in the secret's annotation `gemvault-rotation`.
extension FleetRotation {
    /// How often a rotator renews its claim while it holds it.
    static let heartbeatInterval = 30.0
    /// A claim not renewed for this long belongs to a rotator that stopped.
    static let claimStaleAfter: Int64 = 180
    /// A claim made longer ago than this is taken over whatever it says: the claim's lifetime
    /// (an hour) plus the longest run that holds one (`--verify-timeout` is at most an hour).
    static let claimLimit: Int64 = claimLifetime + 3600

    /// A rotator's claim, as the annotation holds it: `claimed host=H machine=M boot=B pidns=N
    /// pid=P since=S time=T` while it runs (`time` renewed by the heartbeat), `rotated
    /// version=N time=T` once done; times in Unix seconds of Google's clock (`GoogleClock`). Another writer's text is read defensively: odd characters
    /// are dropped from what is shown, and a time in the future counts as no time.
    struct Claim {
        let state: String
        let fields: [String: String]

        init?(_ text: String?) {
            guard let text, text.utf8.count <= 1024, case let words = text.split(separator: " "), let first = words.first else { return nil }
            state = Self.plain(first)
            var fields: [String: String] = [:]
            for word in words.dropFirst() {
                let parts = word.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { fields[Self.plain(parts[0])] = Self.plain(parts[1]) }
            }
            self.fields = fields
        }

        /// Letters, digits, `.`, `-` and `_`, at most 64: nothing that could reach a terminal as a control.
        static func plain(_ text: Substring) -> String {
            String(text.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-_".unicodeScalars.contains($0)) }
                .prefix(64).map(Character.init))
        }

        /// Unix seconds of `field`, or 0 when missing, unreadable or later than a few minutes from now.
        func seconds(_ field: String, now: Int64) -> Int64 {
            guard let time = fields[field].flatMap({ Int64($0) }), time >= 0, time <= now + 300 else { return 0 }
            return time
        }
        /// The last renewal.
        func time(now: Int64) -> Int64 { seconds("time", now: now) }
        /// When it was claimed (a claim without `since`, from an older gemvault, was never renewed).
        func since(now: Int64) -> Int64 { fields["since"] == nil ? time(now: now) : seconds("since", now: now) }
        var host: String { fields["host"] ?? "?" }
        var pid: Int32? { fields["pid"].flatMap { Int32($0) } }
        var who: String { "\(host) (process \(pid.map(String.init) ?? "?"))" }

        /// Where it runs: the machine, the boot and the PID namespace its pid means something in.
        var isThisRun: Bool { isHere && pid == ProcessIdentity.current }
        /// Made on this machine, in this boot, in this PID namespace: only then does its pid
        /// say whether it still runs. Containers and cloned machines share /etc/machine-id.
        var isHere: Bool {
            fields["machine"] == Self.thisMachine && fields["boot"] == Self.thisBoot && fields["pidns"] == Self.thisPIDNamespace
        }
        /// A claim this machine made in a process that is gone: a run that was killed.
        var isLeftHere: Bool { isHere && !(pid.map(ProcessIdentity.isRunning) ?? false) }

        /// Why it may be taken over, or nil while its holder is alive and renewing it.
        func abandoned(now: Int64) -> String? {
            let since = since(now: now), time = time(now: now)
            if since == 0 || time == 0 { return "with no readable time" }
            if isLeftHere { return "in a run that is gone" }
            if now - since >= FleetRotation.claimLimit { return "longer ago than any run lasts (\(Clock.elapsedText(FleetRotation.claimLimit)))" }
            if now - time >= FleetRotation.claimStaleAfter { return "and stopped renewing it \(Clock.elapsedText(now - time)) ago" }
            return nil
        }

        func described(now: Int64) -> String {
            "\(who), claimed \(Clock.elapsedText(now - since(now: now))) ago and renewed \(Clock.elapsedText(now - time(now: now))) ago"
        }

        static let thisHost: String = plain(Substring(CurrentUser.host)).nonEmpty ?? "host"
        /// A fingerprint of /etc/machine-id (the host name where there is none).
        static let thisMachine: String =
            Sodium.fingerprint(PlainFile.readText("/etc/machine-id", limit: 256).map { plain(Substring($0)) }?.nonEmpty ?? thisHost)
        static let thisBoot: String = Sodium.fingerprint(ProcessIdentity.bootID ?? "no-boot-id")
        static let thisPIDNamespace: String = ProcessIdentity.pidNamespace ?? "0"

        static func claiming(since: Int64, at now: Int64) -> String {
            "claimed host=\(thisHost) machine=\(thisMachine) boot=\(thisBoot) pidns=\(thisPIDNamespace) pid=\(ProcessIdentity.current) since=\(since) time=\(now)"
        }
        static func rotated(to version: UInt64, at now: Int64) -> String { "rotated version=\(version) time=\(now)" }
    }

    /// What a claim found on the secret means for this run: go on (taking it over when its
    /// holder is gone, or with --force), or stop. A person's plain --create refuses a live claim
    /// of another holder; a timer's run leaves it, unless it has not advanced the secret for two
    /// periods (`stuckAfter`): then it is stuck, and the timer's run fails so someone looks.
    static func judge(_ text: String?, _ call: RotationRequest, _ reference: SecretReference, name: String, now: Int64, versionAge: Int64,
                      stuckAfter: Int64?) throws -> Bool {
        guard let claim = Claim(text), claim.state == "claimed" else { return true }
        if let why = claim.abandoned(now: now) {
            call.progress.note("taking over the rotation of \(reference.resource) that \(claim.who) claimed \(why)")
            return true
        }
        let described = claim.described(now: now)
        if call.flag(.forceClaim) {
            call.progress.warning("--force: taking over the live claim on the rotation of \(reference.resource) by \(described)")
            return true
        }
        guard let stuckAfter else {
            throw RotationError.failed("the rotation of \(reference.resource) is claimed by \(described); nothing was rotated",
                                 hint: "wait for it, or, when that rotator is gone or not yours: gemvault key rotate --create \(name) --force")
        }
        if versionAge >= stuckAfter {
            throw RotationError.failed("the rotation of \(reference.resource) is stuck: \(described), and the secret's newest version is \(Clock.elapsedText(versionAge)) old, two rotation periods",
                                 hint: "find that rotator, or take the claim over: gemvault key rotate --create \(name) --force")
        }
        call.progress.note("rotated elsewhere: \(described) holds the rotation of \(reference.resource); this machine takes the new version within secret_cache_ttl")
        return false
    }
}

/// Google's clock as this machine reads it: its own clock moved by how far the Date header of
/// Secret Manager's last answer was from it. A claim's times are written and judged on it, so
/// no machine's clock, however far off, decides whether another machine's claim is live.
/// Without a Date header it is this machine's clock.
struct GoogleClock: Sendable {
    private var offset: Int64 = 0

    init(_ info: SecretInfo) { update(info) }

    mutating func update(_ info: SecretInfo) {
        if let googleTime = info.googleTime { offset = googleTime - Clock.now() }
    }

    func now() -> Int64 { Clock.now() + offset }
}

/// Renews a claim every `FleetRotation.heartbeatInterval` while the run holds it, each time
/// with the etag of the last patch, so that only a claim whose holder stopped is taken over.
/// When another rotator took the claim over, `lost` names it and the run stops before adding.
final class ClaimHeartbeat: @unchecked Sendable {
    private struct State {
        var info: SecretInfo
        var clock: GoogleClock
        var stopped = false
        var lost: String?
    }
    private let state: Mutex<State>
    /// One renewal at a time: the heartbeat's and `confirm`'s.
    private let renewal = Mutex(())
    private let done = DispatchSemaphore(value: 0)
    private let manager: SecretManagerClient
    private let reference: SecretReference
    private let since: Int64

    init(_ manager: SecretManagerClient, _ reference: SecretReference, claimed: SecretInfo, clock: GoogleClock, since: Int64) {
        self.manager = manager
        self.reference = reference
        self.since = since
        var clock = clock
        clock.update(claimed)
        state = Mutex(State(info: claimed, clock: clock))
        DispatchQueue.global(qos: .utility).async { self.run() }
    }

    /// Who took the claim over, once someone did.
    var lost: String? { state.withLock { $0.lost } }

    /// Google's time, as of the last answer.
    func googleNow() -> Int64 { state.withLock { $0.clock.now() } }

    /// Renews the claim now, just before the new version is added (the last beat may be 30 s
    /// old): who took it over, or nil while it is still this run's. Throws when Secret Manager
    /// cannot say, so that nothing is added on a claim that may be another's.
    func confirm() throws(GoogleError) -> String? {
        if let taker = lost { return taker }
        if let failure = renewal.withLock({ _ in renew() }) { throw failure }
        return lost
    }

    /// Stops renewing (waiting for a renewal under way) and gives the secret as last patched.
    func stop() -> SecretInfo {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { done.wait() }
        return state.withLock { $0.info }
    }

    private func run() {
        defer { done.signal() }
        let clock = WaitClock.standard
        var last = clock.now()
        while !state.withLock({ $0.stopped || $0.lost != nil }) {
            clock.sleep(1)
            guard clock.now() - last >= FleetRotation.heartbeatInterval, !state.withLock({ $0.stopped }) else { continue }
            last = clock.now()
            _ = renewal.withLock { _ in renew() }
        }
    }

    /// One renewal; the failure when the claim could be neither renewed nor read.
    private func renew() -> GoogleError? {
        let (info, clock) = state.withLock { ($0.info, $0.clock) }
        var annotations = info.annotations
        annotations[FleetRotation.claimAnnotation] = FleetRotation.Claim.claiming(since: since, at: clock.now())
        do throws(GoogleError) {
            let renewed = try manager.annotate(reference, annotations, etag: info.etag)
            state.withLock { state in
                state.info = renewed
                state.clock.update(renewed)
            }
            return nil
        } catch where error.reason == SecretManagerClient.etagConflict {
            // Another writer changed the secret: still ours when the claim is this run's.
            let current: SecretInfo
            do throws(GoogleError) { current = try manager.secret(reference) } catch { return error }
            let claim = FleetRotation.Claim(current.annotations[FleetRotation.claimAnnotation])
            state.withLock { state in
                state.info = current
                state.clock.update(current)
                if claim?.state != "claimed" || claim?.isThisRun != true || claim?.fields["since"] != String(since) {
                    state.lost = claim.map { $0.state == "claimed" ? $0.who : "a writer that left '\($0.state)'" } ?? "a writer that removed it"
                }
            }
            return nil
        } catch {
            // Out of reach for now: the next beat tries again, well within the claim's staleness.
            return error
        }
    }
}
