"""Source distribution file names: PEP 625 names, and older ones with '-' in the name."""

from __future__ import annotations

import pytest

from fitwheel.variants.errors import InvalidWheelFilenameError
from fitwheel.variants.filenames import SdistFilename, is_sdist_filename


@pytest.mark.parametrize(
    ("filename", "project", "name", "version"),
    [
        ("docopt-0.6.2.tar.gz", None, "docopt", "0.6.2"),
        ("antlr4_python3_runtime-4.9.3.tar.gz", None, "antlr4_python3_runtime", "4.9.3"),
        ("python-dateutil-2.8.2.tar.gz", "python-dateutil", "python-dateutil", "2.8.2"),
        ("python-dateutil-2.8.2.tar.gz", None, "python-dateutil", "2.8.2"),
        ("Foo.Bar-1.0rc1.zip", "foo-bar", "Foo.Bar", "1.0rc1"),
    ],
)
def test_parse(filename: str, project: str | None, name: str, version: str) -> None:
    parsed = SdistFilename.parse(filename, project)
    assert (parsed.name, parsed.version) == (name, version)
    assert parsed.format() == filename
    assert is_sdist_filename(filename)


@pytest.mark.parametrize("filename", ["pkg-1.0.whl", "pkg.tar.gz", "pkg-notaversion!.tar.gz"])
def test_refused(filename: str) -> None:
    with pytest.raises(InvalidWheelFilenameError):
        SdistFilename.parse(filename)
