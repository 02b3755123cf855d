import SystemIO
import VaultCore

/// One rotator for the fleet: the claim in the secret's annotation `gemvault-rotation`.
extension FleetRotation {
    /// A rotator's claim, as the annotation holds it: `claimed host=H machine=M pid=P time=T`
    /// while it runs, `rotated version=N time=T` once done. Another writer's text is read
    /// defensively: odd characters are dropped from what is shown, and a time in the future
    /// counts as no time.
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

        /// Unix seconds, or 0 when missing, unreadable or later than a few minutes from now.
        func time(now: Int64) -> Int64 {
            guard let time = fields["time"].flatMap({ Int64($0) }), time >= 0, time <= now + 300 else { return 0 }
            return time
        }
        var host: String { fields["host"] ?? "?" }
        var pid: Int32? { fields["pid"].flatMap { Int32($0) } }
        var who: String { "\(host) (process \(pid.map(String.init) ?? "?"))" }

        /// A claim this machine made in a process that is gone: a run that was killed. The machine
        /// is told by its id, not its host name, which cloned machines share.
        var isLeftHere: Bool {
            guard let machine = fields["machine"], machine == Self.thisMachine else { return false }
            return !(pid.map(ProcessIdentity.isRunning) ?? false)
        }

        static let thisHost: String = plain(Substring(CurrentUser.host)).nonEmpty ?? "host"
        /// A fingerprint of /etc/machine-id (the host name where there is none).
        static let thisMachine: String =
            Sodium.fingerprint(PlainFile.readText("/etc/machine-id", limit: 256).map { plain(Substring($0)) }?.nonEmpty ?? thisHost)
        static func claiming(at now: Int64) -> String {
            "claimed host=\(thisHost) machine=\(thisMachine) pid=\(ProcessIdentity.current) time=\(now)"
        }
        static func rotated(to version: UInt64, at now: Int64) -> String { "rotated version=\(version) time=\(now)" }
    }
}
