import GemvaultTesting
import Glibc
import Testing
@testable import SystemIO

/// A program found on PATH (an age plugin) is checked on its descriptor and run from it: one
/// another account could change is refused, and what runs is what was checked.
@Suite struct TrustedProgramTests {
    let scratch = TemporaryFolder("program")

    /// A shell script `name` in `folder` that prints `text` and its own $0.
    func program(_ folder: String, _ name: String = "tool", printing text: String, mode: mode_t = 0o755) -> String {
        let path = folder + "/" + name
        writeFile(path, "#!/bin/sh\necho \(text) \"$0\"\n", mode: mode)
        return path
    }

    func output(of checked: FileDescriptor, named path: String) throws -> String {
        let child = try ProcessSpawner.spawn([path], environment: ["PATH": "/usr/bin:/bin"], input: .null, output: .pipe, program: checked)
        let printed = try #require(child.standardOutput).readAll(limit: 4096)
        #expect(child.wait() == .exited(0))
        return String(decoding: printed, as: UTF8.self)
    }

    @Test func theCheckedProgramIsTheOneThatRunsEvenIfItsNameIsReplaced() throws {
        let folder = scratch.newFolder()
        let path = program(folder, printing: "checked")
        let checked = try #require(try TrustedFile.openProgram(path))
        // Swapped after the check: the descriptor still holds the checked file.
        let other = program(folder, "other", printing: "swapped")
        #expect(rename(other, path) == 0)
        #expect(try output(of: checked, named: path) == "checked /proc/self/fd/3\n")
        #expect(try TrustedFile.openProgram(folder + "/absent") == nil)
    }

    @Test func aProgramOthersCouldChangeIsRefused() throws {
        let folder = scratch.newFolder()
        let writable = program(folder, "writable", printing: "x", mode: 0o777)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: writable, problem: .writableByOthers(mode: "0777")))) {
            try TrustedFile.openProgram(writable)
        }
        let open = scratch.newFolder()
        let inOpen = program(open, printing: "x")
        chmod(open, 0o777)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: open, problem: .folderWritableByOthers(mode: "0777")))) {
            try TrustedFile.openProgram(inOpen)
        }
        // Sticky, as /tmp is: others cannot rename or replace the program there.
        chmod(open, 0o1777)
        #expect(try TrustedFile.openProgram(inOpen) != nil)
    }

    @Test(.enabled(if: CurrentUser.id == 0, "chown to another uid needs root"))
    func aProgramAnotherAccountOwnsIsRefused() throws {
        let foreign = program(scratch.newFolder(), "foreign", printing: "x")
        #expect(chown(foreign, 65534, gid_t.max) == 0)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: foreign, problem: .programForeignOwner(owner: 65534)))) {
            try TrustedFile.openProgram(foreign)
        }
    }

    @Test func aLinkTheUserOwnsIsFollowed() throws {
        let folder = scratch.newFolder()
        let target = program(folder, printing: "linked")
        symlink(target, folder + "/link")
        let checked = try #require(try TrustedFile.openProgram(folder + "/link"))
        #expect(try output(of: checked, named: folder + "/link") == "linked /proc/self/fd/3\n")
    }

    @Test(.enabled(if: CurrentUser.id == 0, "chown to another uid needs root"))
    func aLinkAnotherAccountOwnsIsRefused() throws {
        let folder = scratch.newFolder()
        symlink(program(folder, printing: "linked"), folder + "/link")
        #expect(lchown(folder + "/link", 65534, gid_t.max) == 0)
        #expect(throws: TrustedOpenError.refused(FileCheckFailure(path: folder + "/link", problem: .plantedLink(owner: 65534)))) {
            try TrustedFile.openProgram(folder + "/link")
        }
    }
}
