import SystemIO
import VaultCore

/// `unlock` could not start its agent (exit 1).
extension AgentStartFailure: ReportableError {
    public var report: FailureReport {
        let shorterFolder = "set XDG_RUNTIME_DIR to a shorter folder of your own (mode 0700)"
        return switch self {
        case .socketPathTooLong(let path, let folder):
            FailureReport(.failure, "the agent's socket would be a path of \(path.utf8.count) bytes, more than the \(SystemError.longestPath) the system takes (\(folder))", hint: shorterFolder)
        case .folderRefused(let message, let fix, let runtimeFolderSet):
            FailureReport(.failure, message, hint: runtimeFolderSet ? fix : "another user may have created it; set XDG_RUNTIME_DIR to a folder of your own (mode 0700), or \(fix)")
        case .socketNameTooLong(let path):
            FailureReport(.failure, "the agent's socket \(path) is \(path.utf8.count) bytes, more than the \(UnixSocket.longestAddress) a socket name holds, and /proc/self/fd is not there to shorten it",
                          hint: shorterFolder)
        case .notSpawned(let reason): FailureReport(.failure, "could not start the agent: \(reason)")
        case .stoppedAtOnce(let lastError, let log): FailureReport(.failure, "the agent stopped at once" + (lastError.map { ": \($0)" } ?? ""), hint: "its log is \(log)")
        case .didNotStart(let log): FailureReport(.failure, "the agent did not start within \(Int(VaultSession.startLimit)) s", hint: "its log is \(log)")
        }
    }
}
