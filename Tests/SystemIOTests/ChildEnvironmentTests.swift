import SystemIO
import Testing

/// The environment a started program gets: the one given, changed by `changes` (nil removes a
/// variable, the last change to a name wins), with the secret variables over both.
@Suite struct ChildEnvironmentTests {
    @Test func changesSetAndRemoveVariablesAndSecretVariablesWinOverBoth() throws {
        let environment = ["PATH": "/usr/bin:/bin", "KEEP": "kept", "GONE": "there", "TWICE": "old", "SECRET": "plain"]
        let secret = Array("from secret memory".utf8)
        let changes: [(name: String, value: String?)] = [("GONE", nil), ("TWICE", "first"), ("ADDED", "new"), ("TWICE", "last"), ("SECRET", "changed")]
        let child = try secret.withUnsafeBytes { value throws(SystemError) in
            try ProcessSpawner.spawn(["sh", "-c", "printf '%s|%s|%s|%s|%s' \"$KEEP\" \"${GONE-unset}\" \"$TWICE\" \"$ADDED\" \"$SECRET\""],
                                     environment: environment, changes: changes, output: .pipe, secretVariables: [(name: "SECRET", value: value)])
        }
        let printed = try #require(child.standardOutput).readAll(limit: 1024)
        #expect(child.wait() == .exited(0))
        #expect(String(decoding: printed, as: UTF8.self) == "kept|unset|last|new|from secret memory")
    }

    @Test func withoutChangesTheEnvironmentIsPassedAsGiven() throws {
        let child = try ProcessSpawner.spawn(["sh", "-c", "printf '%s' \"$ONLY\""], environment: ["PATH": "/usr/bin:/bin", "ONLY": "this"], output: .pipe)
        let printed = try #require(child.standardOutput).readAll(limit: 1024)
        #expect(child.wait() == .exited(0) && String(decoding: printed, as: UTF8.self) == "this")
    }
}
