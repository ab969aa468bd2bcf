"""The demo's builder: every build comes out as a valid variant wheel, and the index holds them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from variantlib.variants_json import VariantsJson

from fitwheel.publish.show import read_wheel_variant

DEMO = Path(__file__).resolve().parents[2] / "demo"


def test_build_demo_into_a_temporary_folder(tmp_path: Path) -> None:
    sys.path.insert(0, str(DEMO))
    try:
        import build_demo
    finally:
        sys.path.remove(str(DEMO))
    index = build_demo.build_all(tmp_path, quiet=True)
    wheels = sorted((tmp_path / "wheels").iterdir())
    labels = {read_wheel_variant(w).label for w in wheels}
    assert labels == {b.label for b in build_demo.BUILDS}
    text = (index / "files" / "fitwheel-demo" / "fitwheel_demo-1.0-variants.json").read_text()
    peer = VariantsJson(json.loads(text))
    expected = {b.label for b in build_demo.BUILDS if b.label is not None}
    assert set(peer.variants) == expected
    for build in build_demo.BUILDS:
        if build.label not in (None, "null"):
            got = {p.to_str() for p in peer.variants[build.label].properties}
            assert got == set(build.properties)
    page = (index / "simple" / "fitwheel-demo" / "index.html").read_text()
    assert page.count(".whl#sha256=") == len(build_demo.BUILDS)
