"""``fitwheel freeze``: the installed distributions as requirements that ``fitwheel install -r``
installs again exactly: ``name==version``, and for a variant install ``name==version
--variant=LABEL`` (the variant is installed as it is, without checking the target).

A build from a torch backend index is written as pip writes it, ``torch==2.9.0+cu130``: its
local version names the backend, which ``fitwheel install -r`` with a torch-backend setting
(``auto`` included) follows (:mod:`fitwheel.torchbackend.pins`), so the same build comes back
from that backend's index. No index line is added: the backend index, searched before the main
one, would serve the other projects it mirrors in its own versions."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.install.env.inventory import Installed

HELP = "Print installed packages as requirements (variant installs pinned to their variant)."

#: what pip's freeze leaves out unless --all (before Python 3.12 the build tools too, as pip)
_TOOLS = frozenset({"pip"})
_BUILD_TOOLS = frozenset({"setuptools", "wheel", "distribute"})


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._targets import add_python_argument

    parser.add_argument(
        "--all",
        action="store_true",
        help="also list pip (and, before Python 3.12, setuptools and wheel), as pip's --all",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="NAME",
        help="leave NAME out (repeatable)",
    )
    add_python_argument(parser)


def _local_wheel(dist: Installed) -> str | None:
    """The path of the local wheel file a distribution was installed from (PEP 610), when it
    is still there."""
    text = dist.read_text("direct_url.json")
    if not text:
        return None
    try:
        url = json.loads(text).get("url", "")
    except (ValueError, AttributeError):
        return None
    if not isinstance(url, str) or not url.startswith("file:") or not url.endswith(".whl"):
        return None
    from fitwheel.index.findlinks import local_path

    path = local_path(url)
    return str(path) if path is not None and Path(path).is_file() else None


def freeze_line(dist: Installed) -> str:
    local = _local_wheel(dist)
    if local is not None:
        return local
    line = f"{dist.name}=={dist.version}"
    if dist.variant_label:
        line += f" --variant={dist.variant_label}"
    return line


def freeze_lines(dists: Iterable[Installed], skip: frozenset[str]) -> list[str]:
    return [freeze_line(d) for d in dists if d.key not in skip]


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._environment import read_target
    from fitwheel.variants.names import canonicalize_name

    env, inventory = read_target(args)
    skip = set() if args.all else set(_TOOLS)
    if not args.all and env.version < (3, 12, 0):
        skip |= _BUILD_TOOLS
    skip |= {canonicalize_name(n) for n in args.exclude}
    out = sys.stdout
    for line in freeze_lines(inventory, frozenset(skip)):
        out.write(line + "\n")
    return 0
