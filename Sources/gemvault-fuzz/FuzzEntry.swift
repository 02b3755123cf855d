import FuzzHarnesses
import Glibc
import SystemIO

// Built by Fuzz/run with -sanitize=fuzzer and GEMVAULT_FUZZING, this is libFuzzer's entry,
// and GEMVAULT_FUZZ_TARGET names the harness. Built plainly, it replays files through a
// harness (`gemvault-fuzz HARNESS FILE...`), to reproduce a finding without the sanitizers.

private func fail(_ message: String) -> Never {
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

private func harness(named name: String) -> @Sendable ([UInt8]) -> String? {
    guard let check = FuzzHarnesses.named(name) else {
        fail("gemvault-fuzz: the harnesses are: \(FuzzHarnesses.all.map(\.name).joined(separator: ", "))\n")
    }
    return check
}

#if GEMVAULT_FUZZING
private let selected = harness(named: getenv("GEMVAULT_FUZZ_TARGET").map { String(cString: $0) } ?? "")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if let problem = selected(Array(UnsafeBufferPointer(start: data, count: size))) {
        fatalError("property broken: \(problem)")
    }
    return 0
}
#else
@main
struct Replay {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3 else { fail("usage: gemvault-fuzz HARNESS FILE...\n") }
        let check = harness(named: arguments[1])
        var broken = 0
        for path in arguments[2...] {
            guard let file = try? FileDescriptor.openIfPresent(path, flags: O_RDONLY), let bytes = try? file.readAll(limit: 64 << 20) else {
                fail("gemvault-fuzz: cannot read \(path)\n")
            }
            let outcome = check(bytes)
            print("\(path): \(outcome ?? "ok")")
            if outcome != nil { broken += 1 }
        }
        exit(broken == 0 ? 0 : 1)
    }
}
#endif
