import Foundation
import GemvaultTesting
import Testing
import VaultCore
@testable import KeyResolution

/// How `key export` runs systemd-creds (moved out of the CLI): the key goes on stdin, the
/// credential comes from stdout, and each way it can fail is a typed failure.
@Suite struct SystemdCredentialRunTests {
    static let environment = ["PATH": "/usr/local/bin:/usr/bin:/bin"]

    static func run(_ script: String) -> SystemdCredentialEncryption.Run {
        .init(arguments: ["sh", "-c", script], throughSudo: false, manualPipe: "(by hand)")
    }

    @Test func theKeyGoesOnStdinAndStdoutIsTheCredential() throws {
        let out = try SystemdCredentialEncryption.encrypt(SecretBytes(utf8: "AQ.secret"), with: Self.run("tr a-z A-Z"), environment: Self.environment)
        #expect(String(decoding: out, as: UTF8.self) == "AQ.SECRET")
    }

    @Test func aFailedRunCarriesItsStatusAndWhatItSaid() {
        #expect(throws: SystemdCredentialFailure.exited(throughSudo: false, status: 3, said: "no host key", manualPipe: "(by hand)")) {
            try SystemdCredentialEncryption.encrypt(SecretBytes(utf8: "k"), with: Self.run("cat >/dev/null; echo ' no host key ' >&2; exit 3"),
                                                    environment: Self.environment)
        }
    }

    @Test func aMissingProgramIsNotInstalledAndAMissingSudoSaysWhatToRunByHand() {
        let absent = SystemdCredentialEncryption.Run(arguments: ["gv-no-such-systemd-creds"], throughSudo: false, manualPipe: "(by hand)")
        #expect(throws: SystemdCredentialFailure.notInstalled) {
            try SystemdCredentialEncryption.encrypt(SecretBytes(utf8: "k"), with: absent, environment: Self.environment)
        }
        // Through sudo, systemd-creds must be in PATH before sudo is even tried.
        let noCreds = SystemdCredentialEncryption.Run(arguments: ["sudo", "systemd-creds"], throughSudo: true, manualPipe: "(by hand)")
        #expect(throws: SystemdCredentialFailure.notInstalled) {
            try SystemdCredentialEncryption.encrypt(SecretBytes(utf8: "k"), with: noCreds, environment: ["PATH": "/nonexistent"])
        }
    }

    @Test func theOutputFileIsReplacedOnlyWithForceAndNeverThroughALink() throws {
        let folder = TemporaryFolder("credential-target")
        let absent = folder.appending("new.cred"), present = folder.appending("old.cred"), link = folder.appending("link.cred")
        try Data("old".utf8).write(to: URL(fileURLWithPath: present))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: present)
        try SystemdCredentialEncryption.checkTarget(absent, replacing: false)
        try SystemdCredentialEncryption.checkTarget(present, replacing: true)
        #expect(throws: SystemdCredentialFailure.targetExists(path: present)) { try SystemdCredentialEncryption.checkTarget(present, replacing: false) }
        #expect(throws: SystemdCredentialFailure.targetIsLink(path: link)) { try SystemdCredentialEncryption.checkTarget(link, replacing: true) }
    }
}
