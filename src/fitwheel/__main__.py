"""``python -m fitwheel`` and the ``fitwheel`` program."""

import sys


def program() -> None:
    """:func:`fitwheel.cli.main.entry`, loaded here: a Ctrl-C while the program's own modules
    load is said as an interrupt (exit 130), never as a traceback."""
    try:
        from fitwheel.cli.main import entry

        entry()
    except KeyboardInterrupt:
        print("fitwheel: interrupted", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    program()
