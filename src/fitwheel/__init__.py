"""fitwheel: install the right hardware-specific build of Python packages (wheel variants)."""

__version__ = "0.1.0"
