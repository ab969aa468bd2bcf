"""The command line: argument parsing and output rendering. Commands are imported lazily."""
