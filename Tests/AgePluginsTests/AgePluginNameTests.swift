import AgeFormat
import AgePlugins
import Foundation
import Glibc
import Testing
import VaultCore

/// Plugin names from recipients and identities (age-plugin.md's NAME, never a path), and runs of
/// small shell plugins that break the protocol: each ends in an error naming the plugin.
@Suite struct AgePluginNameTests {
    // A gvtest recipient and identity (made by Tests/EndToEnd/age_plugin_gvtest.py --generate).
    let recipient = "age1gvtest10v82n0exuux3pv6jcha3699eueptnfsn89tphuj05rz0s6cwwvtsl4cj3k"
    let identity = "AGE-PLUGIN-GVTEST-1EPD7Y9EGLDQCET9CULSV3P2LU0KDTA7HCF72PSCN8RRGWA6HUEGQ50YFHR"

    @Test func namesComeFromTheBech32PartAndOnlyFromAllowedCharacters() throws {
        #expect(AgePluginName.ofRecipient(recipient) == "gvtest")
        #expect(AgePluginName.ofRecipient("age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p") == nil, "a native recipient")
        #expect(AgePluginName.ofRecipient(recipient.uppercased()) == nil, "a recipient is lowercase")
        #expect(AgePluginName.ofRecipient(String(recipient.dropLast()) + "q") == nil, "a wrong checksum")
        #expect(AgePluginName.isValid("yubi.key_2+x-y"))
        for bad in ["", "a/b", "..x/y", "a b", "é"] { #expect(!AgePluginName.isValid(bad), "\(bad)") }
        var line = Array(identity.utf8)
        #expect(AgePluginName.ofIdentity(SecretBytes(taking: &line)) == "gvtest")
        let made = AgePluginName.defaultIdentity("yubikey")
        #expect(made.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.hasPrefix("AGE-PLUGIN-YUBIKEY-1"))
        #expect(AgePluginName.ofIdentity(made) == "yubikey")
        #expect(throws: AgeError.self) { try AgePluginIdentity.defaultIdentity(plugin: "../../bin/sh") }
    }

    @Test func theLimitsComeFromTheEnvironmentWithinTheirBounds() {
        #expect(AgePluginLimits.from([:]).stepSeconds == AgePluginLimits.defaultStepSeconds)
        #expect(AgePluginLimits.from(["GEMVAULT_AGE_PLUGIN_TIMEOUT": "0"]).stepSeconds == 1)
        #expect(AgePluginLimits.from(["GEMVAULT_AGE_PLUGIN_TIMEOUT": "99999"]).stepSeconds == 3600)
        #expect(AgePluginLimits.from(["GEMVAULT_AGE_PLUGIN_TIMEOUT": "3600"]).runSeconds == 18000)
    }

    /// A folder with `age-plugin-gvtest` as the shell script `body`.
    func pluginFolder(_ body: String) throws -> String {
        var template = Array("/tmp/gv-plugin-XXXXXX".utf8CString)
        let folder = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
        let path = folder + "/age-plugin-gvtest"
        let file = fopen(path, "w")!
        fputs("#!/bin/sh\n" + body + "\n", file)
        fclose(file)
        chmod(path, 0o755)
        return folder
    }

    func wrapError(_ body: String, path: String? = nil, limits: AgePluginLimits = AgePluginLimits(stepSeconds: 2, runSeconds: 10)) throws -> String {
        let folder = try pluginFolder(body)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let context = AgePluginContext(environment: ["PATH": path ?? "/usr/bin:/bin:" + folder], user: TerminalPluginUser(), limits: limits)
        let plugin = try #require(AgePluginRecipient(parsing: recipient, context: context))
        do {
            _ = try plugin.wrap(SecretBytes.random(count: 16))
        } catch {
            #expect(error.kind == .plugin)
            return error.detail
        }
        Issue.record("the plugin run succeeded")
        return ""
    }

    @Test func aBrokenPluginEndsInAnErrorNamingIt() throws {
        // As gemvault does (ProcessHardening): a plugin that ends early is EPIPE, not a signal.
        signal(SIGPIPE, SIG_IGN)
        #expect(try wrapError("echo 'no such key' >&2; exit 7").contains("age-plugin-gvtest ended before finishing (exit status 7); it said: no such key"))
        #expect(try wrapError("sed -n '/^-> done/q'; printf 'hello\\n'").contains("sent a line that is not a command"))
        #expect(try wrapError("sed -n '/^-> done/q'; printf -- '-> msg\\n%%%%%%\\n'").contains("not canonical base64"))
        #expect(try wrapError("sed -n '/^-> done/q'; printf -- '-> done\\n\\n'").contains("returned 0 stanzas for 1 recipient"))
        #expect(try wrapError("exec sleep 30").contains("did not answer within 2 seconds"))
        #expect(try wrapError("head -c 100000 /dev/zero | tr '\\0' x").contains("sent a line over"))
    }

    /// Docs/sharing.md's "Bounds": a run that outlasts its whole-run bound (each step within its
    /// own), and a plugin that keeps sending commands, end in errors saying which bound.
    @Test func aPluginPastItsBoundsEndsInAnErrorNamingTheBound() throws {
        signal(SIGPIPE, SIG_IGN)
        let slow = try wrapError("sed -n '/^-> done/q'; exec sleep 30", limits: AgePluginLimits(stepSeconds: 5, runSeconds: 1))
        #expect(slow.contains("age-plugin-gvtest ran past gemvault's bound of 1 second for one run"), "\(slow)")
        var chatty = AgePluginLimits(stepSeconds: 5, runSeconds: 10)
        chatty.commandLimit = 3
        let endless = try wrapError("sed -n '/^-> done/q'; while :; do printf -- '-> msg\\n\\n'; done", limits: chatty)
        #expect(endless.contains("age-plugin-gvtest sent more than 3 commands without finishing"), "\(endless)")
    }

    @Test func thePluginIsFoundOnlyInAbsolutePathEntries() throws {
        let folder = try pluginFolder("exit 0")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A relative entry that leads to the plugin from the current folder (no chdir: tests run side by side).
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + folder.dropFirst()
        #expect(FileManager.default.isExecutableFile(atPath: relative + "/age-plugin-gvtest"))
        #expect(try wrapError("exit 0", path: relative).contains("age-plugin-gvtest was not found on PATH"))
        #expect(try wrapError("exit 0", path: "").contains("was not found on PATH"))
    }
}

/// `AgePluginUnwrap.decrypt` with a plugin's default identity: a file sealed to a plugin recipient
/// opens with no identity file. The plugin here is a shell script whose `null` stanza carries the
/// file key in the clear: the protocol is what is tested, not the plugin's crypto.
@Suite struct AgePluginUnwrapTests {
    static let nullPlugin = """
        #!/bin/sh
        # recipient-v1: the stanza is the file key itself; identity-v1: the stanza's body is the key.
        log="FOLDER/seen"
        mode="$1"; key=""; next=""; count=0
        while read -r line; do
            echo "$line" >> "$log"
            case "$next" in key) key="$line"; next="";; esac
            case "$line" in
                "-> add-recipient "*|"-> add-identity "*) count=$((count + 1));;
                "-> wrap-file-key") next=key;;
                "-> recipient-stanza 0 null") next=key;;
                "-> done") break;;
            esac
        done
        if [ "$mode" = "--age-plugin=recipient-v1" ]; then
            while [ "$count" -gt 0 ]; do
                printf -- '-> recipient-stanza 0 null\\n%s\\n' "$key"; read -r ok; read -r blank; count=$((count - 1))
            done
            if [ -n "$NULL_LABEL" ]; then printf -- '-> labels %s\\n\\n' "$NULL_LABEL"; read -r ok; read -r blank; fi
        else
            printf -- '-> file-key 0\\n%s\\n' "$key"; read -r ok; read -r blank
        fi
        printf -- '-> done\\n\\n'
        """

    /// A folder holding `age-plugin-null`.
    static func nullPluginFolder() -> String {
        var template = Array("/tmp/gv-plugin-XXXXXX".utf8CString)
        let folder = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
        let file = fopen(folder + "/age-plugin-null", "w")!
        // The plugin runs from its checked descriptor ($0 is /proc/self/fd/3): its log's folder is written in.
        fputs(Self.nullPlugin.replacingOccurrences(of: "FOLDER", with: folder) + "\n", file)
        fclose(file)
        chmod(folder + "/age-plugin-null", 0o755)
        return folder
    }

    @Test func aFileSealedToAPluginRecipientOpensWithItsDefaultIdentity() throws {
        signal(SIGPIPE, SIG_IGN)
        let folder = Self.nullPluginFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let context = AgePluginContext(environment: ["PATH": "/usr/bin:/bin:" + folder], user: TerminalPluginUser(),
                                       limits: AgePluginLimits(stepSeconds: 5, runSeconds: 10))
        let recipientText = "age1null1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqd3r7mm"
        let made = try #require(AgePluginRecipient(parsing: recipientText, context: context))
        var plaintext = Array("the data key".utf8)
        let sealed = try AgeFile.encrypt(SecretBytes(taking: &plaintext), to: [made])
        let opened = try AgePluginUnwrap.decrypt(sealed, identities: [], recipients: [recipientText], context: context)
        #expect(opened.withUnsafeBytes { Array($0) } == Array("the data key".utf8))
        let seen = String(decoding: try #require(fopen(folder + "/seen", "r")).readAll(), as: UTF8.self)
        #expect(seen.contains("-> add-identity AGE-PLUGIN-NULL-1"), "the default identity, with no data")
        #expect(throws: AgeError(.noMatch, "no identity was given, and no recipient is a plugin's")) {
            try AgePluginUnwrap.decrypt(sealed, identities: [], recipients: ["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"], context: context)
        }
    }
}

extension AgePluginUnwrapTests {
    /// A plugin recipient is post-quantum once its plugin labels its stanzas so, not before.
    @Test func thePostquantumLabelMakesThePluginRecipientPostQuantum() throws {
        signal(SIGPIPE, SIG_IGN)
        let folder = Self.nullPluginFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (label, expected) in [("postquantum", true), ("something-else", false)] {
            let context = AgePluginContext(environment: ["PATH": "/usr/bin:/bin:" + folder, "NULL_LABEL": label], user: TerminalPluginUser(),
                                           limits: AgePluginLimits(stepSeconds: 5, runSeconds: 10))
            let recipient = try #require(AgePluginRecipient(parsing: "age1null1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqd3r7mm", context: context))
            #expect(!recipient.isPostQuantum)
            var plaintext = Array("x".utf8)
            _ = try AgeFile.encrypt(SecretBytes(taking: &plaintext), to: [recipient])
            #expect(recipient.isPostQuantum == expected, "\(label)")
        }
    }
}

extension UnsafeMutablePointer<FILE> {
    func readAll() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            let character = fgetc(self)
            if character == EOF { break }
            bytes.append(UInt8(truncatingIfNeeded: character))
        }
        fclose(self)
        return bytes
    }
}
