"""Real wheels built with zipfile, static simple indexes of them, stand-in variant trees and
the profiles of two NVIDIA machines."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import shutil
import urllib.parse
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

FIXTURES = Path(__file__).resolve().parents[1] / "variants" / "data" / "published"


#: the variants schema of current documents (PEP 850 v0.2.0)
SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"

#: provider tables that uv 0.13.8 answers with its own built-in providers
UV_NVIDIA = {
    "requires": ["nvidia-variant-provider"],
    "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
}


def record_hash(data: bytes) -> str:
    """The RECORD form of ``data``'s sha256 (``sha256=`` + unpadded urlsafe base64)."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path,
    name: str = "demo_pkg",
    version: str = "1.0",
    *,
    requires: Sequence[str] = (),
    files: Mapping[str, str | bytes] | None = None,
    label: str | None = None,
    variant: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    variant_doc: Mapping[str, Any] | None = None,
    variant_json: Mapping[str, Any] | None = None,
    tag: str = "py3-none-any",
    requires_python: str | None = None,
    entry_points: Mapping[str, str] | None = None,
    extras: Mapping[str, Sequence[str]] | None = None,
    data_files: Mapping[str, str | bytes] | None = None,
    corrupt: bool = False,
    record_content: Mapping[str, bytes] | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """Build ``{name}-{version}-{tag}[-{label}].whl`` in ``folder``; returns its path.

    ``files`` are paths under purelib (default: one module ``{name}/__init__.py`` giving
    ``VERSION`` and ``BUILD``, the label or ``'plain'``); ``data_files`` go under ``.data/``.
    ``dist-info/variant.json`` is ``variant_json`` verbatim when given; else, for a ``label``
    with ``variant`` (ns -> feature -> values) or ``variant_doc`` (a published index document
    supplying providers and priorities), a document built from them; else none.
    ``corrupt`` makes the RECORD hash of ``__init__.py`` wrong so that installing it fails half
    way; ``record_content`` makes RECORD describe other bytes for the members it names."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")  # as given otherwise: a dotted name stays dotted in the file
    stem = f"{dist}-{version}-{tag}" + (f"-{label}" if label else "")
    path = folder / f"{stem}.whl"
    dist_info = f"{dist}-{version}.dist-info"
    content: dict[str, bytes] = {}
    default = {f"{dist}/__init__.py": f"VERSION = {version!r}\nBUILD = {label or 'plain'!r}\n"}
    for rel, body in (files if files is not None else default).items():
        content[rel] = body.encode() if isinstance(body, str) else body
    for rel, body in (data_files or {}).items():
        content[f"{dist}-{version}.data/{rel}"] = body.encode() if isinstance(body, str) else body
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    for extra, reqs in (extras or {}).items():
        meta.append(f"Provides-Extra: {extra}")
        for req in reqs:
            marker = f'extra == "{extra}"'
            meta.append(
                f"Requires-Dist: {req}; {marker}"
                if ";" not in req
                else f"Requires-Dist: {req} and {marker}"
            )
    meta += [f"Requires-Dist: {r}" for r in requires]
    content[f"{dist_info}/METADATA"] = ("\n".join(meta) + "\n\n").encode()
    content[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: fitwheel-tests\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    if entry_points:
        lines = ["[console_scripts]"] + [f"{k} = {v}" for k, v in entry_points.items()]
        content[f"{dist_info}/entry_points.txt"] = ("\n".join(lines) + "\n").encode()
    if variant_json is not None:
        content[f"{dist_info}/variant.json"] = json.dumps(variant_json, indent=4).encode()
    elif label is not None and (variant is not None or variant_doc is not None):
        props = dict(variant or {})
        doc = dict(variant_doc) if variant_doc is not None else variant_info_json({label: props})
        doc["variants"] = {label: props}
        content[f"{dist_info}/variant.json"] = json.dumps(doc, indent=4).encode()
    claimed = {**content, **(record_content or {})}
    record = []
    for rel, body in claimed.items():
        digest = record_hash(body)
        if corrupt and rel.endswith("__init__.py"):
            digest = record_hash(body + b"tampered")
        record.append(f"{rel},{digest},{len(body)}")
    record.append(f"{dist_info}/RECORD,,")
    content[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", compression) as zf:
        for rel, body in content.items():
            zf.writestr(rel, body)
    return path


def rewrite_wheel(path: Path, replace: Mapping[str, bytes]) -> Path:
    """Rewrite the wheel at ``path`` in place with the members of ``replace`` (a name ending in
    ``/METADATA`` etc. is matched against the end of the member name) given new bytes, RECORD
    made to agree: a wheel that lies consistently."""
    old = members(path)
    new: dict[str, bytes] = {}
    for name, body in old.items():
        for suffix, data in replace.items():
            if name == suffix or name.endswith("/" + suffix.lstrip("/")):
                body = data
        new[name] = body
    (record_name,) = [n for n in new if n.endswith(".dist-info/RECORD")]
    lines = [f"{n},{record_hash(b)},{len(b)}" for n, b in new.items() if n != record_name]
    new[record_name] = ("\n".join([*lines, f"{record_name},,"]) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in new.items():
            zf.writestr(name, body)
    return path


def variant_doc(
    label: str,
    props: Mapping[str, Mapping[str, list[str]]],
    providers: Mapping[str, Any],
    namespaces: list[str] | None = None,
) -> dict[str, Any]:
    """A variants document for one label with the given providers (in their order)."""
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": namespaces or list(providers)},
        "providers": dict(providers),
        "variants": {label: dict(props)},
    }


def members(path: Path) -> dict[str, bytes]:
    """Every member of the archive at ``path`` with its bytes."""
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def variant_info_json(
    variants: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]],
) -> dict[str, Any]:
    """A current-form (PEP 850 v0.2.0) variants document for ``variants`` (label -> properties)."""
    namespaces = sorted({ns for props in variants.values() for ns in props})
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": namespaces or ["none"]},
        "providers": {ns: {"requires": [f"{ns}-provider"]} for ns in namespaces or ["none"]},
        "variants": {
            label: {ns: {f: list(v) for f, v in fs.items()} for ns, fs in props.items()}
            for label, props in variants.items()
        },
    }


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_simple_index(
    wheels: Path,
    out: Path,
    *,
    metadata_files: bool = True,
    yanked: Mapping[str, str] | None = None,
    sdist_metadata: bool = False,
    pages: str = "simple",
    literal_plus: bool = False,
) -> Path:
    """A static simple index of the wheels, sdists and variants.json files in ``wheels``.

    Each project folder gets ``index.html`` (PEP 503) and ``index.json`` (PEP 691, with sizes);
    files are copied to ``out/files``. ``yanked`` maps filenames to a yank reason. The pages go
    under ``out/<pages>`` (``""``: ``out`` itself is the index root); returns that folder.
    ``sdist_metadata`` publishes each sdist's ``PKG-INFO`` as its PEP 658 metadata file too.
    File URLs are percent-encoded as real indexes write them (a local version's ``+`` as
    ``%2B``); ``literal_plus`` writes the file names as they are instead."""
    yanked = dict(yanked or {})
    files_dir = out / "files"
    files_dir.mkdir(parents=True, exist_ok=True)
    projects: dict[str, list[Path]] = {}
    for entry in sorted(wheels.iterdir()):
        if entry.name.endswith(".whl"):
            key = canonicalize_name(entry.name.split("-", 1)[0])
        elif entry.name.endswith("-variants.json"):
            key = canonicalize_name(entry.name.rsplit("-", 2)[0])
        elif entry.name.endswith((".tar.gz", ".zip")):
            key = canonicalize_name(entry.name.rsplit("-", 1)[0])
        else:
            continue
        shutil.copy2(entry, files_dir / entry.name)
        projects.setdefault(key, []).append(entry)
    root_links = []
    simple = out / pages if pages else out
    up = "../" * (2 if pages else 1)
    for key, entries in projects.items():
        anchors = []
        json_files = []
        for entry in entries:
            digest = sha256_of(entry)
            url = f"{up}files/{entry.name if literal_plus else urllib.parse.quote(entry.name)}"
            attrs = ""
            file_json: dict[str, Any] = {
                "filename": entry.name,
                "url": url,
                "hashes": {"sha256": digest},
                "size": entry.stat().st_size,
            }
            if entry.name.endswith(".whl") and metadata_files:
                with zipfile.ZipFile(entry) as zf:
                    meta_name = next(
                        n
                        for n in zf.namelist()
                        if n.endswith(".dist-info/METADATA") and n.count("/") == 1
                    )
                    meta = zf.read(meta_name)
                (files_dir / f"{entry.name}.metadata").write_bytes(meta)
                meta_hash = hashlib.sha256(meta).hexdigest()
                attrs += f' data-core-metadata="sha256={meta_hash}"'
                file_json["core-metadata"] = {"sha256": meta_hash}
            if entry.name.endswith(".tar.gz") and sdist_metadata:
                import tarfile

                with tarfile.open(entry) as tf:
                    member = next(
                        m
                        for m in tf.getmembers()
                        if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
                    )
                    handle = tf.extractfile(member)
                    assert handle is not None
                    meta = handle.read()
                (files_dir / f"{entry.name}.metadata").write_bytes(meta)
                meta_hash = hashlib.sha256(meta).hexdigest()
                attrs += f' data-core-metadata="sha256={meta_hash}"'
                file_json["core-metadata"] = {"sha256": meta_hash}
            if entry.name in yanked:
                attrs += f' data-yanked="{html.escape(yanked[entry.name])}"'
                file_json["yanked"] = yanked[entry.name] or True
            anchors.append(f'<a href="{url}#sha256={digest}"{attrs}>{entry.name}</a><br/>')
            json_files.append(file_json)
        project = simple / key
        project.mkdir(parents=True, exist_ok=True)
        (project / "index.html").write_text(
            "<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
        )
        (project / "index.json").write_text(
            json.dumps({"meta": {"api-version": "1.1"}, "name": key, "files": json_files})
        )
        root_links.append(f'<a href="{key}/">{key}</a>')
    simple.mkdir(parents=True, exist_ok=True)
    (simple / "index.html").write_text("<html><body>" + "".join(root_links) + "</body></html>")
    return simple


def torch_like(
    root: Path,
    project: str = "torch",
    version: str = "2.9.0",
    *,
    variants_json: bool = True,
    deps: Sequence[str] = ("filelock",),
    extra_projects: bool = True,
) -> Path:
    """Stand-in wheels for every label of a published ``{project}-{version}-variants.json``
    (a real file from the fixtures), plus a plain wheel; CUDA builds depend on
    ``nvidia-runtime`` through a variant marker, and CUDA 13 builds on ``cuda13-extras``."""
    from fitwheel.variants.reading import loads_variant_info
    from fitwheel.variants.writing import to_json_dict

    published = (FIXTURES / f"{project}-{version}-variants.json").read_text()
    # each wheel carries the current form of the metadata (what a build tool writes today);
    # 817-era provider conditions have no place in it
    doc = to_json_dict(loads_variant_info(published, "fixture"), allow_lossy=True)
    for label, props in json.loads(published)["variants"].items():
        requires = list(deps)
        if label.startswith("cuda"):
            requires.append("nvidia-runtime; 'nvidia' in variant_namespaces")
            requires.append(
                "cuda13-extras; 'nvidia :: cuda_version_lower_bound :: 13.0' in variant_properties"
            )
        make_wheel(
            root,
            project,
            version,
            label=label,
            variant=props,
            variant_doc=doc,
            requires=requires,
            files={f"{project}/__init__.py": f"BUILD = {label!r}\n"},
        )
    make_wheel(
        root,
        project,
        version,
        requires=list(deps),
        files={f"{project}/__init__.py": "BUILD = 'plain'\n"},
    )
    if extra_projects:
        for name in ("filelock", "nvidia-runtime", "cuda13-extras"):
            if not list(root.glob(f"{name.replace('-', '_')}-*.whl")):
                make_wheel(root, name, "1.0")
    if variants_json:
        shutil.copy(FIXTURES / f"{project}-{version}-variants.json", root)
    return root


# -- profiles of two NVIDIA machines, as `fitwheel detect --json` would write them ------------

#: a current data-centre GPU: every CUDA 12 and 13 build runs
H100 = {
    "properties": {
        "nvidia": {
            "cuda_version_lower_bound": ["13.0", "12.9", "12.8", "12.6", "12.0"],
            "sm_arch": ["90_real", "90_virtual"],
        }
    },
    "devices": [
        {
            "vendor": "nvidia",
            "index": 0,
            "name": "NVIDIA H100",
            "properties": {"nvidia": {"sm_arch": ["90_real", "90_virtual"]}},
        }
    ],
    "sources": {"nvidia": "sysfs+nvml"},
}
#: a GPU too old for any CUDA 12 or 13 build
KEPLER = {
    "properties": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["35_real"]}},
    "devices": [
        {
            "vendor": "nvidia",
            "index": 0,
            "name": "Tesla K40",
            "properties": {"nvidia": {"sm_arch": ["35_real"]}},
        }
    ],
}
