"""The example app never shrinks a file system that the previous release deployed.

FSx for Lustre can only increase a file system's storage capacity (FSx for Lustre User Guide, managing-storage-capacity:
"You can only increase the amount of storage capacity for a file system; you cannot decrease storage capacity"), so a
release whose example asks for less than the previous one fails the upgrade of every deployed example (or, beside a
create-only change, replaces the file system by an empty one).

PREVIOUS_RELEASE holds the values of fmconstructs 0.2.0 (commit a045dc6, "0.2.0: CHANGELOG.md ..."), read by
synthesizing that commit's ``examples/app.py`` build (``git archive a045dc6``, aws-cdk-lib of this checkout): a literal
table on purpose, since the point is to compare with what was deployed, not with what today's code computes. FmPcsP5 and
FmEksGb200 asked for 4.8 GB/s at 1,000 MB/s/TiB, which 0.2.0's sizing (a TiB is 1,024 GiB) rounds up to 9,600 GiB; the
examples later lowered the target to 4.6875 GB/s (4,800 GiB) and now pin ``min_capacity_gib=9,600``. When a release
deploys new sizes, add a table for it rather than editing this one.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_fsx as fsx

#: fmconstructs 0.2.0 (commit a045dc6): StorageCapacity (GiB) of every AWS::FSx::FileSystem of the example app, by
#: construct path.
PREVIOUS_RELEASE = "0.2.0 (a045dc6)"
PREVIOUS_CAPACITY_GIB: dict[str, int] = {
    "FmStorage/Lustre/Resource": 4800,
    "FmPcsP5/Lustre/Resource": 9600,
    "FmEksP5en/Lustre/Resource": 2400,
    "FmEksGb200/Lustre/Resource": 9600,
}


def _capacities(stacks: dict[str, cdk.Stack]) -> dict[str, object]:
    app = next(iter(stacks.values())).node.root
    return {
        construct.node.path: cdk.Stack.of(construct).resolve(construct.storage_capacity)
        for construct in app.node.find_all()
        if isinstance(construct, fsx.CfnFileSystem)
    }


@pytest.fixture(scope="module")
def capacities(example_stacks: dict[str, cdk.Stack]) -> dict[str, object]:
    return _capacities(example_stacks)


@pytest.mark.parametrize(("path", "previous_gib"), sorted(PREVIOUS_CAPACITY_GIB.items()))
def test_no_file_system_is_smaller_than_in_the_previous_release(
    capacities: dict[str, object], path: str, previous_gib: int
) -> None:
    # GIVEN the example app's file systems, THEN each one the previous release deployed still exists at the same
    # construct path (a renamed id would replace it) and is at least as large.
    assert path in capacities, f"{path} (deployed by {PREVIOUS_RELEASE}) is gone from the example app"
    current = capacities[path]
    assert isinstance(current, int), f"{path}: StorageCapacity is a deploy-time value ({current})"
    assert current >= previous_gib, (
        f"{path}: {current:,} GiB, smaller than the {previous_gib:,} GiB {PREVIOUS_RELEASE} deployed: FSx cannot "
        f"shrink a file system; pass min_capacity_gib={previous_gib} to the sizing helper"
    )


def test_the_example_keeps_the_previous_sizes_exactly(capacities: dict[str, object]) -> None:
    # The examples document their sizes; a growth would be a deliberate change made with this table.
    assert {path: capacities[path] for path in PREVIOUS_CAPACITY_GIB} == PREVIOUS_CAPACITY_GIB
