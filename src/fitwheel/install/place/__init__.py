"""Placing wheels into an environment: the one writer (:func:`core.install_wheels`), the plan
of links, the journalled transaction, byte-compiling after it, and uninstalling."""
