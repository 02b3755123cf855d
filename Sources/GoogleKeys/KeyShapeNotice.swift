/// What gemvault says about a key's shape when one is typed in: nothing for an auth key; for a
/// standard key, a value cut short or one of no known shape, a warning and maybe a hint.
public struct KeyShapeNotice: Sendable, Equatable {
    public let warning: String
    public let hint: String?

    /// `value` is the key typed in, to be stored as `name`.
    public init?<Bytes: BidirectionalCollection<UInt8>>(_ value: Bytes, name: String) {
        switch GoogleKeyShape.kind(of: value) {
        case .auth:
            return nil
        case .standard:
            warning = "this is a standard API key (AIza…): Google rejects standard keys for the Gemini API since September 2026"
            hint = "create an auth key in Google AI Studio (https://aistudio.google.com/apikey > Create API key), then run 'gemvault key rotate \(name)' with it"
        case .other:
            switch GoogleKeyShape.cutShortKind(of: value) {
            case .auth?:
                warning = "the value looks cut short: it starts like an auth key (AQ.…) but has only \(value.count) characters, and auth keys have about 53"
                hint = "copy the whole key again from https://aistudio.google.com/apikey"
            case .standard?:
                warning = "the value looks cut short: it starts like a standard key (AIza…) but has only \(value.count) characters of \(GoogleKeyShape.standardLength)"
                hint = "copy the whole key again"
            default:
                warning = "the value does not look like a Google API key (an auth key starts with AQ., a standard key with AIza)"
                hint = nil
            }
        }
    }
}
