let chatCommands: [CommandSpec] = []
