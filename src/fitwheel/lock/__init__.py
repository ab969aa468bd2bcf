"""Locking for several targets: ``pylock.toml`` (PEP 751 with PEP 825's inline variants), and
installing a host's part of it (``sync``), exporting one target's, bundling some for offline."""
