import GemvaultCLI

GemvaultMain.main()
