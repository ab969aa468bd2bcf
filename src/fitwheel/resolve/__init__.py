"""Requirements to a pinned set: resolvelib with variant-aware candidate order."""
