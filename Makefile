# fmconstructs: `make synth` and `make test` do all set-up (idempotent); `make lint` runs ruff and mypy.
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
# jsii >= 1.1xx prints an end-of-life banner for Node 20 unless this names the major version.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true

.PHONY: setup tools synth synth-stackset synth-pipeline test test-fast lint bench bench-twin docs dist-check clean

# `make synth` (the main job) needs only Python and Node: no root, no apt-get. The Debian validator tools belong to
# `make test` (a test whose tool is missing skips with the reason, except under CI=true where it fails).
setup: $(VENV)/.stamp node_modules/.stamp

# Debian tools the tests use as real validators (and the cluster twin's: debootstrap builds its Debian 13 root,
# iproute2 brings up its network namespace's loopback): shellcheck (node-side scripts), promtool (package prometheus),
# amtool (package prometheus-alertmanager). The cluster twin (tests/twin, docs/development/twin.md) also runs the
# prometheus, prometheus-alertmanager and prometheus-node-exporter daemons of those packages.
tools:
	@missing=""; command -v shellcheck >/dev/null || missing="$$missing shellcheck"; \
	command -v promtool >/dev/null || missing="$$missing prometheus"; \
	command -v amtool >/dev/null || missing="$$missing prometheus-alertmanager"; \
	command -v prometheus-node-exporter >/dev/null || missing="$$missing prometheus-node-exporter"; \
	command -v debootstrap >/dev/null || missing="$$missing debootstrap"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if ! command -v apt-get >/dev/null; then echo "no apt-get: tests needing$$missing will skip (CI=true fails them)"; exit 0; fi; \
	  sudo_=""; [ "$$(id -u)" = 0 ] || sudo_="sudo -n"; \
	  $$sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo_ apt-get install -y -qq --no-install-recommends $$missing \
	    || { [ "$${CI:-}" != true ] && echo "could not install$$missing: their tests will skip"; }; \
	fi

# Python environment: the package (editable) with its development extras.
$(VENV)/.stamp: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# aws-parallelcluster's own cluster schema for tests/parallelcluster/test_parallelcluster_schema.py, in its own environment: the package
# pins CDK v1 and jsii 1.85 (requirements-pcluster.txt). If it cannot be installed its tests skip (CI=true fails here).
# Its own .gitignore keeps it out of git and of ruff (make lint).
PCLUSTER_VENV := .venv-pcluster
$(PCLUSTER_VENV)/.stamp: requirements-pcluster.txt
	if { test -x $(PCLUSTER_VENV)/bin/python || $(PYTHON) -m venv $(PCLUSTER_VENV); } \
	  && $(PCLUSTER_VENV)/bin/python -m pip install --quiet -r requirements-pcluster.txt; then \
	  echo '*' > $(PCLUSTER_VENV)/.gitignore; touch $@; \
	elif [ "$${CI:-}" = true ]; then exit 1; \
	else rm -rf $(PCLUSTER_VENV); echo "could not create $(PCLUSTER_VENV): its tests will skip"; fi

# The pinned CDK CLI (package-lock.json).
node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

synth: setup
	rm -rf cdk.out
	npx cdk synth --quiet --no-notices --no-version-reporting > /dev/null
	$(PY) -m examples.summary cdk.out

# The multi-account examples (README "One template, many accounts"): a StackSet and a CDK Pipelines app.
synth-stackset: setup
	npx cdk synth --quiet --no-notices --app '$(PY) -m examples.stackset_app' --output cdk.out.stackset > /dev/null

synth-pipeline: setup
	npx cdk synth --quiet --no-notices --app '$(PY) -m examples.pipeline_app' --output cdk.out.pipeline > /dev/null

# The site and the release artefacts that `docs` and `dist-check` made are the ones the tests read
# (tests/house/test_docs_site.py, test_release.py, test_wheel.py): each is built once per `make test`.
test: setup tools $(PCLUSTER_VENV)/.stamp docs dist-check
	FMCONSTRUCTS_DOCS_SITE="$(CURDIR)/$(DOCS_SITE)" FMCONSTRUCTS_DIST="$(CURDIR)/$(DIST_DIR)" \
	  $(PY) -m pytest -n 2 --dist loadfile --durations=10

test-fast: setup tools
	$(PY) -m pytest -n 2 --dist loadfile -m "not validation and not cli"

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The documentation site (mkdocs.yml, docs/): the `docs` extra in .venv, then a strict build into $(DOCS_SITE)
# (broken links, anchors or references fail it; no network: no social/privacy plugins, no remote
# inventories). `make test` runs it, so CI does, and its tests read that site.
DOCS_SITE := build/docs-site
DIST_DIR := build/dist-check
$(VENV)/.docs-stamp: $(VENV)/.stamp pyproject.toml
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-stamp
	rm -rf $(DOCS_SITE)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(DOCS_SITE)

# The release artefacts: `python -m build` makes the sdist, then the wheel from that sdist (so a file missing from the
# sdist fails here), into $(DIST_DIR) (the tests of `make test` read them); `twine check --strict` checks their
# metadata and README rendering.
# Build isolation (the default) installs the [build-system] requirements (setuptools, wheel) from the package
# registry into a throw-away environment: the only network access. Nothing is uploaded.
dist-check: setup
	rm -rf $(DIST_DIR); mkdir -p $(DIST_DIR); log="$$(mktemp)"; trap 'rm -f "$$log"' EXIT
	$(PY) -m build --outdir $(DIST_DIR) . > "$$log" 2>&1 || { tail -40 "$$log"; exit 1; }
	$(PY) -m twine check --strict $(DIST_DIR)/*.tar.gz $(DIST_DIR)/*.whl

# Timings (not a gate): synthesis of the example app with and without CloudFormation validation.
bench: setup
	$(PY) benchmarks/synth.py 3

# The cluster twin tier's run time (tests/twin; budget about 5 minutes on 2 cores): wall time and seconds per file.
bench-twin: setup tools
	$(PY) benchmarks/twin.py 1

clean:
	rm -rf $(VENV) .venv-pcluster node_modules cdk.out .mypy_cache .pytest_cache .ruff_cache $(DOCS_SITE) $(DIST_DIR)
