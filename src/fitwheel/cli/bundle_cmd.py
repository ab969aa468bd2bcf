"""``fitwheel bundle``: the locked files of some targets, the lock and a static simple index in
one folder, for machines without a network (``fitwheel sync DIR``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import UsageError

if TYPE_CHECKING:
    from fitwheel.lock.document import Lock, LockedPackage, LockedWheel

HELP = "Put the locked files of some targets, the lock and an index in one folder."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lock", metavar="PYLOCK", help="the lock file")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="the new folder")
    parser.add_argument(
        "--profile", action="append", default=[], metavar="FILE", dest="profiles",
        help="a target to bundle (repeatable)",
    )  # fmt: skip
    parser.add_argument("--python-version", metavar="V", help="the targets' Python version")
    parser.add_argument(
        "--platform", action="append", default=[], metavar="TAG", help="the targets' platforms"
    )
    parser.add_argument("--gpu-policy", metavar="POLICY", help="all (default), any, device=N")
    parser.add_argument(
        "--allow-fallback", action="store_true", help="accept builds without GPU support"
    )
    from fitwheel.cli._sources import add_fetch_arguments

    add_fetch_arguments(parser)
    parser.add_argument("-j", "--jobs", type=int, default=4, metavar="N", help="parallel downloads")


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._lockhosts import host_for
    from fitwheel.lock.document import read_lock
    from fitwheel.lock.exporting import bundle

    if not args.profiles:
        raise UsageError("name the targets to bundle: pass --profile FILE (repeatable).")
    from fitwheel.cli._sources import sources_from

    sources = sources_from(args)
    lock = read_lock(args.lock)
    hosts = []
    for profile in args.profiles:
        ns = argparse.Namespace(**{**vars(args), "profile": profile, "sysroot": None})
        hosts.append(host_for(ns, None, sources.cache_dir))

    def fetch(lock: Lock, files: Sequence[tuple[LockedPackage, LockedWheel]]) -> list[Path]:
        from fitwheel.lock.syncing import SyncedFile, SyncRequest, fetch_files
        from fitwheel.options import PlacementOptions
        from fitwheel.paths import CacheLayout, cache_root

        request = SyncRequest(sources=sources, placement=PlacementOptions(jobs=args.jobs))
        layout = CacheLayout(cache_root(sources.cache_dir, request.env))
        todo = [SyncedFile(p, w, "install") for p, w in files]
        return [done.path for done in fetch_files(request, lock, todo, layout)]

    path, count = bundle(
        lock, hosts, Path(args.output), fetch=fetch, allow_fallback=args.allow_fallback
    )
    if not args.quiet:
        print(f"Bundled {count} files for {len(hosts)} targets in {args.output} ({path.name})",
              file=sys.stdout)  # fmt: skip
    return 0
