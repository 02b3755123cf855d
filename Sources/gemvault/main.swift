import GemvaultCLI

#if canImport(Glibc)
import Glibc
#endif

exit(GemvaultMain.run(arguments: Array(CommandLine.arguments.dropFirst()), environment: GemvaultMain.processEnvironment))
