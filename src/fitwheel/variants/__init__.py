"""The wheel-variant format core: pure, no I/O, imports nothing else of fitwheel."""
