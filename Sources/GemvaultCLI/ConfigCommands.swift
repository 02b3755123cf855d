let configCommands: [CommandSpec] = []
