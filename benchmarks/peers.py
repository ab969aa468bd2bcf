"""Installers side by side: fresh virtual environments, per-run cache folders, a static index on
127.0.0.1, and the command line of each peer (fitwheel, ``uv pip install``, ``pip install``)
for the same requirements from the same index."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from benchmarks.harness import Case, smoke

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TORCH = "torch==2.13.0"


def mirror_module() -> ModuleType:
    """The real-tree mirror (pinned wheels, index build, loopback server) of the e2e tests."""
    sys.path.insert(0, str(ROOT))
    from tests.e2e import mirror

    return mirror


@contextlib.contextmanager
def isolated_environ() -> Iterator[None]:
    """Run the peers without this machine's pip/uv configuration (extra indexes, find-links),
    so that each reads only the index URL it is given."""
    saved = dict(os.environ)
    bench = {k: v for k, v in saved.items() if k.startswith("FITWHEEL_BENCH_")}
    mirror_module()  # puts the test kit on the path
    from tests.kit import clean_env

    clean = clean_env(**bench)
    os.environ.clear()
    os.environ.update(clean)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def fresh_venv(path: Path) -> Callable[[], None]:
    """A setup step: an empty virtual environment at ``path`` (no pip inside)."""

    mirror_module()  # puts the test kit on the path
    from tests.kit import make_venv

    def setup() -> None:
        if path.exists():
            shutil.rmtree(path)
        make_venv(path, via="venv")

    return setup


def emptied(path: Path) -> Callable[[], None]:
    def setup() -> None:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)

    return setup


def both(*steps: Callable[[], None]) -> Callable[[], None]:
    def setup() -> None:
        for step in steps:
            step()

    return setup


def torch_wheel(dest: Path) -> Path:
    """The torch 2.13.0 CPU wheel, fetched once by ``pip download`` with this machine's pip
    configuration (which may name a local wheel store)."""
    found = sorted(dest.glob("torch-2.13.0*.whl")) if dest.is_dir() else []
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(dest),
                TORCH,
            ],
            check=True,
        )
        found = sorted(dest.glob("torch-2.13.0*.whl"))
    if not found:
        raise RuntimeError(f"pip download {TORCH} left no wheel in {dest}")
    return found[0]


def torch_site(wheel: Path, work: Path) -> Path:
    """A static index of the torch ``wheel`` alone, built under ``work`` (the wheel linked, or
    copied across filesystems); returns the folder to serve."""
    wheels = work / "torch-wheels"
    wheels.mkdir()
    try:
        os.link(wheel, wheels / wheel.name)
    except OSError:
        shutil.copy2(wheel, wheels / wheel.name)
    built: Path = mirror_module().build_index(wheels, work / "torch-site")
    return built


@dataclass(frozen=True)
class Peers:
    """Commands for one job (``requirements`` + ``flags``) against ``index_url``; every peer
    installs into its own venv under ``work`` and keeps its cache in its own folder."""

    work: Path
    index_url: str
    requirements: Sequence[str]
    flags: Sequence[str] = ()

    def venv(self, peer: str) -> Path:
        return self.work / f"venv-{peer.replace(' ', '-')}"

    def cache(self, peer: str) -> Path:
        return self.work / f"cache-{peer.replace(' ', '-')}"

    def _setup(self, peer: str, cold: bool) -> Callable[[], None]:
        steps = [fresh_venv(self.venv(peer))]
        if cold:
            steps.append(emptied(self.cache(peer)))
        return both(*steps)

    def fitwheel(
        self,
        cold: bool,
        *,
        link_mode: str | None = None,
        program: Path | None = None,
        name: str = "fitwheel",
    ) -> Case:
        """``program`` (default: this tree as users install it) under the row ``name``."""
        peer = name + (f"-{link_mode}" if link_mode else "")
        from benchmarks.user_install import program as this_tree

        argv = [
            str(program or this_tree()),
            "install",
            "-q",
            "--python",
            str(self.venv(peer)),
            "--index-url",
            self.index_url,
            "--cache-dir",
            str(self.cache(peer)),
            *(["--link-mode", link_mode] if link_mode else []),
            *self.flags,
            *self.requirements,
        ]
        return Case.command(
            peer,
            argv,
            setup=self._setup(peer, cold),
            env={"FITWHEEL_CACHE_DIR": str(self.cache(peer))},
        )

    def uv(self, cold: bool) -> Case:
        argv = [
            str(BIN / "uv"),
            "pip",
            "install",
            "-q",
            "--python",
            str(self.venv("uv") / "bin" / "python"),
            "--index-url",
            self.index_url,
            *self.flags,
            *self.requirements,
        ]
        return Case.command(
            "uv pip install",
            argv,
            setup=self._setup("uv", cold),
            env={"UV_CACHE_DIR": str(self.cache("uv")), "UV_NO_CONFIG": "1"},
        )

    def pip(self, cold: bool) -> Case:
        # --no-compile: fitwheel and uv do not byte-compile by default either.
        argv = [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(self.venv("pip") / "bin" / "python"),
            "install",
            "-q",
            "--no-compile",
            "--only-binary=:all:",
            "--index-url",
            self.index_url,
            *self.flags,
            *self.requirements,
        ]
        return Case.command(
            "pip install",
            argv,
            setup=self._setup("pip", cold),
            env={"PIP_CACHE_DIR": str(self.cache("pip"))},
        )


@contextlib.contextmanager
def serve_index(site: Path, work: Path) -> Iterator[str]:
    """Serve the built index folder ``site`` on 127.0.0.1 with nginx (as a production static
    host would, pages with ``Cache-Control: max-age=600`` as public indexes send) where nginx is
    installed, else with Python's static server (said once); yields the simple index URL."""
    mirror_module()  # puts the test kit on the path
    from tests.kit import nginx_binary, serve_nginx, serve_static

    if nginx_binary() is not None:
        # pages fresh for 10 minutes, as the default index serves them
        with serve_nginx(site, work / "nginx", negotiate=False, max_age=600) as url:
            yield f"{url}/simple/"
        return
    print("   (nginx is not installed: serving with Python's http.server, slower under load)")
    with serve_static(site) as url:
        yield f"{url}/simple/"


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A work folder for targets, caches and temporary files: a fresh tmpfs where this process
    may mount one (root), so disk noise does not swamp the ratios; else a temporary folder on
    disk (said once). ``FITWHEEL_BENCH_NO_TMPFS=1`` keeps it on disk."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    mounted = False
    on_disk = os.environ.get("FITWHEEL_BENCH_NO_TMPFS") == "1" or smoke()
    if os.geteuid() == 0 and not on_disk:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8g,mode=0700", "fitwheel-bench", str(folder)],
            capture_output=True,
            check=False,
        )
        mounted = done.returncode == 0
        if not mounted:
            print(f"   (could not mount a tmpfs: {done.stderr.decode().strip()}; work on disk)")
    else:
        print("   (not root, a smoke run or FITWHEEL_BENCH_NO_TMPFS=1: work stays on disk)")
    saved = os.environ.get("TMPDIR")
    (folder / "tmp").mkdir()
    os.environ["TMPDIR"] = str(folder / "tmp")
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)
