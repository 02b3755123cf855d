import GemvaultTesting
import Glibc
import Testing
@testable import SystemIO


func writeFile(_ path: String, _ text: String, mode: mode_t = 0o600) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    _ = text.withCString { write(fd, $0, strlen($0)) }
    fchmod(fd, mode)
    close(fd)
}

@Suite struct TrustedFileTests {
    /// Removed with everything in it when the test ends (Swift Testing makes a suite value per test).
    let scratch = TemporaryFolder("systemio")
    func scratchFolder() -> String { scratch.newFolder() }

    @Test func privateFileOpensAndMissingFileIsNil() throws {
        let folder = scratchFolder()
        writeFile(folder + "/secret", "hello")
        let file = try #require(try TrustedFile.open(folder + "/secret", requirement: .secret))
        #expect(try file.readAll(limit: 100) == Array("hello".utf8))
        #expect(try TrustedFile.open(folder + "/absent", requirement: .secret) == nil)
    }

    @Test func readAllKeepsItsLimitAcrossChunks() throws {
        let folder = scratchFolder()
        let big = String(repeating: "0123456789abcdef", count: 10_000)  // 160,000 bytes: three reads
        writeFile(folder + "/big", big)
        writeFile(folder + "/small", "hello")
        func read(_ name: String, limit: Int) throws -> [UInt8] {
            try #require(try TrustedFile.open(folder + "/" + name, requirement: .secret)).readAll(limit: limit)
        }
        #expect(try read("big", limit: 200_000) == Array(big.utf8))
        #expect(try read("big", limit: 160_000) == Array(big.utf8))
        #expect(throws: FileDescriptor.ReadFailure.tooLarge(limit: 159_999)) { try read("big", limit: 159_999) }
        #expect(try read("small", limit: 5) == Array("hello".utf8))
        #expect(throws: FileDescriptor.ReadFailure.tooLarge(limit: 4)) { try read("small", limit: 4) }
        #expect(throws: FileDescriptor.ReadFailure.tooLarge(limit: 0)) { try read("small", limit: 0) }
    }

    @Test func symlinkIsRefusedOnTheDescriptor() throws {
        let folder = scratchFolder()
        writeFile(folder + "/target", "x")
        symlink(folder + "/target", folder + "/link")
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/link", problem: .symbolicLink))) {
            try TrustedFile.open(folder + "/link", requirement: .secret)
        }
    }

    @Test func secretsMustBePrivateButConfigurationMayBeReadable() throws {
        let folder = scratchFolder()
        writeFile(folder + "/readable", "x", mode: 0o644)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/readable", problem: .openToOthers(mode: "0644")))) {
            try TrustedFile.open(folder + "/readable", requirement: .secret)
        }
        #expect(try TrustedFile.open(folder + "/readable", requirement: .configuration) != nil)
        writeFile(folder + "/writable", "x", mode: 0o664)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/writable", problem: .writableByOthers(mode: "0664")))) {
            try TrustedFile.open(folder + "/writable", requirement: .configuration)
        }
    }

    @Test func fifoIsRefusedWithoutBlocking() throws {
        let folder = scratchFolder()
        mkfifo(folder + "/fifo", 0o600)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/fifo", problem: .notRegular(.fifo)))) {
            try TrustedFile.open(folder + "/fifo", requirement: .secret)
        }
        #expect(PlainFile.readText(folder + "/fifo") == nil)
    }

    @Test func foldersWritableByOthersAreRefused() throws {
        let folder = scratchFolder()
        chmod(folder, 0o777)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder, problem: .folderWritableByOthers(mode: "0777")))) {
            try TrustedFolder.open(folder)
        }
        chmod(folder, 0o755)
        #expect(try TrustedFolder.open(folder) != nil)
    }

    @Test func hintsNeverSuggestChangingSomeoneElsesFile() {
        let foreign = FileProblem.foreignOwner(owner: 0, mode: "0644")
        #expect(!foreign.fix(for: "/etc/passwd").contains("chmod"))
        #expect(!foreign.fix(for: "/etc/passwd").contains("chown"))
        let personal = (ProcessIdentity.homeDirectory ?? "/home/me") + "/pass"
        #expect(FileProblem.openToOthers(mode: "0644").fix(for: personal) == "chmod 600 \(personal)")
        if geteuid() == 0 {
            // Root owns /etc/passwd, but it is not root's to make private.
            #expect(!FileProblem.openToOthers(mode: "0644").fix(for: "/etc/passwd").contains("chmod"))
        }
        #expect(ShellQuote.quote("/tmp/it's") == "'/tmp/it'\\''s'")
    }

    @Test func aWordStartingWithAnEqualsSignIsQuotedForZsh() {
        // zsh reads `=ls` as the path of ls; an `=` further in is plain.
        #expect(ShellQuote.quote("=ls") == "'=ls'")
        #expect(ShellQuote.quote("a=b") == "a=b")
    }

    @Test func aPathsParentIsFoundAtItsLastSlash() {
        #expect(TrustedFolder.parent(of: "vault") == (".", "vault"))
        #expect(TrustedFolder.parent(of: "/vault") == ("/", "vault"))
        #expect(TrustedFolder.parent(of: "/home/é/.gemvault/vault") == ("/home/é/.gemvault", "vault"))
        // A combining mark after the slash makes one Character of them; the slash still separates.
        #expect(TrustedFolder.parent(of: "/tmp/\u{301}x") == ("/tmp", "\u{301}x"))
    }

    @Test func savePrivateWritesANewFileSoOldReadersSeeNothingNew() throws {
        let folder = scratchFolder()
        writeFile(folder + "/notes.md", "old text that is longer", mode: 0o644)
        let reader = open(folder + "/notes.md", O_RDONLY)
        defer { close(reader) }
        try TrustedFile.savePrivate(folder + "/notes.md", Array("new".utf8))
        #expect(FileStatus.of(folder + "/notes.md")?.permissions == 0o600)
        #expect(PlainFile.readText(folder + "/notes.md") == "new")
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(reader, &buffer, 64)
        #expect(String(decoding: buffer[0..<max(0, n)], as: UTF8.self) == "old text that is longer")
    }

    @Test func foldersAreWalkedWithoutFollowingOthersLinks() throws {
        let folder = scratchFolder()
        mkdir(folder + "/real", 0o700)
        symlink(folder + "/real", folder + "/mine")
        // A link the user owns is followed; the folder it names is checked.
        #expect(try TrustedFolder.open(folder + "/mine/") != nil)
        if geteuid() == 0 {
            lchown(folder + "/mine", 54321, 54321)
            #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/mine", problem: .plantedLink(owner: 54321)))) {
                try TrustedFolder.open(folder + "/mine/sub")
            }
            mkdir(folder + "/theirs", 0o755)
            mkdir(folder + "/theirs/inner", 0o700)
            chown(folder + "/theirs", 54321, 54321)
            #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/theirs", problem: .folderForeignOwner(owner: 54321)))) {
                try TrustedFolder.open(folder + "/theirs/inner")
            }
        }
    }

    @Test func inputFilesFollowOnlyLinksNobodyElseCouldHavePlanted() throws {
        let folder = scratchFolder()
        writeFile(folder + "/notes.txt", "hello")
        symlink(folder + "/notes.txt", folder + "/mine.txt")
        #expect(try InputFile.read(folder + "/mine.txt", limit: 100) == Array("hello".utf8))
        #expect(try TrustedFolder.locate(folder + "/mine.txt")?.name == "notes.txt")
        // A link in a folder others can write to and that is not sticky could have been swapped.
        mkdir(folder + "/open", 0o777)
        chmod(folder + "/open", 0o777)
        symlink(folder + "/notes.txt", folder + "/open/link.txt")
        #expect(throws: InputFile.Failure.refused(FileCheckFailure(path: folder + "/open", problem: .folderWritableByOthers(mode: "0777")))) {
            try InputFile.read(folder + "/open/link.txt", limit: 100)
        }
        if geteuid() == 0 {
            lchown(folder + "/mine.txt", 54321, 54321)
            #expect(throws: InputFile.Failure.refused(FileCheckFailure(path: folder + "/mine.txt", problem: .plantedLink(owner: 54321)))) {
                try InputFile.read(folder + "/mine.txt", limit: 100)
            }
        }
        // A second name of the user's file where others can add names.
        link(folder + "/notes.txt", folder + "/open/copy.txt")
        #expect(throws: InputFile.Failure.refused(FileCheckFailure(path: folder + "/open/copy.txt", problem: .extraHardLink(links: 2)))) {
            try InputFile.read(folder + "/open/copy.txt", limit: 100)
        }
    }

    @Test func atomicReplaceLeavesNoTempFile() throws {
        let folder = try #require(try TrustedFolder.open(scratchFolder()))
        try Array("one".utf8).withUnsafeBytes { try folder.replace("file", with: $0, tempPrefix: ".file.tmp.") }
        try Array("two".utf8).withUnsafeBytes { try folder.replace("file", with: $0, tempPrefix: ".file.tmp.") }
        #expect(PlainFile.readText(folder.path(of: "file")) == "two")
        #expect(folder.names(withPrefix: ".file.tmp.").isEmpty)
    }
}

@Suite struct NetworkAddressTests {
    @Test(arguments: ["127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1"])
    func loopbackLiterals(_ host: String) { #expect(NetworkAddress.isLoopbackLiteral(host)) }

    @Test(arguments: ["127.evil.example", "128.0.0.1", "localhost.evil", "::2", "1.127.0.0", ""])
    func notLoopback(_ host: String) { #expect(!NetworkAddress.isLoopbackLiteral(host)) }

    @Test func endpointsOnlyBypassProxiesForPlainHttpToLoopback() throws {
        #expect(try #require(EndpointURL("http://127.0.0.1:8080")).bypassesProxy)
        #expect(try #require(EndpointURL("http://localhost:1")).bypassesProxy)
        #expect(try #require(EndpointURL("http://[::1]:1")).bypassesProxy)
        #expect(!(try #require(EndpointURL("https://127.0.0.1")).bypassesProxy))
        #expect(!(try #require(EndpointURL("http://127.evil.example")).isLoopback))
    }
}

@Suite struct ProcessSpawnerTests {
    @Test func childrenGetOnlyTheStandardDescriptors() throws {
        let null = open("/dev/null", O_RDONLY)
        let extra = dup2(null, 57)  // not close-on-exec, like a --passphrase-fd
        close(null)
        defer { close(extra) }
        let child = try ProcessSpawner.spawn(["ls", "/proc/self/fd"], environment: ["PATH": "/usr/bin:/bin"], input: .null, output: .pipe)
        let listing = String(decoding: try child.standardOutput!.readAll(limit: 4096), as: UTF8.self)
        #expect(child.wait() == .exited(0))
        // ls itself opens one descriptor to read the folder.
        let fds = listing.split(separator: "\n").compactMap { Int($0) }.filter { $0 > 2 }
        #expect(extra == 57 && !fds.contains(57) && fds.count <= 1)
    }

    @Test func aChildThatEndedIsSeenWithoutWaitingAndOneThatRunsIsNot() throws {
        let quick = try ProcessSpawner.spawn(["sh", "-c", "exit 3"], environment: [:])
        var ended = quick.endedYet()
        for _ in 0..<500 where ended == nil {
            usleep(10_000)
            ended = quick.endedYet()
        }
        #expect(ended == .exited(3))
        let slow = try ProcessSpawner.spawn(["sleep", "30"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(slow.endedYet() == nil)
        kill(slow.pid, SIGKILL)
        #expect(slow.wait() == .signaled(SIGKILL))
    }

    @Test func exitCodesAndSignalsAreReported() throws {
        #expect(try ProcessSpawner.spawn(["sh", "-c", "exit 7"], environment: [:]).wait() == .exited(7))
        let killed = try ProcessSpawner.spawn(["sh", "-c", "kill -TERM $$"], environment: [:]).wait()
        #expect(killed == .signaled(SIGTERM) && killed.shellStatus == 128 + SIGTERM)
    }
}

@Suite struct UnixSocketTests {
    let scratch = TemporaryFolder("socket")
    func scratchFolder() -> String { scratch.newFolder() }

    @Test func aSocketInAFolderDeeperThanASocketNameHoldsIsReachedThroughItsDescriptor() throws {
        var path = scratchFolder()
        while path.utf8.count < 200 { path += "/a-folder-name-of-thirty-bytes" }
        let folder = try TrustedFolder.create(path)
        let name = "agent-0123456789abcdef.sock"
        #expect(folder.path(of: name).utf8.count > UnixSocket.longestAddress)
        let address = try UnixSocket.address(of: name, in: folder.descriptor, path: folder.path(of: name))
        #expect(address.hasPrefix("/proc/self/fd/") && address.utf8.count <= UnixSocket.longestAddress)
        let listening = try UnixSocket.listen(name, in: folder.descriptor, path: folder.path(of: name))
        // The socket is in the folder itself, private.
        let status = try #require(FileStatus.of(link: folder.path(of: name)))
        #expect(status.kind == .socket && status.permissions & 0o777 == 0o600)
        let client = try UnixSocket.connect(name, in: folder.descriptor, path: folder.path(of: name), deadline: Clock.monotonicSeconds() + 5)
        let served = try #require(UnixSocket.accept(listening))
        try client.writeAll("hi")
        var buffer = [UInt8](repeating: 0, count: 2)
        #expect(try buffer.withUnsafeMutableBytes { try served.readFully(into: $0) } == 2 && buffer == Array("hi".utf8))
        #expect(try UnixSocket.peer(of: served).uid == CurrentUser.id)
    }

    @Test func theTailOfAFileIsItsLastBytes() throws {
        let folder = scratchFolder()
        writeFile(folder + "/log", "first line\nlast line\n")
        let file = try #require(try TrustedFile.open(folder + "/log", requirement: .secret))
        #expect(try file.readTail(limit: 10) == Array("last line\n".utf8))
        #expect(try file.readTail(limit: 1000) == Array("first line\nlast line\n".utf8))
    }

    @Test func theStartOfAFileIsAsMuchOfItAsTheLimitAllows() throws {
        let folder = scratchFolder()
        writeFile(folder + "/meter", "first line\nlast line\n")
        writeFile(folder + "/empty", "")
        let file = try #require(try TrustedFile.open(folder + "/meter", requirement: .secret))
        #expect(try file.readFromStart(limit: 4 << 20) == Array("first line\nlast line\n".utf8))
        #expect(try file.readFromStart(limit: 5) == Array("first".utf8))
        #expect(try #require(try TrustedFile.open(folder + "/empty", requirement: .secret)).readFromStart(limit: 4 << 20) == [])
    }

    @Test func pollReportsReadersAndWritersByIndex() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let a = FileDescriptor(owning: fds[0], path: "a")
        let b = FileDescriptor(owning: fds[1], path: "b")
        #expect(Poller.ready([(a, .read), (b, .write)], timeout: 0) == [1])
        try b.writeAll("x")
        #expect(Poller.ready([(a, .read), (b, .read)], timeout: 0) == [0])
    }
}

@Suite struct LoginRuntimeFolderTests {
    let scratch = TemporaryFolder("runtime")

    /// The fallback for a missing XDG_RUNTIME_DIR is taken only when private: a folder open to
    /// others could hold a socket or a secret file someone else swapped.
    @Test func onlyAPrivateFolderOfOursIsTaken() throws {
        let folder = scratch.newFolder()
        chmod(folder, 0o700)
        #expect(CurrentUser.loginRuntimeFolder(folder) == folder)
        for mode: mode_t in [0o750, 0o755, 0o707] {
            chmod(folder, mode)
            #expect(CurrentUser.loginRuntimeFolder(folder) == nil, "mode \(String(mode, radix: 8))")
        }
        chmod(folder, 0o700)
        #expect(CurrentUser.loginRuntimeFolder(folder + "/missing") == nil)
        let link = folder + "-link"
        symlink(folder, link)
        defer { unlink(link) }
        #expect(CurrentUser.loginRuntimeFolder(link) == nil)
    }
}

@Suite struct EndpointURLTests {
    @Test func asciiAndUnicodeURLsParseByTheSameRules() throws {
        let upper = try #require(EndpointURL("HTTPS://Generativelanguage.GoogleAPIs.com//"))
        #expect(upper.scheme == "https" && upper.host == "generativelanguage.googleapis.com")
        #expect(upper.normalized == "HTTPS://Generativelanguage.GoogleAPIs.com")
        #expect(try #require(EndpointURL("http://[::1]:8080/v1")).host == "::1")
        #expect(try #require(EndpointURL("http://127.0.0.1:+80")).host == "127.0.0.1")
        #expect(try #require(EndpointURL("https://bücher.example/x")).host == "bücher.example")
        #expect(try #require(EndpointURL("https://BÜCHER.Example:8443/x")).host == "bücher.example")
        #expect(try #require(EndpointURL("https://bücher.example/ü/")).normalized == "https://bücher.example/ü")
        for refused in ["ftp://host", "https://", "https:///path", "https://user@host", "https://host?q", "https://host/#f",
                        "https://host/a b", "https://host\t", "https://[::1", "https://host:port", "https://host:", "https://:80",
                        "https://bücher.example/a b", "https://bücher.example:x"] {
            #expect(EndpointURL(refused) == nil, "\(refused)")
        }
    }
}
