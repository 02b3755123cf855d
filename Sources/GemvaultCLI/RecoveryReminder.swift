import SystemIO
import TerminalIO

/// A recovery code shown at the first run but not confirmed as stored (Ctrl-C at the question)
/// is remembered by an empty file beside the vault, so the next plain `gemvault` says so. The
/// file holds nothing of the code; a new code (`recovery-code`) or a "yes" removes it.
enum RecoveryReminder {
    static func path(_ context: Context) -> String { context.vaultPath + ".recovery-unconfirmed" }

    static func remember(_ context: Context) {
        do { try TrustedFile.savePrivate(path(context), []) } catch {
            Console.warning("could not note that the recovery code is unconfirmed (\(error))")
        }
    }

    static func forget(_ context: Context) {
        guard let (folder, name) = try? TrustedFolder.locate(path(context)), let name else { return }
        _ = folder.remove(name)
    }

    static func isPending(_ context: Context) -> Bool { FileStatus.of(link: path(context)) != nil }

    /// At the next run: asks again, and names the way out when the code was not kept.
    static func askAgain(_ context: Context) {
        guard isPending(context) else { return }
        Console.warning("the recovery code shown when this vault was made was never confirmed as stored")
        if TerminalQuestion.confirm("Have you stored the recovery code?") {
            forget(context)
        } else {
            Console.hint("'gemvault recovery-code' makes a new one and prints it once; the old one stops working")
        }
    }
}
