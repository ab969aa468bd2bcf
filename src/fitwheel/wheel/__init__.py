"""The wheel layer: one reader for each format inside a wheel (archive, RECORD, METADATA, WHEEL)."""
