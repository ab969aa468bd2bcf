"""``install -r requirements.txt`` of a real-looking 42-line file (a service's ``pip freeze``:
FastAPI, SQLAlchemy, Celery with Redis, httpx, uvicorn's extras; ``service_freeze.txt`` of the
requirements corpus) by fitwheel, ``uv pip install`` and ``pip install``, in one run, cold and
warm: the ``requirements`` scenario of :mod:`benchmarks.bench_install_peers` (its one owner)
alone.

    python -m benchmarks install_requirements
    FITWHEEL_BENCH_ROUNDS=15 python -m benchmarks install_requirements
"""

from __future__ import annotations

from benchmarks import bench_install_peers


def main() -> None:
    bench_install_peers.main(("requirements",))


if __name__ == "__main__":
    main()
