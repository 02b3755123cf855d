internal import CSodium
import SystemIO

/// Argon2id cost parameters, as stored in each key slot.
public struct KDFParameters: Equatable, Sendable {
    public var opsLimit: UInt32
    /// Memory in bytes.
    public var memLimit: UInt64

    public init(opsLimit: UInt32, memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's named presets.
    public enum Preset: String, CaseIterable, Sendable {
        case interactive, moderate, sensitive

        public var parameters: KDFParameters {
            if TestHooks.kdfFloor { return testFloorParameters }
            return libsodiumParameters
        }

        var libsodiumParameters: KDFParameters {
            switch self {
            case .interactive: KDFParameters(opsLimit: UInt32(crypto_pwhash_opslimit_interactive()), memLimit: UInt64(crypto_pwhash_memlimit_interactive()))
            case .moderate: KDFParameters(opsLimit: UInt32(crypto_pwhash_opslimit_moderate()), memLimit: UInt64(crypto_pwhash_memlimit_moderate()))
            case .sensitive: KDFParameters(opsLimit: UInt32(crypto_pwhash_opslimit_sensitive()), memLimit: UInt64(crypto_pwhash_memlimit_sensitive()))
            }
        }

        /// The end-to-end suite's floor: each preset at a few KiB, in the same order, so hundreds of
        /// vaults cost milliseconds instead of minutes. Only a debug build reads its variable
        /// (`TestHooks`); a release build keeps refusing such parameters from disk.
        private var testFloorParameters: KDFParameters {
            switch self {
            case .interactive: KDFParameters(opsLimit: 1, memLimit: 16 << 10)
            case .moderate: KDFParameters(opsLimit: 1, memLimit: 32 << 10)
            case .sensitive: KDFParameters(opsLimit: 2, memLimit: 64 << 10)
            }
        }
    }

    /// The name of the preset these parameters equal, if any.
    public var presetName: String? { Preset.allCases.first { $0.parameters == self }?.rawValue }

    /// libsodium's absolute minimum (1 pass, 8 KiB): for unit tests through the library only.
    public static let testingMinimum = KDFParameters(opsLimit: UInt32(crypto_pwhash_opslimit_min()), memLimit: UInt64(crypto_pwhash_memlimit_min()))
}

/// The range of KDF parameters a reader accepts from a file.
///
/// Below the floor an attacker who can write the file could make the next passphrase entry
/// cheap to brute-force; above the ceiling a file could make unlocking exhaust memory.
public struct KDFPolicy: Sendable {
    public var minimum: KDFParameters
    public var maximum: KDFParameters

    /// From libsodium's interactive preset to its sensitive one (4 passes, 1 GiB). With one
    /// slot of each kind and each secret tried only against its own kind, opening a vault
    /// costs at most one sensitive derivation, about 4 s here.
    public static let standard = KDFPolicy(
        minimum: KDFParameters.Preset.interactive.parameters,
        maximum: KDFParameters.Preset.sensitive.libsodiumParameters)

    /// For unit tests through the library, which use the cheapest parameters.
    public static let testing = KDFPolicy(minimum: .testingMinimum, maximum: standard.maximum)

    public func check(_ parameters: KDFParameters) -> String? {
        if parameters.opsLimit < minimum.opsLimit || parameters.memLimit < minimum.memLimit {
            return "Argon2id parameters (\(parameters.opsLimit) passes, \(parameters.memLimit) bytes) are below the accepted minimum (\(minimum.opsLimit) passes, \(minimum.memLimit) bytes)"
        }
        if parameters.opsLimit > maximum.opsLimit || parameters.memLimit > maximum.memLimit {
            return "Argon2id parameters (\(parameters.opsLimit) passes, \(parameters.memLimit) bytes) are above the accepted maximum (\(maximum.opsLimit) passes, \(maximum.memLimit) bytes)"
        }
        return nil
    }
}
