"""The requirements-file corpus under tests/data/requirements: files written as real projects
write theirs (ML projects with a PyTorch index line first and local-version pins, web and data
projects layered with ``-r``/``-c``, markers, extras and ``--hash`` locks), their hosts written
as ``${VAR}`` placeholders that a test fills in.

:data:`OFFLINE` fills the placeholders with addresses nothing answers at (enough to read the
files); :func:`for_network` copies the corpus with the hosts rewritten for a run against the
default index and a loopback PyTorch mirror (see tests/corpus/torch_links.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "requirements"

#: the placeholders of the corpus, filled with addresses that nothing answers at
OFFLINE = {
    "TORCH_INDEX": "http://127.0.0.1:9/torch",
    "FIND_LINKS": "http://127.0.0.1:9/torch/whl",
    "INDEX_HOST": "mirror.internal.invalid",
    "INDEX_USER": "ci",
    "INDEX_TOKEN": "not-a-secret",
    "PRIVATE_INDEX_HOST": "packages.internal.invalid",
    "PRIVATE_INDEX_USER": "ci",
    "PRIVATE_INDEX_TOKEN": "not-a-secret",
}

_OPTION = re.compile(r"^\s*(-i|--index-url|--extra-index-url|-f|--find-links|--no-index)\b")


def corpus_files() -> list[str]:
    """Every requirements file of the corpus, as a path relative to :data:`DATA`."""
    return sorted(
        str(p.relative_to(DATA)) for p in DATA.rglob("*.txt") if p.parent.name != "wheels"
    )


def sets_indexes(path: Path) -> bool:
    """Whether the file itself has an index or find-links line."""
    text = path.read_text(encoding="utf-8-sig")
    return any(_OPTION.match(line) for line in text.splitlines())


def for_network(dest: Path, default_index: str, unreachable: str) -> Path:
    """A copy of the corpus at ``dest`` (the same layout, so ``-r``/``-c`` still work) whose
    older ``${INDEX_HOST}`` lines are pointed where a run can reach: ``https://${INDEX_HOST}/whl/``
    (PyTorch's download root) at ``${TORCH_INDEX}/whl/``, ``https://${INDEX_HOST}/simple`` (a
    mirror of the default index) at ``default_index``, and every other use of the host at
    ``unreachable`` (a host name, for a private index or VCS host that this machine cannot
    reach)."""
    shutil.copytree(DATA, dest)
    for path in dest.rglob("*.txt"):
        text = path.read_text(encoding="utf-8")
        new = text.replace("https://${INDEX_HOST}/whl/", "${TORCH_INDEX}/whl/")
        new = new.replace("https://${INDEX_HOST}/simple", default_index.rstrip("/"))
        new = new.replace("${INDEX_HOST}", unreachable)
        if new != text:
            path.write_text(new, encoding="utf-8")
    return dest
