"""HyperPod lifecycle scripts: the OnCreate / OnInitComplete entry scripts and the Slurm provisioning parameters.

HyperPod downloads every object under ``LifeCycleConfig.SourceS3Uri`` to the node and runs ``OnCreate`` from it
(CloudFormation ``AWS::SageMaker::Cluster ClusterLifeCycleConfig``; SageMaker Developer Guide
"sagemaker-hyperpod-lifecycle-best-practices").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The OnCreate file fmconstructs writes (a name of its own, so a copied base-config's ``on_create.sh`` can sit beside).
ON_CREATE = "fmconstructs_on_create.sh"
#: The node set-up steps (:class:`~fmconstructs.bootstrap.NodeBootstrap`, rendered).
SETUP_SCRIPT = "fmconstructs_setup.sh"
#: The file HyperPod's published Slurm lifecycle scripts read (awsome-distributed-training
#: 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/on_create.sh:
#: ``PROVISIONING_PARAMETERS_PATH="provisioning_parameters.json"``).
PROVISIONING_PARAMETERS = "provisioning_parameters.json"

#: Pauses 30 s as base-config/on_create.sh does first (``FMCONSTRUCTS_ON_CREATE_PAUSE_SECONDS``, tests only), runs the
#: fmconstructs steps (``bash -euo pipefail``, as fmconstructs' user data runs them: a failed step fails the script),
#: then the published base-config's ``lifecycle_script.py`` when it was copied beside (same arguments as
#: base-config/on_create.sh:
#: ``-rc $SAGEMAKER_RESOURCE_CONFIG_PATH -pp provisioning_parameters.json``,
#: resource config default ``/opt/ml/config/resource_config.json``).
ON_CREATE_SCRIPT = """#!/bin/bash
# fmconstructs: HyperPod OnCreate. Runs from the downloaded lifecycle prefix.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mkdir -p /var/log/provision
exec > >(tee -a /var/log/provision/fmconstructs.log) 2>&1
echo "fmconstructs: lifecycle start $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# As the published on_create.sh does first: "give systemd-resolved (DNS service) enough time to get rebooted (by
# HostAgent) so that network is available during LCS execution".
sleep "${FMCONSTRUCTS_ON_CREATE_PAUSE_SECONDS:-30}"
if [[ -f fmconstructs_setup.sh ]]; then
  bash -euo pipefail ./fmconstructs_setup.sh
fi
if [[ -f lifecycle_script.py ]]; then
  resource_config="${SAGEMAKER_RESOURCE_CONFIG_PATH:-/opt/ml/config/resource_config.json}"
  python3 -u lifecycle_script.py -rc "$resource_config" -pp provisioning_parameters.json
fi
echo "fmconstructs: lifecycle done"
"""


#: The OnInitComplete file fmconstructs writes (``SlurmConfiguration.API``): HyperPod runs it "on the node after the
#: AMI-based initialization is complete" (botocore ``ClusterLifeCycleConfig.OnInitComplete``), when HyperPod has set up
#: and started Slurm (awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/Extensions/add-users/README.md:
#: "The script must run after Slurm starts. With OnInitComplete, this is guaranteed").
ON_INIT_COMPLETE = "fmconstructs_on_init_complete.sh"

#: Runs the group's fmconstructs set-up (Lustre mount, node collectors, your commands). Its log lines go to
#: /var/log/provision/ like the published scripts' (Extensions/run_extensions.sh: ``/var/log/provision/
#: provisioning.log``), in a file of its own. The steps run with ``bash -euo pipefail`` (as fmconstructs' user data
#: runs them): a failed step fails the script, so HyperPod sees the node's lifecycle fail instead of serving a node
#: without its file system (the collectors' step logs its own failure and lets the node continue).
ON_INIT_COMPLETE_SCRIPT = """#!/bin/bash
# fmconstructs: HyperPod OnInitComplete. Runs from the downloaded lifecycle prefix of this instance group, after
# HyperPod configured and started Slurm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
mkdir -p /var/log/provision
exec > >(tee -a /var/log/provision/fmconstructs.log) 2>&1
echo "fmconstructs: lifecycle start $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [[ -f fmconstructs_setup.sh ]]; then
  bash -euo pipefail ./fmconstructs_setup.sh
fi
echo "fmconstructs: lifecycle done"
"""


def slurm_provisioning_parameters(
    *,
    controller_group: str,
    login_group: str | None,
    worker_groups: Sequence[tuple[str, str]],
    fsx_dns_name: str | None,
    fsx_mount_name: str | None,
) -> dict[str, Any]:
    """``provisioning_parameters.json`` as the published Slurm lifecycle scripts read it.

    Keys (awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/
    lifecycle_script.py ``ProvisioningParameters``: ``workload_manager``, ``controller_group``, ``login_group``,
    ``fsx_dns_name``, ``fsx_mountname``; ``version`` "1.0.0" and
    ``worker_groups[{instance_group_name, partition_name}]`` as in 1.architectures/5.sagemaker-hyperpod/README.md's
    example and automate-smhp-slurm/automate-cluster-creation.sh;
    base-config/utils/create_users.sh reads ``.worker_groups[].instance_group_name``).
    """
    params: dict[str, Any] = {
        "version": "1.0.0",
        "workload_manager": "slurm",
        "controller_group": controller_group,
        "worker_groups": [
            {"instance_group_name": name, "partition_name": partition} for name, partition in worker_groups
        ],
    }
    if login_group is not None:
        params["login_group"] = login_group
    if fsx_dns_name is not None and fsx_mount_name is not None:
        params["fsx_dns_name"] = fsx_dns_name
        params["fsx_mountname"] = fsx_mount_name
    return params


def observability_commands(remote_write_url: str) -> list[str]:
    """Shell lines that turn on the published base-config's observability and point it at ``remote_write_url``.

    awsome-distributed-training base-config/config.py: ``Config.enable_observability = False`` (default) and
    ``ObservabilityConfig.prometheus_remote_write_url = "..."``; lifecycle_script.py then runs
    ``observability/install_observability.py --node-type ... --prometheus-remote-write-url <url>`` (exporters and an
    OpenTelemetry collector whose ``prometheusremotewrite`` exporter uses ``sigv4auth``). Runs in the lifecycle
    directory, before ``lifecycle_script.py``; a no-op without ``config.py``.
    """
    return [
        "if [[ -f config.py ]]; then",
        "  sed -i -E 's|^([[:space:]]*enable_observability[[:space:]]*=[[:space:]]*).*$|\\1True|' config.py",
        "  sed -i -E 's|^([[:space:]]*prometheus_remote_write_url[[:space:]]*=[[:space:]]*).*$|\\1\"'"
        + remote_write_url
        + "'\"|' config.py",
        "fi",
    ]


def lifecycle_files(
    setup_script: str | None, parameters: Mapping[str, Any] | None, *, entry: str = ON_CREATE
) -> dict[str, Any]:
    """What goes under a lifecycle prefix (names -> text or JSON value): the entry script (``ON_CREATE`` or
    ``ON_INIT_COMPLETE``), the set-up script and the provisioning parameters when given."""
    scripts = {ON_CREATE: ON_CREATE_SCRIPT, ON_INIT_COMPLETE: ON_INIT_COMPLETE_SCRIPT}
    files: dict[str, Any] = {entry: scripts[entry]}
    if setup_script is not None:
        files[SETUP_SCRIPT] = setup_script
    if parameters is not None:
        files[PROVISIONING_PARAMETERS] = dict(parameters)
    return files
