"""Start-up: what each command path imports, read with ``python -X importtime`` from fitwheel
as ``pip install .`` installs it, against a list of modules that path must not load.

- ``fitwheel --version`` and ``fitwheel detect --json``: no resolver, HTTP client or rich;
- ``fitwheel select`` of a variants file without markers: no ``packaging.markers``;
- ``fitwheel install`` answered by a remembered resolution (the second identical install into
  a fresh venv from a loopback index whose pages are fresh): no resolver, no HTTP client
  (urllib3, ssl, socket), no ``importlib.metadata``, no ``packaging`` requirement parsing;
- the same with ``--dry-run``, and with ``--report`` (written from the record).

Each line gives the modules imported, their total import time as ``-X importtime`` reports it
(self times summed; inflated by the measurement itself, so compare lines with each other, not
with wall-clock timings), and ``ok`` or the forbidden modules that were loaded. A check, not a
test: ``python -m benchmarks imports``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import smoke
from benchmarks.peers import isolated_environ, mirror_module, serve_index

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ROOT / "tests" / "variants" / "data" / "published" / "torch-2.9.0-variants.json"
PROFILE = ROOT / "tests" / "data" / "profiles" / "h100.json"

#: modules no start of these paths may load
NEVER_AT_START = ("resolvelib", "urllib3", "ssl", "rich", "importlib.metadata")
#: what an install answered from a remembered resolution must not load
REMEMBERED = (
    *NEVER_AT_START,
    "socket",
    "http.client",
    "packaging.requirements",
    "packaging.markers",
    "packaging.specifiers",
    "packaging.tags",
    "fitwheel.resolve.resolver",
    "fitwheel.index.http",
    "fitwheel.install.workflow",
)


def imported(python: Path, argv: Sequence[str], env: dict[str, str]) -> tuple[dict[str, int], str]:
    """module -> self import time in microseconds, for one run of ``python -X importtime``."""
    done = subprocess.run(
        [str(python), "-X", "importtime", *argv], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
    out: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, self_us, _cumulative, name = (p.strip() for p in line.replace(":", "|", 1).split("|"))
        out[name] = int(self_us)
    return out, done.stdout


def check(label: str, modules: dict[str, int], forbidden: Sequence[str]) -> bool:
    loaded = sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))
    total = sum(modules.values()) / 1000
    verdict = "ok" if not loaded else "LOADED " + ", ".join(loaded)
    print(f"   {label:<44} {len(modules):4d} modules {total:7.1f} ms   {verdict}")
    return not loaded


def _small_index(work: Path) -> Path:
    """A static index of three real wheels (a console script among them)."""
    mirror_module()  # puts the test kit on the path
    from tests.kit import make_wheel

    from fitwheel.publish.index_build import build_index

    wheels = work / "wheels"
    make_wheel(wheels, "app", "1.0", requires=["lib>=1", "helper"])
    make_wheel(wheels, "lib", "1.0", entry_points={"lib-tool": "lib:main"})
    make_wheel(wheels, "helper", "2.0")
    build_index(wheels, work / "site")
    return work / "site"


def main() -> None:
    from benchmarks.user_install import program

    fitwheel = program()
    python = fitwheel.parent / "python"
    print("\n== start-up: modules each command path imports (python -X importtime)")
    ok = True
    with isolated_environ(), tempfile.TemporaryDirectory(prefix="fitwheel-bench-imports-") as tmp:
        work = Path(tmp)
        env = dict(os.environ)
        modules, _ = imported(python, [str(fitwheel), "--version"], env)
        ok &= check("fitwheel --version", modules, NEVER_AT_START)
        modules, _ = imported(python, [str(fitwheel), "detect", "--json"], env)
        ok &= check("fitwheel detect --json", modules, NEVER_AT_START)
        select = [str(fitwheel), "select", str(VARIANTS), "--profile", str(PROFILE), "--json"]
        modules, out = imported(python, select, env)
        markers = "packaging.markers" if "enable-if" not in VARIANTS.read_text() else "-"
        ok &= check("fitwheel select (no markers in the file)", modules, [markers])
        json.loads(out)
        site = _small_index(work)
        with serve_index(site, work / "server") as url:
            for flags in ([], ["--dry-run"], ["--report", str(work / "report.json")]):
                venv = work / "venv"
                argv = [str(fitwheel), "install", "-q", "--python", str(venv)]
                argv += ["--index-url", url, "--cache-dir", str(work / "cache"), *flags, "app"]
                for _ in range(2):  # the first resolves and is remembered; the second is timed
                    if venv.exists():
                        shutil.rmtree(venv)
                    subprocess.run(
                        [str(python), "-m", "venv", "--without-pip", str(venv)], check=True
                    )
                    modules, _ = imported(python, argv, env)
                what = "install, remembered" + (f" ({flags[0]})" if flags else "")
                ok &= check(what, modules, REMEMBERED)
    print("   -> every path within its import budget" if ok else "   -> SOME PATH LOADS TOO MUCH")
    if smoke() and not ok:
        raise SystemExit("an import budget is exceeded")


if __name__ == "__main__":
    main()
