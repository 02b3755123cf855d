import Glibc

/// An exclusive flock on a lock file inside a trusted folder, waited for with a bound.
/// Closing the descriptor (when the object goes away) releases it.
public final class FileLock {
    public enum Failure: Error, Equatable, Sendable {
        case open(TrustedOpenError)
        /// Another process held the lock for the whole wait; `holder` describes it when known.
        case timedOut(path: String, seconds: Double, holder: String?)
        case failed(SystemError)
    }

    private let descriptor: FileDescriptor

    private init(descriptor: FileDescriptor) { self.descriptor = descriptor }

    /// Takes the lock on `name` in `folder`, creating the file (0600) when needed. When the lock
    /// is busy, `onWait` is told once who holds it; after `timeout` seconds the wait fails.
    public static func acquire(_ name: String, in folder: TrustedFolder, timeout: Double,
                               onWait: (String) -> Void) throws(Failure) -> FileLock {
        let opened: FileDescriptor?
        do { opened = try TrustedFile.open(name, in: folder, requirement: .secret, flags: O_RDWR | O_CREAT) } catch { throw .open(error) }
        guard let descriptor = opened else { throw .failed(SystemError("open", path: folder.path(of: name), code: ENOENT)) }
        let deadline = Deadline(after: timeout)
        var told = false
        while flock(descriptor.raw, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            guard code == EWOULDBLOCK else { throw .failed(SystemError("lock", path: descriptor.path, code: code)) }
            let holder = told ? nil : holderDescription(descriptor)
            if !told {
                onWait("waiting for \(descriptor.path), held by \(holder ?? "another process")")
                told = true
            }
            if deadline.hasPassed {
                throw .timedOut(path: descriptor.path, seconds: timeout, holder: holderDescription(descriptor))
            }
            usleep(20_000)
        }
        return FileLock(descriptor: descriptor)
    }

    /// What the holder left in the lock file for the next one (a small record, never a secret).
    public func record(limit: Int = 4096) throws(SystemError) -> [UInt8] { try descriptor.readFromStart(limit: limit) }

    /// Replaces that record, durably: it must survive a `kill -9` of this holder.
    public func keep(_ record: [UInt8]) throws(SystemError) { try descriptor.overwrite(record) }

    /// "pid 1234 (gemvault, uid 1000)" from /proc/locks, matched by inode.
    static func holderDescription(_ descriptor: FileDescriptor) -> String? {
        guard let status = try? descriptor.status(),
              let locks = try? FileDescriptor.openIfPresent("/proc/locks", flags: O_RDONLY)?.readAll(limit: 1 << 20) else { return nil }
        for line in String(decoding: locks, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after the id.
            // "MAJ:MIN:INODE", major and minor in hex: the device must match too, or another
            // file system's inode could pass for ours.
            let device = fields.count >= 6 ? fields[5].split(separator: ":") : []
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]), pid > 0, device.count == 3,
                  UInt64(device[2]) == status.inode, UInt64(device[0], radix: 16) == status.deviceMajor,
                  UInt64(device[1], radix: 16) == status.deviceMinor else { continue }
            var text = "pid \(pid)"
            var details: [String] = []
            if let comm = try? FileDescriptor.openIfPresent("/proc/\(pid)/comm", flags: O_RDONLY)?.readAll(limit: 64) {
                details.append(String(decoding: comm, as: UTF8.self).filter { !$0.isNewline && $0.isASCII && !($0.asciiValue! < 0x20) })
            }
            if let owner = FileStatus.of("/proc/\(pid)")?.owner { details.append("uid \(owner)") }
            if !details.isEmpty { text += " (" + details.joined(separator: ", ") + ")" }
            return text
        }
        return nil
    }
}

public enum Clock {
    /// "90 seconds", "5 minutes", "3 hours", "4 days": how long ago, as a person reads it.
    public static func elapsedText(_ seconds: Int64) -> String {
        let elapsed = max(0, seconds)
        switch elapsed {
        case ..<120: return "\(elapsed) seconds"
        case ..<7200: return "\(elapsed / 60) minutes"
        case ..<172_800: return "\(elapsed / 3600) hours"
        default: return "\(elapsed / 86400) days"
        }
    }

    /// Sleeps for `seconds`.
    /// In steps of at most 1,000 s: a 32-bit `useconds_t` holds no more than about 71 minutes.
    public static func sleep(_ seconds: Double) {
        var left = seconds.isFinite ? max(0, seconds) : 0
        while left > 0 {
            let step = min(left, 1000)
            usleep(useconds_t(step * 1_000_000))
            left -= step
        }
    }

    /// Unix seconds (moved on by `TestHooks.clockOffset` in the end-to-end suite's debug runs).
    public static func now() -> Int64 { Int64(time(nil)) + TestHooks.clockOffset }

    /// `2026-11-29 20:02 CET` in the local time zone (TZ): what a person reads.
    public static func localDate(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let zone = parts.tm_zone.map { String(cString: $0) } ?? "UTC"
        return "\(Int(parts.tm_year) + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)) \(zone)"
    }

    /// RFC 3339 in UTC: `2026-11-29T19:02:21Z`.
    public static func isoDate(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        // Digits written straight into 20 bytes: key list prints thousands of these.
        var text = [UInt8](repeating: 0, count: 20)
        func put(_ value: Int32, at offset: Int, digits: Int) {
            var rest = max(0, value)
            for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                text[index] = 0x30 + UInt8(rest % 10)
                rest /= 10
            }
        }
        put(parts.tm_year &+ 1900, at: 0, digits: 4)  // wrapping: a hostile date must not trap
        put(parts.tm_mon + 1, at: 5, digits: 2)
        put(parts.tm_mday, at: 8, digits: 2)
        put(parts.tm_hour, at: 11, digits: 2)
        put(parts.tm_min, at: 14, digits: 2)
        put(parts.tm_sec, at: 17, digits: 2)
        for (index, separator) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "Z")] as [(Int, Character)] {
            text[index] = separator.asciiValue!
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Like the monotonic clock, but it keeps counting while the machine is suspended.
    public static func bootSeconds() -> Double {
        var now = timespec()
        clock_gettime(7 /* CLOCK_BOOTTIME */, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    public static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
