"""The documentation site builds strictly, offline, and its API reference covers every public name.

`make test` runs `make docs` and these tests read the site it built (FMCONSTRUCTS_DOCS_SITE); run directly, they build
it once into a temporary directory. The Sphinx-style inventory (objects.inv) that mkdocstrings writes lists every
object rendered.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import yaml

import fmconstructs

from tests.house.docs_pages import DOCS, ROOT, page, pages

API = DOCS / "api"


def _packages_with_all() -> dict[str, list[str]]:
    found = {"fmconstructs": list(fmconstructs.__all__)}
    for module in pkgutil.walk_packages(fmconstructs.__path__, "fmconstructs."):
        if module.ispkg:
            names = getattr(importlib.import_module(module.name), "__all__", None)
            if names is not None:
                found[module.name] = list(names)
    return found


def _directives() -> list[str]:
    return [m.group(1) for p in API.glob("*.md") for m in re.finditer(r"^::: ([\w.]+)$", p.read_text(), re.M)]


def _mkdocs_config() -> dict[str, object]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)  # mkdocs' !ENV and !!python tags
    config: dict[str, object] = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    return config


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.shared_outputs import made_by_make

    made = made_by_make("FMCONSTRUCTS_DOCS_SITE", "objects.inv", "index.html")
    if made is not None:
        return made  # `make docs`' strict build, just before pytest
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        reason = "mkdocs and mkdocstrings are not installed: `make docs` installs the docs extra"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return out


def _inventory(site: Path) -> set[str]:
    data = (site / "objects.inv").read_bytes()
    header_lines = 4  # "# Sphinx inventory version 2", project, version, "compressed using zlib"
    body = zlib.decompress(data.split(b"\n", header_lines)[header_lines]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines()}


def test_every_public_name_is_in_the_api_reference(site):
    inventory = _inventory(site)
    directives = _directives()
    missing = [
        f"{package}.{name}"
        for package, names in _packages_with_all().items()
        for name in names
        if f"{package}.{name}" not in inventory
        and not any(d.startswith(f"{package}.") and d.endswith(f".{name}") for d in directives)
    ]
    assert missing == []


def test_every_package_with_all_has_a_directive_on_an_api_page():
    directives = set(_directives())
    assert set(_packages_with_all()) <= directives


def test_every_top_level_package_and_module_has_an_api_page():
    public = {m.name for m in pkgutil.iter_modules(fmconstructs.__path__) if not m.name.startswith("_")}
    assert {p.stem for p in API.glob("*.md")} - {"index", "fmconstructs"} == public


def test_docstrings_render(site):
    from fmconstructs.pcs import PcsCluster
    from fmconstructs.storage import size_for_checkpoint

    for obj, path in [(PcsCluster, "api/pcs/index.html"), (size_for_checkpoint, "api/storage/index.html")]:
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", (site / path).read_text())).split())
        doc = inspect.getdoc(obj)
        assert doc is not None
        first = " ".join(doc.split("\n\n", 1)[0].replace("``", "").split())
        words = [w for w in re.split(r"\W+", first) if len(w) > 3][:8]
        assert words and all(w in text for w in words), (path, words)


def test_every_page_is_in_the_nav_and_built(site):
    built = {p.relative_to(DOCS).with_suffix("") for p in pages()}
    for rel in built:
        target = site / rel.parent / "index.html" if rel.name == "index" else site / rel / "index.html"
        assert target.exists(), rel
    nav = str(_mkdocs_config()["nav"])
    assert [str(p.relative_to(DOCS)) for p in pages() if str(p.relative_to(DOCS)) not in nav] == []


def test_the_build_needs_no_network():
    config = _mkdocs_config()
    plugins = config["plugins"]
    assert isinstance(plugins, list)
    names = [p if isinstance(p, str) else next(iter(p)) for p in plugins]
    assert not {"social", "privacy", "optimize", "material/social", "material/privacy"} & set(names)
    (mkdocstrings,) = [p["mkdocstrings"] for p in plugins if isinstance(p, dict) and "mkdocstrings" in p]
    python = mkdocstrings["handlers"]["python"]
    assert "inventories" not in python and "import" not in python  # mkdocstrings would fetch those over the network
    assert config["strict"] is True


def test_every_fmc_command_is_in_the_reference():
    from fmconstructs.cli.main import cli

    reference = page("fmc.md")
    assert [name for name in cli.commands if f"| `fmc {name}` |" not in reference] == []


def test_make_test_runs_make_docs():
    makefile = (ROOT / "Makefile").read_text()
    test_rule = re.search(r"^test: (.*)$", makefile, re.M)
    assert test_rule is not None and "docs" in test_rule.group(1).split()
    assert "mkdocs build --strict" in makefile
