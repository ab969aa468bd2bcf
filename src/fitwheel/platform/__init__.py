"""What a target machine supports: built-in providers, overrides, profiles and their cache."""
