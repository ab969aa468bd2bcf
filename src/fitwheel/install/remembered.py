"""Remembered resolutions: an install answered again without resolving, while nothing that its
answer was decided from has changed.

After an install (or ``--dry-run``) whose resolution read only index pages that were stored
fresh (``Cache-Control: max-age``), fitwheel keeps what it decided: the files to install, the
action for each, and the warnings it gave. The record is filed under a key over every input of
that decision:

- the options: every field of the source, resolution and placement records, the torch
  settings, the requirements named, ``--python`` and ``--dry-run`` (see
  :mod:`fitwheel.install.replay`, which also decides whether an install is remembered at all),
  and the working folder;
- the environment variables that steer pip or fitwheel (``PIP_*``, ``FITWHEEL_*``, the
  configuration folders, proxies and CA bundles);
- the contents of every pip configuration file pip would read and of fitwheel's own
  configuration files (absent ones count as absent);
- what the target interpreter says of itself (paths, version, ABI, platform, marker values)
  and the C library this machine runs;
- the installed distributions: each ``.dist-info``/``.egg-info`` entry of the site folders,
  with the identity and time of change of the entry and of its ``METADATA`` and
  ``variant.json``;
- the target the variants were chosen for (the detected or given profile);
- fitwheel itself: its version and the time of change of each of its modules.

The next run with the same key uses the record only if, besides, every requirements or
constraints file that was read still has the same contents, every index page it was read from
is still fresh in the HTTP cache with the same body (so a page past its ``max-age`` means a
full resolution, which revalidates it), every local folder or file it read (a find-links
folder, a ``file://`` index's project folder, a local wheel's metadata) is in the same state
(:func:`fitwheel.fs.location_state`: a folder's listing with each entry's identity, size and
times of change, so a wheel added, removed or rewritten there means a full resolution), and
every wheel to install is still in the wheel cache and unpacked in the unpacked-wheel cache.
Then the same files are installed as a full resolution would install them, without importing
the resolver or the HTTP client; any failed check is a miss, and the full path runs (and files
a new record).

Not remembered: installs that pick a local file (find-links wheels carry no published hash),
URLs or editables, requirements files read from a server (``-r https://...``, directly or from
another file), hash-checking (``--require-hashes``, ``--hash``), ``--force-reinstall``,
``--no-cache-dir``, source builds, wheels an index lists without a hash, pages answered without
a freshness lifetime (or a 404), and ``--explain`` and ``--verify``, which need the resolution
itself.

A record also keeps the ``--report`` that the full install would write (:data:`REPORT_FIELDS`
of it: everything in it follows from the decision and the key's inputs), so that an install
asking for a report is answered from the record too and writes the same report. Its fields are
those of the resolution that made the record: ``unreachable_indexes`` names the indexes that
resolution could not reach (their pages are not read again while the record stands);
``speculative`` describes one run, not the decision, and a replay writes it as null (nothing
was fetched ahead).
``--refresh`` revalidates every page and resolves afresh; ``FITWHEEL_NO_REMEMBER=1`` turns the
records off.

Records live in the cache's ``remembered/`` folder, one small JSON file each; an unreadable or
damaged record is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import time

from fitwheel.fs import atomic_write
from fitwheel.reporter import SILENT, Reporter

# ``typing`` stays unimported on the remembered path. Type checkers treat a name spelled
# TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from fitwheel.install.cache.unpacked import UnpackedCache
    from fitwheel.install.outcome import InstallOutcome
    from fitwheel.install.place.core import InstallResult

FORMAT = 1

#: the options that only change what is printed, not what is decided
_OUTPUT_ONLY = frozenset({"quiet", "debug"})

#: environment variables whose values are part of the key, by prefix and by name
_ENV_PREFIXES = ("PIP_", "FITWHEEL_")
_ENV_NAMES = frozenset(
    {
        "HOME",
        "VARIANT_ABI_DEPENDENCY",
        "VIRTUAL_ENV",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_CACHE_HOME",
        "APPDATA",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NETRC",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    }
)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9!+._-]+")
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!+._-]*\.whl")


def digest(parts: object) -> str:
    """The key of ``parts`` (JSON-able values, anything else by its ``repr``)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_state(path: str) -> str:
    """A file's contents, as a sha256 (``absent`` or ``unreadable`` where there is none)."""
    from fitwheel.integrity import file_sha256

    try:
        return file_sha256(path)
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "unreadable"


def _stat_state(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def installed_state(site_dirs: Iterable[str]) -> list[object]:
    """The installed distributions as the key sees them (see the module's docstring)."""
    out: list[object] = []
    for folder in site_dirs:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            out.append([folder, None])
            continue
        rows: list[object] = []
        for entry in entries:
            name = entry.name
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            meta = "METADATA" if name.endswith(".dist-info") else "PKG-INFO"
            path = entry.path
            rows.append(
                [
                    name,
                    _stat_state(path),
                    _stat_state(os.path.join(path, meta)),
                    _stat_state(os.path.join(path, "variant.json")),
                ]
            )
        out.append([folder, rows])
    return out


def _code_state() -> list[object]:
    """fitwheel's own modules (an upgrade, or an edit of a development checkout, is a miss)."""
    from fitwheel import __version__

    root = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(root)
    rows: list[object] = [__version__]
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py") or entry.name.endswith(".json"):
                try:
                    st = entry.stat()
                except OSError:
                    continue
                rows.append([entry.path[len(root) :], st.st_mtime_ns, st.st_size])
            elif entry.is_dir() and entry.name != "__pycache__":
                stack.append(entry.path)
    rows[1:] = sorted(rows[1:], key=lambda r: str(r[0]))  # type: ignore[index]
    return rows


def environment_variables(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES}


def install_key(
    *,
    options: Mapping[str, object],
    env: Mapping[str, str],
    config_files: Sequence[str],
    probe: Mapping[str, object],
    installed: list[object],
    target: object,
) -> str:
    """The key of one install's decision (the inputs of the module's docstring; ``installed``
    from :func:`installed_state`)."""
    libc = ""
    if hasattr(os, "confstr"):
        try:
            libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            libc = ""
    parts = {
        "format": FORMAT,
        "code": _code_state(),
        "options": {k: v for k, v in sorted(options.items()) if k not in _OUTPUT_ONLY},
        "cwd": os.getcwd(),
        "env": environment_variables(env),
        "config": [[path, content_state(path)] for path in config_files],
        "interpreter": probe,
        "host": [sys.platform, libc],
        "installed": installed,
        "target": target,
    }
    return digest(parts)


class Plan:
    """One distribution of a remembered resolution."""

    __slots__ = (
        "action",
        "filename",
        "label",
        "name",
        "requested",
        "sha256",
        "url",
        "version",
    )

    def __init__(
        self,
        name: str,
        version: str,
        label: str | None,
        filename: str,
        url: str,
        sha256: str,
        requested: bool,
        action: str,
    ) -> None:
        self.name = name
        self.version = version
        self.label = label
        self.filename = filename
        self.url = url
        self.sha256 = sha256
        self.requested = requested
        #: "install", "keep" or "reinstall", as the full resolution planned it
        self.action = action

    def as_json(self) -> list[object]:
        return [
            self.name,
            self.version,
            self.label,
            self.filename,
            self.url,
            self.sha256,
            self.requested,
            self.action,
        ]

    @classmethod
    def from_json(cls, row: object) -> Plan:
        if not isinstance(row, list) or len(row) != 8:
            raise ValueError("not a plan row")
        name, version, label, filename, url, sha256, requested, action = row
        for value in (name, version, filename, url, sha256, action):
            if not isinstance(value, str):
                raise ValueError("not a plan row")
        if label is not None and not isinstance(label, str):
            raise ValueError("not a plan row")
        if action not in ("install", "keep", "reinstall") or not isinstance(requested, bool):
            raise ValueError("not a plan row")
        # what becomes part of a path must be what the full path would have produced
        if not _HEX64.fullmatch(sha256) or not _NAME.fullmatch(name):
            raise ValueError("not a plan row")
        if not _FILENAME.fullmatch(filename) or not _VERSION.fullmatch(version):
            raise ValueError("not a plan row")
        return cls(name, version, label, filename, url, sha256, requested, action)


#: the fields of the ``--report`` JSON a record keeps and a replay writes back, in order: each
#: follows from the decision and the inputs of the key (a field that describes one run rather
#: than the decision is not kept, and a replayed report leaves it out)
REPORT_FIELDS = (
    "fitwheel_report",
    "environment",
    "indexes",
    "index_origins",
    "unreachable_indexes",
    "find_links",
    "target_sources",
    "install",
    "torch_backend",
)


def remembered_report(report: Mapping[str, object]) -> dict[str, object]:
    """The part of a full install's ``--report`` JSON that a record keeps."""
    return {name: report[name] for name in REPORT_FIELDS if name in report}


class Remembered:
    """A record: what was decided, and what it was decided from besides the key."""

    __slots__ = ("files", "pages", "plan", "report", "warnings")

    def __init__(
        self,
        plan: list[Plan],
        pages: list[tuple[str, str]],
        files: list[tuple[str, str]],
        warnings: list[str],
        report: dict[str, object] | None = None,
    ) -> None:
        self.plan = plan
        #: (URL, sha256 of the body) of every index page the resolution read, and (absolute
        #: path, :func:`fitwheel.fs.location_state`) of every local file or folder
        self.pages = pages
        #: (path, sha256 of the contents) of every requirements or constraints file read
        self.files = files
        self.warnings = warnings
        #: the ``--report`` JSON of the full install (:func:`remembered_report`), or None
        self.report = report

    def dumps(self) -> bytes:
        data = {
            "format": FORMAT,
            "plan": [p.as_json() for p in self.plan],
            "pages": [list(p) for p in self.pages],
            "files": [list(f) for f in self.files],
            "warnings": self.warnings,
        }
        if self.report is not None:
            data["report"] = self.report
        return json.dumps(data, separators=(",", ":")).encode("utf-8")

    @classmethod
    def loads(cls, raw: bytes) -> Remembered:
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a record of this format")
        plan = [Plan.from_json(row) for row in data["plan"]]
        pages = [_pair(p) for p in data["pages"]]
        files = [_pair(f) for f in data["files"]]
        warnings = data["warnings"]
        if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
            raise ValueError("not a record")
        return cls(plan, pages, files, warnings, _report(data.get("report"), len(plan)))


def _report(value: object, planned: int) -> dict[str, object] | None:
    """A record's report: the fields of :data:`REPORT_FIELDS`, all of them, one ``install``
    entry per planned distribution (anything else: a damaged record)."""
    if value is None:
        return None
    if not isinstance(value, dict) or list(value) != list(REPORT_FIELDS):
        raise ValueError("not a record")
    entries = value["install"]
    if not isinstance(entries, list) or len(entries) != planned:
        raise ValueError("not a record")
    return value


def _pair(item: object) -> tuple[str, str]:
    if not isinstance(item, list) or len(item) != 2 or not all(isinstance(v, str) for v in item):
        raise ValueError("not a record")
    return item[0], item[1]


def record_path(folder: Path, key: str) -> str:
    return os.path.join(folder, key[:2], f"{key}.json")


def load(folder: Path, key: str) -> Remembered | None:
    """The record filed under ``key``, or None (none, unreadable, damaged, another format)."""
    try:
        with open(record_path(folder, key), "rb") as handle:
            raw = handle.read(1 << 22)
        return Remembered.loads(raw)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(folder: Path, key: str, record: Remembered) -> None:
    """File ``record`` under ``key`` (a cache that cannot be written only costs speed)."""
    with contextlib.suppress(OSError):
        atomic_write(record_path(folder, key), record.dumps())


def still_valid(
    record: Remembered,
    *,
    fresh_sha256: Any,
    wheel_file: Any,
    unpacked: Any,
    installing: bool = True,
) -> bool:
    """Whether ``record`` may stand in for a resolution now: its files unchanged, its pages
    still fresh with the same bodies (``fresh_sha256(url)``), and, ``installing``, its wheels
    in the caches (``wheel_file(sha256, filename)`` a path, ``unpacked(sha256)`` a yes or
    no)."""
    for path, sha256 in record.files:
        if content_state(path) != sha256:
            return False
    now = time.time()
    for url, sha256 in record.pages:
        if _state_of(url, fresh_sha256, now) != sha256:
            return False
    for p in record.plan:
        if p.action == "keep" or not installing:
            continue
        if not os.path.isfile(wheel_file(p.sha256, p.filename)) or not unpacked(p.sha256):
            return False
    return True


def record_of(
    outcome: InstallOutcome,
    *,
    pages: Sequence[str | None],
    files: Sequence[str],
    fresh_sha256: Any,
    report: Mapping[str, object] | None = None,
) -> Remembered | None:
    """The record of a finished full install, or None where it cannot be remembered (see the
    module's docstring): ``pages`` the URLs the resolution read (None for a read that has no
    freshness), ``files`` the requirements and constraints files it read, ``report`` its
    ``--report`` JSON (kept as :func:`remembered_report` says)."""
    now = time.time()
    page_rows: list[tuple[str, str]] = []
    for url in dict.fromkeys(pages):
        state = _state_of(url, fresh_sha256, now) if url is not None else None
        if state is None:
            return None
        page_rows.append((url, state))  # type: ignore[arg-type]
    if not outcome.config.index_urls:
        return None
    plan: list[Plan] = []
    for p in outcome.planned:
        cand = p.candidate
        sha256 = p.sha256 or cand.link.sha256
        if cand.is_sdist or sha256 is None or not cand.link.hashes:
            return None
        plan.append(
            Plan(
                str(cand.name),
                str(cand.version),
                cand.label,
                cand.link.filename,
                cand.link.url,
                sha256,
                p.requested,
                p.action,
            )
        )
    file_rows: list[tuple[str, str]] = []
    for location in dict.fromkeys(files):
        path = _local_file(location)
        if path is None:
            return None  # read from a server: nothing tells when it changes
        file_rows.append((path, content_state(path)))
    kept = None if report is None else remembered_report(report)
    return Remembered(plan, page_rows, file_rows, list(outcome.warnings), kept)


def _state_of(read: str, fresh_sha256: Any, now: float) -> str | None:
    """What a record keeps of one read: an index page's body (its sha256, while the page is
    fresh: None once it is not), or a local file's or folder's state (its absolute path)."""
    if read.startswith(("http://", "https://")):
        sha256: str | None = fresh_sha256(read, now)
        return sha256
    from fitwheel.fs import location_state

    return location_state(read)


def _local_file(location: str) -> str | None:
    """The path of a requirements file read from ``location`` (a path or a ``file:`` URL);
    None for one read from a server."""
    from fitwheel.resolve.reqfile import is_url
    from fitwheel.resolve.reqforms import file_url_path

    if not is_url(location):
        return location
    if location.lower().startswith("file:"):
        return str(file_url_path(location))
    return None


class Replayed:
    """A remembered install carried out: its record, and what the install did (None for
    ``--dry-run``)."""

    __slots__ = ("installed", "record")

    def __init__(self, record: Remembered, installed: InstallResult | None) -> None:
        self.record = record
        self.installed = installed


class Recall:
    """The records as one install uses them: the key's inputs (but the installed set, read
    under the environment's lock), a lookup that installs what a valid record says, and the
    filing of a full install's record."""

    def __init__(
        self,
        *,
        options: Mapping[str, object],
        env: Mapping[str, str],
        python: str | None,
        cache_dir: str | None,
        target: object,
    ) -> None:
        from fitwheel.index.configfiles import pip_config_files
        from fitwheel.install.env.interpreter import describe_interpreter
        from fitwheel.paths import CacheLayout, cache_root
        from fitwheel.userconfig import config_paths

        self.env = env
        self.layout = CacheLayout(cache_root(cache_dir, env))
        self.interpreter, self.probe = describe_interpreter(python, env, self.layout.envs)
        paths = self.probe["paths"]
        self.site_dirs = list(dict.fromkeys([str(paths["purelib"]), str(paths["platlib"])]))
        self.config_files = [
            *(str(f) for f in pip_config_files(env, str(self.probe["prefix"]))),
            *config_paths(env).values(),
        ]
        self.options = options
        self.target = target
        #: notes of transactions rolled back while looking (shown by whichever path installs)
        self.recovered: list[str] = []

    def key(self, installed: list[object]) -> str:
        return install_key(
            options=self.options,
            env=self.env,
            config_files=self.config_files,
            probe=self.probe,
            installed=installed,
            target=self.target,
        )

    def _valid(
        self, unpacked: UnpackedCache, *, installing: bool, report: bool
    ) -> Remembered | None:
        from fitwheel.index.httpcache import HttpCache

        record = load(self.layout.remembered, self.key(installed_state(self.site_dirs)))
        if record is None or (report and record.report is None):
            return None
        ok = still_valid(
            record,
            fresh_sha256=HttpCache(self.layout.http).fresh_sha256,
            wheel_file=self.layout.wheel_file,
            unpacked=unpacked.has,
            installing=installing,
        )
        return record if ok else None

    def replay(
        self,
        *,
        dry_run: bool,
        link_mode: str,
        allow_overwrite: bool,
        break_system_packages: bool,
        compile_bytecode: bool = False,
        reporter: Reporter = SILENT,
        report: bool = False,
    ) -> Replayed | None:
        """Install what the valid record says (nothing with ``dry_run``); None: no valid
        record (with ``report``: none that keeps its report), or one the full path must handle
        (it also names the problem)."""
        from fitwheel.install.cache.unpacked import UnpackedCache
        from fitwheel.install.env.interpreter import environment_of

        env = environment_of(self.interpreter, self.probe, tags=False)
        if env.externally_managed and not break_system_packages:
            return None  # the full path refuses it, with the reason
        unpacked = UnpackedCache(self.layout.unpacked)
        try:
            if dry_run:
                record = self._valid(unpacked, installing=False, report=report)
                return None if record is None else Replayed(record, None)
            from fitwheel.install.env.session import EnvironmentSession

            with EnvironmentSession(reporter=reporter) as session:
                self.recovered = session.hold(env)
                record = self._valid(unpacked, installing=True, report=report)
                if record is None:
                    return None
                from pathlib import Path

                from fitwheel.install.place.core import (
                    InstallResult,
                    WheelToInstall,
                    install_wheels,
                )

                wheels = [
                    WheelToInstall(
                        Path(self.layout.wheel_file(p.sha256, p.filename)),
                        p.name,
                        p.version,
                        requested=p.requested,
                        sha256=p.sha256,
                        checked=True,
                    )
                    for p in record.plan
                    if p.action != "keep"
                ]
                result = (
                    install_wheels(
                        env,
                        wheels,
                        unpacked=unpacked,
                        compile_bytecode=compile_bytecode,
                        link_mode=link_mode,
                        reporter=reporter,
                        lock=False,
                        allow_overwrite=allow_overwrite,
                    )
                    if wheels
                    else InstallResult([], [], [])
                )
                result.notes[:0] = self.recovered
                self.recovered = []
                return Replayed(record, result)
        finally:
            unpacked.close()

    def keep(self, outcome: InstallOutcome, report: Mapping[str, object] | None = None) -> None:
        """File the record of a finished full install (with its ``--report`` JSON, ``report``),
        where it can be remembered."""
        if outcome.remember_blocked is not None or outcome.installed_before is None:
            return
        from fitwheel.index.httpcache import HttpCache

        record = record_of(
            outcome,
            pages=outcome.pages_read,
            files=outcome.files_read,
            fresh_sha256=HttpCache(self.layout.http).fresh_sha256,
            report=report,
        )
        if record is not None:
            store(self.layout.remembered, self.key(outcome.installed_before), record)
