"""The sdist reader: real archives unpacked, hostile ones refused with the file named."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from fitwheel.sdist.archive import SdistArchiveError, SdistLimits, unpack_sdist
from tests.kit import make_sdist


def _tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None) -> Path:
    data = data or {}
    with tarfile.open(path, "w:gz") as tf:
        for info in members:
            body = data.get(info.name)
            tf.addfile(info, io.BytesIO(body) if body is not None else None)
    return path


def _file(name: str, body: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(body)
    return info, body


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_unpacks_a_real_sdist_to_its_top_folder(tmp_path: Path) -> None:
    for fmt in ("tar.gz", "zip"):
        sdist = make_sdist(tmp_path / fmt, "demo-pkg", "1.0", fmt=fmt)
        tree = unpack_sdist(sdist, tmp_path / f"out-{fmt}")
        assert tree.name == "demo_pkg-1.0"
        assert (tree / "pyproject.toml").is_file()
        assert (tree / "demo_pkg.py").read_text() == "__version__ = '1.0'\n"


def test_inner_links_are_kept_and_hard_links_copied(tmp_path: Path) -> None:
    real, body = _file("p-1/src/real.py", b"VALUE = 1\n")
    path = _tar(
        tmp_path / "p-1.tar.gz",
        [
            real,
            _link("p-1/alias.py", "src/real.py"),
            _link("p-1/copy.py", "p-1/src/real.py", tarfile.LNKTYPE),
        ],
        {real.name: body},
    )
    tree = unpack_sdist(path, tmp_path / "out")
    assert (tree / "alias.py").is_symlink() and (tree / "alias.py").read_text() == "VALUE = 1\n"
    assert not (tree / "copy.py").is_symlink() and (tree / "copy.py").read_text() == "VALUE = 1\n"


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ([_file("../evil.py")[0]], "'..'"),
        ([_file("/etc/evil.py")[0]], "absolute path"),
        ([_file("p-1/a\\b.py")[0]], "backslash"),
        ([_link("p-1/up", "../../outside")], "outside the tree"),
        ([_link("p-1/abs", "/etc/passwd")], "outside the tree"),
        ([_link("p-1/hard", "p-1/nothing", tarfile.LNKTYPE)], "hard link"),
        ([_link("p-1/dir", "."), _file("p-1/dir/x.py")[0]], "under the link"),
    ],
)
def test_hostile_tar_members_are_refused(
    tmp_path: Path, members: list[tarfile.TarInfo], problem: str
) -> None:
    data = {m.name: b"x" for m in members if m.isreg()}
    path = _tar(tmp_path / "p-1.tar.gz", members, data)
    out = tmp_path / "out"
    with pytest.raises(SdistArchiveError) as caught:
        unpack_sdist(path, out)
    assert problem in str(caught.value)
    assert str(path) in str(caught.value)
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "outside").exists()


def test_devices_and_fifos_are_refused(tmp_path: Path) -> None:
    fifo = tarfile.TarInfo("p-1/fifo")
    fifo.type = tarfile.FIFOTYPE
    path = _tar(tmp_path / "p-1.tar.gz", [fifo])
    with pytest.raises(SdistArchiveError, match="special file"):
        unpack_sdist(path, tmp_path / "out")


def test_size_and_count_limits(tmp_path: Path) -> None:
    big, body = _file("p-1/big.bin", b"0" * 5000)
    path = _tar(tmp_path / "p-1.tar.gz", [big], {big.name: body})
    with pytest.raises(SdistArchiveError, match="declares 5000 bytes"):
        unpack_sdist(path, tmp_path / "a", limits=SdistLimits(max_member_size=4096))
    with pytest.raises(SdistArchiveError, match="in all"):
        unpack_sdist(path, tmp_path / "b", limits=SdistLimits(max_total_size=4096))
    many = [_file(f"p-1/m{i}.py")[0] for i in range(5)]
    path = _tar(tmp_path / "many.tar.gz", many, {m.name: b"x" for m in many})
    with pytest.raises(SdistArchiveError, match="more than 3 members"):
        unpack_sdist(path, tmp_path / "c", limits=SdistLimits(max_members=3))
    with pytest.raises(SdistArchiveError, match="longer than"):
        unpack_sdist(path, tmp_path / "d", limits=SdistLimits(max_seconds=-1))


def test_duplicate_members_are_refused(tmp_path: Path) -> None:
    one, body = _file("p-1/a.py")
    path = _tar(tmp_path / "p-1.tar.gz", [one, one], {one.name: body})
    with pytest.raises(SdistArchiveError, match="twice"):
        unpack_sdist(path, tmp_path / "out")


def test_hostile_zip_members_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "p-1.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("p-1/ok.py", "x")
        zf.writestr("../evil.py", "x")
    with pytest.raises(SdistArchiveError, match=r"'\.\.'"):
        unpack_sdist(path, tmp_path / "out")
    assert not (tmp_path / "evil.py").exists()


def test_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "p-1.tar.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(SdistArchiveError, match="not a readable tar archive"):
        unpack_sdist(path, tmp_path / "out")
    other = tmp_path / "p-1.rar"
    other.write_bytes(b"x")
    with pytest.raises(SdistArchiveError, match=r"not a \.tar\.gz or \.zip"):
        unpack_sdist(other, tmp_path / "out2")
