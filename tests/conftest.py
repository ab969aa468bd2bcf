import sys
from pathlib import Path

# The shared test kit (fwtestkit) lives with the end-to-end tests; every area imports it.
sys.path.insert(0, str(Path(__file__).resolve().parent / "e2e"))
