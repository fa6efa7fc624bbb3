# The two commands of the quick start: `make run` and `make test`.
# Both create .venv and install the project into it first.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint bench system-deps screenshots clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/reins

system-deps:
	@bash tests/system_deps.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) system-deps lint
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider

bench: $(STAMP) system-deps
	QT_QPA_PLATFORM=offscreen $(PY) -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
