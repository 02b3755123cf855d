import SystemIO
import VaultCore

/// Reading a file that steers where a credential goes or holds one (a credential file, a
/// subject token file): the user's own, in a folder of the user's, writable by nobody else,
/// never a link another account planted; read whole into secret memory, at most 64 KiB.
enum TrustedRead {
    static let limit = 64 << 10

    /// nil when the file does not exist. `warnIfReadable`: a credential file readable by group
    /// or others is said once.
    static func file(_ path: String, what: String, warnIfReadable warn: (String) -> Void = { _ in }) throws(GoogleError) -> SecretBytes? {
        let (folderPath, name) = TrustedFolder.parent(of: path)
        let descriptor: FileDescriptor?
        do throws(TrustedOpenError) {
            guard let folder = try TrustedFolder.open(folderPath) else { return nil }
            descriptor = try TrustedFile.open(name, in: folder, requirement: .configuration)
        } catch {
            switch error {
            case .refused(let failure):
                throw GoogleError(.credentials, "refusing \(what) \(failure.path): it \(failure.problem.description)", hint: failure.problem.fix(for: failure.path))
            case .failed(let failure):
                throw GoogleError(.credentials, "cannot read \(what) \(path): \(failure.reason)")
            }
        }
        guard let descriptor else { return nil }
        if let status = try? descriptor.status(), status.permissions & 0o044 != 0 {
            warn("\(what) \(path) is readable by group or others (mode \(status.octalMode)); anyone who reads it can act as its account: chmod 600 \(ShellQuote.quote(path))")
        }
        let buffer = SecretBytes(count: limit)
        let length: Int
        do { length = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try descriptor.readFully(into: raw) } } catch {
            throw GoogleError(.credentials, "cannot read \(what) \(path): \(error.reason)")
        }
        guard length < limit else { throw GoogleError(.credentials, "\(what) \(path) is larger than 64 KiB") }
        buffer.truncate(to: length)
        return buffer
    }
}
