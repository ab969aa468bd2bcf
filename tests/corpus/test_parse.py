"""Every file of the requirements corpus reads with fitwheel's parser (a refusal names the file
and line), and the corpus has the shapes real projects write."""

from __future__ import annotations

import pytest

from fitwheel.resolve.reqfile import RequirementsReader
from fitwheel.resolve.reqforms import Named
from tests.corpus.corpus import DATA, OFFLINE, corpus_files, sets_indexes

FILES = corpus_files()


def _read(name: str) -> RequirementsReader:
    reader = RequirementsReader(env=OFFLINE)
    reader.parse(str(DATA / name))
    return reader


@pytest.mark.parametrize("name", FILES)
def test_every_file_reads(name: str) -> None:
    reader = _read(name)
    assert reader.lines, f"{name} lists no requirement"
    for option, value in reader.options.given():
        assert "${" not in value.value, f"{value.origin}: {option} kept a placeholder"


def test_the_corpus_has_the_shapes_of_real_projects() -> None:
    assert len(FILES) >= 25
    assert len([n for n in FILES if sets_indexes(DATA / n)]) >= 8
    lines = [line for name in FILES for line in _read(name).lines]
    named = [line.form.requirement for line in lines if isinstance(line.form, Named)]
    # PyTorch pins with local versions, as the backend indexes publish them
    local = {str(r) for r in named if r.name == "torch" and "+" in str(r.specifier)}
    assert {"torch==2.1.0+cu118", "torch==2.3.1+cu121", "torch==2.2.2+cpu"} <= local
    assert any(r.extras for r in named)
    assert any(r.marker is not None for r in named)
    assert any(line.hashes for line in lines)
    assert any(line.constraint for line in lines)
    # -r layering: some lines come from a file other than the one read
    assert any(
        not line.origin.startswith(str(DATA / "django" / "test.txt"))
        for line in _read("django/test.txt").lines
    )
