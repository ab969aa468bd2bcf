"""Talking to package indexes: simple pages, metadata files, find-links folders, variants.json."""
