import sys
from pathlib import Path

# The shared test kit lives with the end-to-end tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
