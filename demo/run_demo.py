"""The fitwheel demo: publish variant wheels, serve them, and pick the right one.

    make demo        # = .venv/bin/python demo/run_demo.py

1. builds ``fitwheel-demo`` in nine builds (CUDA 12/13, ROCm 6.4/7.0, Intel XPU, x86-64-v3, AArch64,
   the null variant, a plain wheel) and a static index of them (demo/build_demo.py);
2. serves the index on 127.0.0.1 with a small http.server thread;
3. shows what this machine supports (``fitwheel detect``);
4. orders the variants for a bundled H100 profile (``fitwheel select``) and says why;
5. installs from the served index into a fresh virtual environment (``fitwheel install
   --explain`` with the H100 profile) and runs the installed module, which reports its build;
6. installs with uv 0.13.8 as well (its built-in nvidia provider, told the same GPU), to show
   that another variant-aware installer reads the same index the same way;
7. serves a stand-in of PyTorch's per-backend indexes (``BASE/cpu/``, ``BASE/cu130/``, ...) and
   runs ``fitwheel install torch --torch-backend auto --dry-run`` against it: the cpu build on
   this machine (when it has no GPU), the cu130 build for the H100 profile.

Everything runs offline, on loopback, in a temporary folder; no GPU is needed.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROFILE = HERE / "profiles" / "h100.json"
BIN = Path(sys.executable).parent
FITWHEEL = [sys.executable, "-m", "fitwheel"]


def _title(text: str) -> None:
    print(f"\n== {text}")


def _run(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
    echo: bool = True,
) -> str:
    argv = list(argv)
    shown = ["fitwheel", *argv[3:]] if argv[:3] == FITWHEEL else argv
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if echo:
        print(f"$ {' '.join(shown)}")
        output = (proc.stdout + proc.stderr).rstrip()
        if output:
            print("\n".join(f"  {line}" for line in output.splitlines()))
    if check and proc.returncode != 0:
        if not echo:
            print(proc.stdout + proc.stderr)
        raise SystemExit(f"demo step failed (exit {proc.returncode}): {' '.join(shown)}")
    return proc.stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def _has_command(name: str) -> bool:
    return importlib.util.find_spec(f"fitwheel.cli.{name}_cmd") is not None


def _venv(path: Path) -> Path:
    uv = BIN / "uv"
    if uv.exists():
        subprocess.run([str(uv), "venv", "-q", "--python", sys.executable, str(path)], check=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


def _torch_backends(work: Path) -> None:
    """Step 7: the per-backend indexes PyTorch publishes today, mirrored on loopback."""
    sys.path.insert(0, str(HERE.parent))
    from tests.kit.torch_mirror import build_torch_mirror

    mirror = build_torch_mirror(work / "torch-mirror", ("2.9.0", "2.10.0"), variant_versions=())
    with serve(mirror.root) as simple:
        base = simple.removesuffix("/simple/")
        _title(f"7. PyTorch's per-backend indexes, mirrored at {base}/whl/<backend>/")
        python = _venv(work / "venv-torch")
        common = [
            *FITWHEEL,
            "install",
            "torch",
            "--torch-backend",
            "auto",
            "--torch-index-url",
            f"{base}/whl",
            "--index-url",
            mirror.default_index(base),
            "--python",
            str(python),
            "--dry-run",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "FITWHEEL_"))}
        env["PIP_CONFIG_FILE"] = os.devnull
        print("  this machine:")
        _run([*common, "--explain"], env=env, check=False)
        print("  an H100 on a driver for CUDA 13.0 (bundled profile):")
        _run([*common, "--profile", str(PROFILE), "--explain"], env=env)
        print("  make it the default on a machine: fitwheel config set torch-backend auto")


def main() -> int:
    started = time.monotonic()
    sys.path.insert(0, str(HERE))
    from build_demo import BUILDS, build_all

    work = Path(tempfile.mkdtemp(prefix="fitwheel-demo-"))
    try:
        _title(f"1. build fitwheel-demo in {len(BUILDS)} builds and a static index")
        index = build_all(HERE / "out")
        variants_json = index / "files" / "fitwheel-demo" / "fitwheel_demo-1.0-variants.json"
        _run(
            [
                *FITWHEEL,
                "variant",
                "show",
                str(HERE / "out" / "wheels" / "fitwheel_demo-1.0-py3-none-any-cuda13.whl"),
            ]
        )

        with serve(index) as url:
            _title(f"2. serving the index at {url}")

            if _has_command("detect"):
                _title("3. what this machine supports")
                _run([*FITWHEEL, "detect"], check=False)

            _title("4. which build fits an H100 (bundled profile)")
            _run([*FITWHEEL, "select", str(variants_json), "--profile", str(PROFILE)])
            chosen = json.loads(
                _run(
                    [*FITWHEEL, "select", str(variants_json), "--profile", str(PROFILE), "--json"],
                    echo=False,
                )
            )
            best = chosen["ordered"][0] if chosen["ordered"] else "none"
            print(f"  -> best build for an H100: {best}")

            if _has_command("install"):
                _title("5. fitwheel install into a fresh virtual environment")
                python = _venv(work / "venv-fitwheel")
                _run(
                    [
                        *FITWHEEL,
                        "install",
                        "fitwheel-demo",
                        "--index-url",
                        url,
                        "--python",
                        str(python),
                        "--profile",
                        str(PROFILE),
                        "--explain",
                    ]
                )
                _run([str(python), "-m", "fitwheel_demo"])

            uv = BIN / "uv"
            if uv.exists():
                _title("6. the same index, read by uv 0.13.8 (told the GPU is an H100)")
                python = _venv(work / "venv-uv")
                env = dict(os.environ)
                env.update(
                    {
                        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0",
                        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
                        "UV_NO_CACHE": "1",
                    }
                )
                _run(
                    [
                        str(uv),
                        "pip",
                        "install",
                        "--python",
                        str(python),
                        "--preview-features",
                        "wheel-variants",
                        "--index-url",
                        url,
                        "fitwheel-demo",
                    ],
                    env=env,
                )
                _run([str(python), "-m", "fitwheel_demo"])
        if _has_command("install"):
            _torch_backends(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\ndemo finished in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
