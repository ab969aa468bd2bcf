from fitwheel.cli.main import entry

entry()
