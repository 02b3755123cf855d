import FoundationEssentials

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through config.json's parser
/// and the settings' validation. The check returns the property the input broke, or nil.
public enum ConfigFuzzing {
    public static func check(_ bytes: [UInt8]) -> String? {
        guard let file = try? ConfigFile.parse(Data(bytes), path: "fuzz") else { return nil }
        for key in file.values.keys where SettingsSchema.spec(named: key) == nil { return "an unknown setting '\(key)' was kept as a value" }
        // Every value that survives the layers has passed its setting's validation.
        guard let settings = try? Settings.resolve(SettingLayers(configFile: file)) else { return nil }
        for setting in settings.all {
            guard let spec = SettingsSchema.spec(named: setting.name), let value = setting.value else { continue }
            if case .failure = spec.validate(value) { return "setting '\(setting.name)' resolved to a value its validation refuses" }
        }
        return nil
    }
}
