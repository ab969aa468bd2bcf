"""``index build``: a static, variant-aware simple index that any file server can serve.

Layout of the output folder::

    simple/index.html                 PEP 503 project list   (simple/index.json: PEP 691)
    simple/<project>/index.html       PEP 503 project page   (index.json beside it: PEP 691)
    files/<project>/<wheel>           the wheel (hard link where possible, else a copy)
    files/<project>/<wheel>.metadata  PEP 658 core metadata
    files/<project>/<name>-<version>-variants.json   one per version with variant wheels
    .fitwheel-index.json              manifest that makes the next build incremental

A server that maps ``/simple/<project>/`` to ``index.html`` (every static server does) gives pip,
uv and fitwheel the HTML form; content negotiation to ``index.json`` is a server setting (see
docs/publishing.md). Links are relative, so the folder can be served under any prefix.

Incremental builds: a wheel whose size and mtime match the manifest is not read again, and a
project whose wheels did not change is not written at all (its files keep their mtimes).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from fitwheel.errors import InputError
from fitwheel.fs import atomic_write, link_or_copy, write_all
from fitwheel.threads import cores
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import WheelFilename, variants_json_filename
from fitwheel.variants.merging import merge_variant_infos
from fitwheel.variants.model import LEGACY_NULL_LABELS, VariantInfo
from fitwheel.variants.names import canonicalize_name
from fitwheel.variants.reading import loads_variant_info
from fitwheel.variants.writing import LossyConversionError, dump_variant_info
from fitwheel.wheel.archive import DEFAULT_LIMITS, Limits, WheelArchive, WheelError
from fitwheel.wheel.metadata import parse_metadata

MANIFEST_NAME = ".fitwheel-index.json"
#: bump when the output format changes, so that old manifests force a full rewrite
FORMAT_VERSION = 1
_CHUNK = 1 << 20


class IndexBuildError(InputError):
    """The wheels cannot be published together (bad wheel, conflicting variant metadata)."""


@dataclass
class WheelRecord:
    """What the index needs to know about one wheel; cached in the manifest."""

    relpath: str
    size: int
    mtime_ns: int
    sha256: str
    filename: str
    project: str
    name: str
    version: str
    metadata_sha256: str
    requires_python: str | None
    variant_label: str | None
    variant_json: str | None = field(default=None, repr=False)


@dataclass
class BuildReport:
    wheels: int = 0
    wheels_read: int = 0
    projects: int = 0
    projects_written: list[str] = field(default_factory=list)
    projects_removed: list[str] = field(default_factory=list)
    variants_files: list[str] = field(default_factory=list)
    linked: int = 0
    copied: int = 0
    #: what the index could not carry over, e.g. 817-era ``enable-if`` markers
    warnings: list[str] = field(default_factory=list)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _write_if_changed(path: Path, data: bytes, made_dirs: set[Path] | None = None) -> bool:
    """Write ``data`` unless the file already holds it, so untouched files keep their mtime.
    An existing file is replaced atomically (readers see the old or the new content)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    if size is None:
        folder = path.parent
        if made_dirs is None or folder not in made_dirs:
            folder.mkdir(parents=True, exist_ok=True)
            if made_dirs is not None:
                made_dirs.add(folder)
        try:
            with open(path, "xb") as handle:
                handle.write(data)
            return True
        except FileExistsError:
            pass
    elif size == len(data) and path.read_bytes() == data:
        return False
    atomic_write(path, data)
    return True


#: wheels up to this size are read once, hashed and parsed from memory
_IN_MEMORY = 16 << 20


def analyze_wheel(
    path: Path, relpath: str, *, limits: Limits = DEFAULT_LIMITS
) -> tuple[WheelRecord, bytes]:
    """Read one wheel: its hash, core metadata and variant.json. Returns the METADATA bytes too."""
    stat = path.stat()
    try:
        filename = WheelFilename.parse(path.name)
    except VariantFormatError as exc:
        raise IndexBuildError(f"{path}: not a valid wheel filename ({exc})") from None
    data: bytes | None = None
    if stat.st_size <= _IN_MEMORY:
        data = path.read_bytes()
        sha256 = hashlib.sha256(data).hexdigest()
    else:
        sha256 = _sha256_file(path)
    with WheelArchive(path, limits=limits, data=data) as archive:
        metadata = archive.read_member(f"{archive.dist_info}/METADATA")
        vj = archive.read_member(archive.variant_json_name) if archive.variant_json_name else None
        vj_name = archive.variant_json_name
    meta = parse_metadata(metadata, f"{path} (METADATA)")
    meta_name = meta.name
    if meta_name is None or canonicalize_name(meta_name) != canonicalize_name(filename.name):
        raise WheelError(
            path, f"METADATA names the project {meta_name!r}, the filename {filename.name!r}"
        )
    requires_python = meta.requires_python
    label = filename.variant_label
    vj_text: str | None = None
    if vj is not None:
        try:
            vj_text = vj.decode("utf-8")
            info = loads_variant_info(vj_text, f"{path}!{vj_name}", kind="wheel")
        except (UnicodeDecodeError, VariantFormatError) as exc:
            raise WheelError(path, f"invalid variant.json ({exc})") from None
        if label is None:
            raise WheelError(path, "has a variant.json but no variant label in its filename")
        if label not in info.variants:
            raise WheelError(
                path,
                f"variant.json describes {', '.join(sorted(info.variants))}, "
                f"but the filename says {label!r}",
            )
    elif label is not None:
        raise WheelError(path, f"the filename carries label {label!r} but there is no variant.json")
    record = WheelRecord(
        relpath=relpath,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        sha256=sha256,
        filename=path.name,
        project=canonicalize_name(filename.name),
        name=filename.name,
        version=filename.version,
        metadata_sha256=hashlib.sha256(metadata).hexdigest(),
        requires_python=requires_python or None,
        variant_label=label,
        variant_json=vj_text,
    )
    return record, metadata


def _scan(wheel_dir: Path, out_dir: Path) -> list[tuple[Path, str, os.stat_result]]:
    """Every ``*.whl`` under ``wheel_dir`` (hidden names and the output folder skipped)."""
    found: list[tuple[Path, str, os.stat_result]] = []
    out_resolved = out_dir.resolve()
    pending = [(wheel_dir, "")]
    while pending:
        folder, prefix = pending.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.startswith("."):
                    continue
                if entry.is_dir():
                    # Never index the output folder when it sits inside the wheel folder.
                    if Path(entry.path).resolve() != out_resolved:
                        pending.append((Path(entry.path), f"{prefix}{entry.name}/"))
                elif entry.name.endswith(".whl") and entry.is_file():
                    found.append((Path(entry.path), prefix + entry.name, entry.stat()))
    return found


def _version_key(version: str) -> tuple[int, Any]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


class _Manifest:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.wheels: dict[str, WheelRecord] = {}
        self.projects: dict[str, dict[str, Any]] = {}
        self.root_fingerprint: str | None = None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
            return
        try:
            self.wheels = {k: WheelRecord(**v) for k, v in data["wheels"].items()}
            self.projects = dict(data["projects"])
            self.root_fingerprint = data.get("root")
        except (KeyError, TypeError, AttributeError):
            self.wheels, self.projects = {}, {}

    def save(self) -> None:
        data = {
            "format": FORMAT_VERSION,
            "root": self.root_fingerprint,
            "wheels": {k: dict(vars(v)) for k, v in sorted(self.wheels.items())},
            "projects": dict(sorted(self.projects.items())),
        }
        # Compact: the C encoder is many times faster than an indented dump.
        _write_if_changed(self.path, json.dumps(data, separators=(",", ":")).encode())


def _place_file(src: Path, dst: Path, mode: str, report: _Written) -> None:
    """Put the wheel at ``dst`` (whose folder exists): a hard link when ``mode`` is auto and the
    filesystem allows, else a streamed copy. An existing file is replaced through a temporary
    name, so a reader never sees a partial wheel."""
    try:
        exists = dst.stat() is not None
    except OSError:
        exists = False
    if exists:
        with contextlib.suppress(OSError):
            if os.path.samefile(src, dst):
                return
    target = dst.with_name(f".{dst.name}.tmp{os.getpid()}") if exists else dst
    if exists:
        with contextlib.suppress(OSError):
            target.unlink()
    try:
        if link_or_copy(src, target, link=mode == "auto"):
            report.linked += 1
        else:
            report.copied += 1
        if exists:
            os.replace(target, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            target.unlink()
        raise


def _merge_version(wheels: list[WheelRecord], warnings: list[str]) -> str:
    """The ``variants.json`` of one version, merged from its wheels' variant.json."""
    by_label: dict[str, tuple[frozenset[Any], str]] = {}
    infos: list[VariantInfo] = []
    for wheel in wheels:
        assert wheel.variant_json is not None and wheel.variant_label is not None
        info = loads_variant_info(wheel.variant_json, wheel.filename, kind="wheel")
        props = info.variants[wheel.variant_label].properties
        seen = by_label.get(wheel.variant_label)
        if seen is not None and seen[0] != props:
            raise IndexBuildError(
                f"label {wheel.variant_label!r} of {wheel.name} {wheel.version} means different "
                f"properties in {seen[1]} and {wheel.filename}; one label must always name the "
                "same property set"
            )
        by_label.setdefault(wheel.variant_label, (props, wheel.filename))
        infos.append(info)
    try:
        merged = merge_variant_infos(infos, source=f"{wheels[0].name} {wheels[0].version}")
    except VariantFormatError as exc:
        names = ", ".join(w.filename for w in wheels)
        raise IndexBuildError(
            f"the variant metadata of {wheels[0].name} {wheels[0].version} cannot be merged "
            f"({exc}); wheels: {names}"
        ) from None
    try:
        return dump_variant_info(merged)
    except LossyConversionError as exc:
        what = f"{wheels[0].name} {wheels[0].version}"
        legacy = sorted(set(merged.variants) & LEGACY_NULL_LABELS)
        if legacy:
            # The current form has no way to list a null wheel under its old label, and writing
            # it as 'null' would orphan the wheels that carry the old label in their names.
            raise IndexBuildError(
                f"the wheels of {what} use the legacy null label {legacy[0]!r}, which the current "
                "variants.json form cannot list; re-label them (fitwheel variant strip, then "
                "fitwheel variant make --null)"
            ) from None
        dropped = "; ".join(f"{path}: {lost}" for path, lost in exc.items)
        warnings.append(f"{what}: the current variants.json form cannot express {dropped}; dropped")
        return dump_variant_info(merged, allow_lossy=True)


def _file_url(project: str, filename: str) -> str:
    return f"../../files/{project}/{urllib.parse.quote(filename)}"


@dataclass(frozen=True)
class _Link:
    filename: str
    sha256: str
    size: int
    requires_python: str | None = None
    metadata_sha256: str | None = None


def _project_html(project: str, links: Iterable[_Link]) -> bytes:
    title = html.escape(project)
    rows = []
    for link in links:
        attrs = [f'href="{html.escape(_file_url(project, link.filename))}#sha256={link.sha256}"']
        if link.requires_python:
            attrs.append(f'data-requires-python="{html.escape(link.requires_python)}"')
        if link.metadata_sha256:
            attrs.append(f'data-dist-info-metadata="sha256={link.metadata_sha256}"')
            attrs.append(f'data-core-metadata="sha256={link.metadata_sha256}"')
        rows.append(f"    <a {' '.join(attrs)}>{html.escape(link.filename)}</a><br>")
    body = "\n".join(rows)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        '    <meta name="pypi:repository-version" content="1.1">\n'
        f"    <title>Links for {title}</title>\n  </head>\n  <body>\n"
        f"    <h1>Links for {title}</h1>\n{body}\n  </body>\n</html>\n"
    ).encode()


def _project_json(project: str, links: Iterable[_Link], versions: list[str]) -> bytes:
    files = []
    for link in links:
        entry: dict[str, Any] = {
            "filename": link.filename,
            "url": _file_url(project, link.filename),
            "hashes": {"sha256": link.sha256},
            "size": link.size,
        }
        if link.requires_python:
            entry["requires-python"] = link.requires_python
        if link.metadata_sha256:
            entry["core-metadata"] = {"sha256": link.metadata_sha256}
            entry["dist-info-metadata"] = {"sha256": link.metadata_sha256}
        files.append(entry)
    doc = {"meta": {"api-version": "1.1"}, "name": project, "versions": versions, "files": files}
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def _root_pages(projects: list[str]) -> tuple[bytes, bytes]:
    rows = "\n".join(f'    <a href="{html.escape(p)}/">{html.escape(p)}</a><br>' for p in projects)
    page = (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        '    <meta name="pypi:repository-version" content="1.1">\n'
        "    <title>Simple index</title>\n  </head>\n  <body>\n"
        f"{rows}\n  </body>\n</html>\n"
    ).encode()
    doc = {"meta": {"api-version": "1.1"}, "projects": [{"name": p} for p in projects]}
    return page, (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def _fingerprint(items: Iterable[Any]) -> str:
    # repr of tuples of str/None is unambiguous and much cheaper than JSON
    text = "\n".join(repr(item) for item in items)
    return hashlib.sha256(f"{FORMAT_VERSION}\n{text}".encode()).hexdigest()


#: threads that read and write files: most of an index build waits on the kernel (creating
#: files, hashing and reading release the GIL), so more threads than cores still help
_WORKERS = max(2, min(8, 2 * cores()))


def _is_fresh(out: Path) -> bool:
    """Whether ``out`` holds nothing yet (missing or an empty folder)."""
    try:
        with os.scandir(out) as entries:
            return next(entries, None) is None
    except FileNotFoundError:
        return True
    except NotADirectoryError:
        raise IndexBuildError(f"{out}: exists and is not a folder") from None


def build_index(
    wheel_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    mode: str = "auto",
    limits: Limits = DEFAULT_LIMITS,
) -> BuildReport:
    """Build or update the static index for every ``*.whl`` under ``wheel_dir``.

    A first build (``out_dir`` missing or empty) is written into a hidden folder beside
    ``out_dir`` and renamed into place at the end: nothing appears until the index is complete,
    and files that cannot exist yet are created without first checking for them. Later builds
    update ``out_dir`` in place, replacing changed files atomically."""
    source = Path(wheel_dir)
    out = Path(out_dir)
    if not source.is_dir():
        raise IndexBuildError(f"{source}: not a folder of wheels")
    if mode not in ("auto", "copy"):
        raise IndexBuildError(f"unknown file mode {mode!r} (auto or copy)")
    if out.is_symlink():
        out = out.resolve()  # publish into the folder it names, not over the link
    fresh = _is_fresh(out)
    scanned = _scan(source, out)
    staging: Path | None = None
    if fresh and not os.path.ismount(out):
        with contextlib.suppress(OSError):
            out.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    if staging is None:
        # A rebuild, or an output folder that cannot be replaced by a rename (a mount point,
        # a parent folder that is not writable): update it in place.
        out.mkdir(parents=True, exist_ok=True)
        return _build(source, out, scanned, mode, limits)
    try:
        report = _build_fresh(source, staging, scanned, mode, limits)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # as if made by mkdir, not mkdtemp's 0o700
        # An empty folder is replaced by rename; nothing else can be there (checked above).
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def _build(
    source: Path,
    out: Path,
    scanned: list[tuple[Path, str, os.stat_result]],
    mode: str,
    limits: Limits,
) -> BuildReport:
    """A rebuild: wheels are read (those that changed) before anything is written, and
    projects are then updated in place, each file replaced atomically."""
    manifest = _Manifest(out / MANIFEST_NAME)
    report = BuildReport()

    todo = [
        (path, relpath)
        for path, relpath, stat in scanned
        if not _unchanged(manifest.wheels.get(relpath), stat)
    ]
    records: dict[str, WheelRecord] = {}
    metadata_of: dict[str, bytes] = {}
    by_filename: dict[str, str] = {}
    with ThreadPoolExecutor(_WORKERS) as pool:
        analyzed = pool.map(lambda item: analyze_wheel(item[0], item[1], limits=limits), todo)
        try:
            for _path, relpath, stat in scanned:
                cached = manifest.wheels.get(relpath)
                if cached is not None and _unchanged(cached, stat):
                    record = cached
                else:
                    record, metadata_of[relpath] = next(analyzed)
                    report.wheels_read += 1
                other = by_filename.get(record.filename)
                if other is not None:
                    raise IndexBuildError(
                        f"{record.filename} appears twice: {source / other} and {source / relpath}"
                    )
                by_filename[record.filename] = relpath
                records[relpath] = record
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    report.wheels = len(records)

    by_project: dict[str, list[WheelRecord]] = {}
    for record in records.values():
        by_project.setdefault(record.project, []).append(record)
    report.projects = len(by_project)

    new_projects: dict[str, dict[str, Any]] = {}
    to_write: list[tuple[str, list[WheelRecord], str, list[str]]] = []
    for project in sorted(by_project):
        wheels = sorted(by_project[project], key=lambda r: r.filename)
        fingerprint = _fingerprint(
            (w.filename, w.sha256, w.metadata_sha256, w.requires_python, w.variant_label)
            for w in wheels
        )
        previous = manifest.projects.get(project)
        written = list(previous.get("files", [])) if previous else []
        if (
            previous is not None
            and previous.get("fingerprint") == fingerprint
            and all(os.path.exists(os.path.join(out, rel)) for rel in written)
        ):
            new_projects[project] = previous
            report.variants_files += [r for r in written if r.endswith("-variants.json")]
            continue
        to_write.append((project, wheels, fingerprint, written))

    # Variant metadata is merged (and may be refused) before any project is written.
    merged = {
        project: _merge_variants(wheels, report.warnings) for project, wheels, _, _ in to_write
    }
    for top in ("files", "simple"):
        (out / top).mkdir(exist_ok=True)
    with ThreadPoolExecutor(_WORKERS) as pool:
        results = pool.map(
            lambda job: _write_project(
                source, out, job[0], job[1], merged[job[0]], metadata_of, mode, False
            ),
            to_write,
        )
        for (project, _wheels, fingerprint, written), result in zip(to_write, results, strict=True):
            for stale in set(written) - set(result.files):
                with contextlib.suppress(OSError):
                    (out / stale).unlink()
            new_projects[project] = {"fingerprint": fingerprint, "files": result.files}
            report.projects_written.append(project)
            report.variants_files += result.variants_files
            report.linked += result.linked
            report.copied += result.copied

    for project in sorted(set(manifest.projects) - set(new_projects)):
        for rel in manifest.projects[project].get("files", []):
            with contextlib.suppress(OSError):
                (out / rel).unlink()
        for folder in (out / "simple" / project, out / "files" / project):
            with contextlib.suppress(OSError):
                folder.rmdir()
        report.projects_removed.append(project)

    _finish(out, manifest, records, new_projects)
    return report


def _finish(
    out: Path,
    manifest: _Manifest,
    records: dict[str, WheelRecord],
    projects: dict[str, dict[str, Any]],
) -> None:
    """Write the root pages (when the project list changed) and the manifest."""
    names = sorted(projects)
    root_fingerprint = _fingerprint(names)
    if root_fingerprint != manifest.root_fingerprint or not (out / "simple/index.html").exists():
        page, doc = _root_pages(names)
        _write_if_changed(out / "simple" / "index.html", page)
        _write_if_changed(out / "simple" / "index.json", doc)
    manifest.wheels = records
    manifest.projects = projects
    manifest.root_fingerprint = root_fingerprint
    manifest.save()


def _project_key(filename: str) -> str:
    try:
        return canonicalize_name(WheelFilename.parse(filename).name)
    except VariantFormatError:
        return f"\0{filename}"  # its own group: analyze_wheel names the problem


def _build_fresh(
    source: Path,
    out: Path,
    scanned: list[tuple[Path, str, os.stat_result]],
    mode: str,
    limits: Limits,
) -> BuildReport:
    """A first build, into an empty staging folder: project by project on worker threads, so
    that reading and hashing the wheels of one project overlaps creating the files of another.
    Any failure discards the whole staging folder, so nothing is published half-built."""
    groups: dict[str, list[tuple[Path, str]]] = {}
    for path, relpath, _stat in scanned:
        groups.setdefault(_project_key(path.name), []).append((path, relpath))
    for top in ("files", "simple"):
        (out / top).mkdir()

    def publish(project: str) -> tuple[list[WheelRecord], str, _Written]:
        records: list[WheelRecord] = []
        metadata_of: dict[str, bytes] = {}
        by_filename: dict[str, str] = {}
        for path, relpath in groups[project]:
            record, metadata_of[relpath] = analyze_wheel(path, relpath, limits=limits)
            other = by_filename.get(record.filename)
            if other is not None:
                raise IndexBuildError(
                    f"{record.filename} appears twice: {source / other} and {source / relpath}"
                )
            by_filename[record.filename] = relpath
            records.append(record)
        wheels = sorted(records, key=lambda r: r.filename)
        fingerprint = _fingerprint(
            (w.filename, w.sha256, w.metadata_sha256, w.requires_python, w.variant_label)
            for w in wheels
        )
        written = _write_project(
            source,
            out,
            project,
            wheels,
            _merge_variants(wheels, report.warnings),
            metadata_of,
            mode,
            True,
        )
        return records, fingerprint, written

    report = BuildReport()
    records: dict[str, WheelRecord] = {}
    projects: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(_WORKERS) as pool:
        try:
            for project, (found, fingerprint, written) in zip(
                sorted(groups), pool.map(publish, sorted(groups)), strict=True
            ):
                records.update((r.relpath, r) for r in found)
                projects[project] = {"fingerprint": fingerprint, "files": written.files}
                report.projects_written.append(project)
                report.variants_files += written.variants_files
                report.linked += written.linked
                report.copied += written.copied
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    report.wheels = report.wheels_read = len(records)
    report.projects = len(projects)
    _finish(out, _Manifest(out / MANIFEST_NAME), records, projects)
    return report


def _unchanged(cached: WheelRecord | None, stat: os.stat_result) -> bool:
    return (
        cached is not None and cached.size == stat.st_size and cached.mtime_ns == stat.st_mtime_ns
    )


def _merge_variants(wheels: list[WheelRecord], warnings: list[str]) -> list[tuple[str, bytes]]:
    """(variants.json file name, content) for each version of a project with variant wheels."""
    groups: dict[tuple[str, str], list[WheelRecord]] = {}
    for wheel in wheels:
        if wheel.variant_label is not None:
            groups.setdefault((wheel.name, wheel.version), []).append(wheel)
    return [
        (variants_json_filename(name, version), _merge_version(group, warnings).encode("utf-8"))
        for (name, version), group in sorted(groups.items())
    ]


@dataclass
class _Written:
    files: list[str] = field(default_factory=list)
    variants_files: list[str] = field(default_factory=list)
    linked: int = 0
    copied: int = 0


def _create(path: str, data: bytes) -> None:
    """Create a file that cannot exist yet (a fresh build's staging folder)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def _write_project(
    source: Path,
    out: Path,
    project: str,
    wheels: list[WheelRecord],
    variants: list[tuple[str, bytes]],
    metadata_of: Mapping[str, bytes],
    mode: str,
    fresh: bool,
) -> _Written:
    result = _Written()
    files_dir = os.path.join(out, "files", project)
    page_dir = os.path.join(out, "simple", project)
    if fresh:
        os.mkdir(files_dir)
        os.mkdir(page_dir)
    else:
        os.makedirs(files_dir, exist_ok=True)
        os.makedirs(page_dir, exist_ok=True)

    def put(path: str, data: bytes) -> None:
        if fresh:
            _create(path, data)
        else:
            _write_if_changed(Path(path), data)

    links: list[_Link] = []
    for wheel in wheels:
        metadata = metadata_of.get(wheel.relpath)
        target = os.path.join(files_dir, wheel.filename)
        src = os.path.join(source, wheel.relpath)
        if fresh:
            _place_new_file(src, target, mode, result)
        # A wheel taken from the manifest was placed by an earlier build; leave it alone.
        elif metadata is not None or _size_of(Path(target)) != wheel.size:
            _place_file(Path(src), Path(target), mode, result)
        meta_path = f"{target}.metadata"
        if metadata is None and not os.path.exists(meta_path):
            # Cached wheel whose .metadata file someone removed.
            metadata = _reread_metadata(Path(src))
        if metadata is not None:
            put(meta_path, metadata)
        result.files += [
            f"files/{project}/{wheel.filename}",
            f"files/{project}/{wheel.filename}.metadata",
        ]
        links.append(
            _Link(
                wheel.filename,
                wheel.sha256,
                wheel.size,
                wheel.requires_python,
                wheel.metadata_sha256,
            )
        )
    for vj_name, data in variants:
        put(os.path.join(files_dir, vj_name), data)
        rel = f"files/{project}/{vj_name}"
        result.files.append(rel)
        result.variants_files.append(rel)
        links.append(_Link(vj_name, hashlib.sha256(data).hexdigest(), len(data)))
    links.sort(key=lambda link: link.filename)
    versions = sorted({w.version for w in wheels}, key=_version_key)
    put(os.path.join(page_dir, "index.html"), _project_html(project, links))
    put(os.path.join(page_dir, "index.json"), _project_json(project, links, versions))
    result.files += [f"simple/{project}/index.html", f"simple/{project}/index.json"]
    return result


def _place_new_file(src: str, dst: str, mode: str, result: _Written) -> None:
    """Put the wheel at ``dst``, which cannot exist yet: a hard link when ``mode`` is auto and
    the filesystem allows, else a copy."""
    if link_or_copy(src, dst, link=mode == "auto"):
        result.linked += 1
    else:
        result.copied += 1


def _size_of(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _reread_metadata(path: Path) -> bytes:
    with WheelArchive(path) as archive:
        return archive.read_member(f"{archive.dist_info}/METADATA")
