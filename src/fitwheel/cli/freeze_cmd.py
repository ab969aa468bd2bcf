"""``fitwheel freeze``: the installed distributions as requirements that ``fitwheel install -r``
installs again exactly: ``name==version``, and for a variant install ``name==version
--variant=LABEL`` (the variant is installed as it is, without checking the target). What was
installed from a URL, a path or a repository is written as pip writes it, from its PEP 610
record: ``name @ file:///.../x-1.0.whl#sha256=...``, ``name @ git+URL@COMMIT``, and
``-e PATH`` (``-e git+URL@COMMIT#egg=name`` from a git work tree) for an editable install.

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


def _record(dist: Installed) -> dict[str, object] | None:
    """The distribution's PEP 610 record, where it has a readable one."""
    text = dist.read_text("direct_url.json")
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _editable(dist: Installed, record: dict[str, object]) -> list[str] | None:
    """An editable install as pip's freeze writes it: ``-e git+URL@commit#egg=name`` from a git
    work tree, else a comment and ``-e PATH``."""
    info = record.get("dir_info")
    url = record.get("url")
    if not isinstance(info, dict) or not info.get("editable") or not isinstance(url, str):
        return None
    import os

    from fitwheel.index.findlinks import local_path

    location = local_path(url)
    if location is None:
        return None
    vcs = _git_requirement(dist, location)
    if vcs is not None:
        return [f"-e {vcs}"]
    return [
        f"# Editable install with no version control ({dist.name}=={dist.version})",
        f"-e {os.path.normcase(os.path.abspath(location))}",
    ]


def _git_requirement(dist: Installed, location: Path) -> str | None:
    root = next((p for p in (location, *location.parents) if (p / ".git").exists()), None)
    if root is None:
        return None
    import os

    from fitwheel.sdist.vcs import head_of

    head = head_of(root, os.environ)
    if head is None:
        return None
    from fitwheel.install.place.directurl import record_url

    remote, commit = head
    remote = record_url(remote, vcs="git")  # a clone keeps the credentials it was given
    if not remote.lower().startswith("git:"):
        remote = f"git+{remote}"
    line = f"{remote}@{commit}#egg={dist.name.replace('-', '_')}"
    if root != location:
        line += f"&subdirectory={location.relative_to(root).as_posix()}"
    return line


def freeze_line(dist: Installed) -> str:
    """``name==version`` (``--variant=LABEL`` for a variant install), or what pip's freeze
    writes for a distribution installed from a URL, a path or a repository (PEP 610):
    ``name @ URL``, ``name @ git+URL@commit``, ``-e ...`` for an editable install."""
    record = _record(dist)
    if record is not None:
        editable = _editable(dist, record)
        if editable is not None:
            return "\n".join(editable)
        from fitwheel.install.place.directurl import as_requirement

        direct = as_requirement(dist.name, record)
        if direct is not None:
            return direct
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
