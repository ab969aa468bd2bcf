# fitwheel: `make demo` and `make test` work on a fresh machine with Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench fuzz packse clean system-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks demo tools
	$(BIN)/ruff format --check src tests benchmarks demo tools

typecheck: $(STAMP)
	$(BIN)/mypy

# nginx serves the built static index in the publishing tests (plain static hosting, as in production);
# git makes and checks out the repositories of the version-control requirement tests.
system-deps:
	@if ! command -v git >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null; \
		else echo "git not installed and cannot install it: the version-control tests will be skipped"; fi; \
	fi
	@if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; \
		else echo "nginx not installed and cannot install it: the nginx tests will be skipped"; fi; \
	fi

unit: $(STAMP) system-deps
	$(BIN)/pytest -n 2 -m "not slow and not network" tests

test: lint typecheck unit

demo: $(STAMP)
	$(BIN)/python demo/run_demo.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

fuzz: $(STAMP)
	FITWHEEL_FUZZ_EXAMPLES=20000 $(BIN)/pytest -m slow tests --ignore=tests/e2e/test_packse.py

# the packse resolver scenarios against fitwheel, uv and pip (needs the scenario's Python, 3.12)
packse: $(STAMP)
	$(BIN)/pytest -s -m slow tests/e2e/test_packse.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
