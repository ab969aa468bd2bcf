"""The unpacked-wheel cache: each wheel unpacked once by the one reader, its install layout
kept, shared under per-entry locks; and its maintenance (``fitwheel cache``)."""
