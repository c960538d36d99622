from contracts.cli import entry

entry()
