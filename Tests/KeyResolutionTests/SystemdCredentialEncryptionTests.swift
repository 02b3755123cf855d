import Foundation
import GemvaultTesting
import Glibc
import Testing
@testable import KeyResolution

/// How `key export --systemd-creds` runs systemd-creds (issue 40 item 11): as the user when the
/// host key is readable, otherwise through sudo; the pipe a hint offers is quoted for a shell.
@Suite struct SystemdCredentialEncryptionTests {
    @Test func theHostKeyIsSystemdsUnlessTheVariableNamesAnother() {
        #expect(SystemdCredentialEncryption.hostKey(environment: [:]) == "/var/lib/systemd/credential.secret")
        #expect(SystemdCredentialEncryption.hostKey(environment: ["SYSTEMD_CREDENTIAL_SECRET": ""]) == "/var/lib/systemd/credential.secret")
        #expect(SystemdCredentialEncryption.hostKey(environment: ["SYSTEMD_CREDENTIAL_SECRET": "/tmp/k"]) == "/tmp/k")
    }

    @Test func rootNeverNeedsSudoAUserDoesUnlessTheHostKeyIsReadable() throws {
        let folder = TemporaryFolder("hostkey")
        let readable = folder.appending("readable")
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: readable))
        let absent = ["SYSTEMD_CREDENTIAL_SECRET": folder.appending("absent")]
        #expect(!SystemdCredentialEncryption.needsRoot(environment: absent, effectiveUser: 0))
        #expect(SystemdCredentialEncryption.needsRoot(environment: absent, effectiveUser: 1000))
        #expect(!SystemdCredentialEncryption.needsRoot(environment: ["SYSTEMD_CREDENTIAL_SECRET": readable], effectiveUser: 1000))
    }

    @Test func theKeyGoesOnStdinAndTheCredentialToStdoutOrTheFile() {
        #expect(SystemdCredentialEncryption.arguments(credential: "gemini-api-key", tpm2: false, output: nil, pretty: true)
                == ["systemd-creds", "encrypt", "--name=gemini-api-key", "--with-key=host", "--pretty", "-", "-"])
        let sudo = SystemdCredentialEncryption.throughSudo(
            SystemdCredentialEncryption.arguments(credential: "lab", tpm2: true, output: "/etc/gemvault/lab.cred", pretty: false))
        #expect(sudo == ["sudo", "-p", SystemdCredentialEncryption.sudoPrompt, "--",
                         "systemd-creds", "encrypt", "--name=lab", "--with-key=host+tpm2", "-", "/etc/gemvault/lab.cred"])
    }

    @Test func theManualPipeIsQuotedForAShell() {
        let pipe = SystemdCredentialEncryption.manualPipe(program: "/usr/local/bin/gemvault", name: "it's", credential: "gemini-api-key",
                                                          tpm2: false, output: "/home/a b/lab.cred")
        #expect(pipe == "(umask 077; /usr/local/bin/gemvault key get 'it'\\''s' | sudo systemd-creds encrypt --name=gemini-api-key --with-key=host - '/home/a b/lab.cred')")
        let inline = SystemdCredentialEncryption.manualPipe(program: "/usr/bin/gemvault", name: "lab", credential: "x", tpm2: true, output: nil)
        #expect(inline.hasSuffix("| sudo systemd-creds encrypt --name=x --with-key=host+tpm2 --pretty - -)"))
    }
}
