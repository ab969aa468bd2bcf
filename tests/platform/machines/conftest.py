"""The machine trees are data, not tests: their sysfs link loops must never be walked."""

collect_ignore_glob = ["*"]
