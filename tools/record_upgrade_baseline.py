"""Record the upgrade baseline of a released version: what `fmc changes` compares, per example stack.

    .venv/bin/python tools/record_upgrade_baseline.py COMMIT VERSION [--out tests/upgrade/baselines]

Checks COMMIT out into a temporary detached git worktree, synthesizes that version's example app there with the real
CDK CLI (node_modules/.bin/cdk; that version's cdk.json and examples/app.py, cdk-nag off, no version reporting) and the
interpreter running this tool (PYTHONPATH puts that version's fmconstructs first), and writes
OUT/VERSION/<stack>.json: the stack's template reduced by fmconstructs.cli.changes_baseline.project_template (logical
ids, types, construct paths and the create-only and update-refused values only, not whole templates), plus
OUT/VERSION/provenance.json (commit, versions of fmconstructs, aws-cdk-lib and the CDK CLI that made it).
Releases have no git tags: 0.2.0 is a045dc6, 0.3.0 is 9fab76b (CHANGELOG.md, the release commits).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fmconstructs.cli.assembly import read_assembly  # noqa: E402
from fmconstructs.cli.changes_baseline import BASELINE_FORMAT, project_template  # noqa: E402


def _cdk() -> Path:
    for base in (ROOT, Path("/work/main")):
        cli = base / "node_modules" / ".bin" / "cdk"
        if cli.exists():
            return cli
    raise SystemExit("no CDK CLI: run `npm ci` (make setup) first")


def _synth(tree: Path, out: Path) -> str:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(tree),
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        CDK_DISABLE_CLI_TELEMETRY="true",
        AWS_DEFAULT_REGION="us-east-1",
    )
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    cli = _cdk()
    app = f"{sys.executable} examples/app.py"
    command = [str(cli), "synth", "--quiet", "--no-notices", "--no-version-reporting", "--app", app]
    command += ["-c", "fmconstructs:nag=false", "--output", str(out)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"cdk synth failed at {tree}:\n{done.stderr[-4000:]}")
    probe = (
        "import fmconstructs, json; from importlib.metadata import version; "
        "print(json.dumps([fmconstructs.__file__, version('aws-cdk-lib')]))"
    )
    found = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], cwd=tree, env=env, check=True, capture_output=True, text=True
        ).stdout
    )
    if not str(found[0]).startswith(str(tree)):
        raise SystemExit(f"synthesized with {found[0]}, not the checked-out version's fmconstructs")
    version = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return f"aws-cdk-lib {found[1]}, CDK CLI {version}"


def record(commit: str, version: str, out: Path) -> list[str]:
    """Write OUT/VERSION/*.json for the example app at ``commit``; the stack names written."""
    work = Path(tempfile.mkdtemp(prefix=f"fmc-baseline-{version}-"))
    tree = work / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        tools = _synth(tree, work / "cdk.out")
        stacks = read_assembly(work / "cdk.out")
        target = out / version
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for stack in stacks:
            body = {
                "format": BASELINE_FORMAT,
                "version": version,
                "stack": stack.name,
                **project_template(stack.template),
            }
            (target / f"{stack.name}.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
        full = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", commit], capture_output=True, text=True, check=True
        ).stdout.strip()
        provenance = {
            "version": version,
            "commit": full,
            "synthesized_with": tools,
            "stacks": [s.name for s in stacks],
            "tool": "tools/record_upgrade_baseline.py",
        }
        (target / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
        return [s.name for s in stacks]
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commit")
    parser.add_argument("version")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "upgrade" / "baselines")
    args = parser.parse_args()
    names = record(args.commit, args.version, args.out)
    print(f"{args.version}: {len(names)} stacks: {', '.join(names)}")


if __name__ == "__main__":
    main()
