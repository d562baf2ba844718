"""The names the health loop speaks, defined once: metrics the nodes export, alerts the rules raise, the labels
remediation reads. Standard library only (no imports at all), so every side can import it: the node checks' renderer
(:mod:`.checks`), the alert rules (:mod:`fmconstructs.observability.rules`, :mod:`.nccl_rules`), ``fmc health``
(:mod:`fmconstructs.cli.health_queries`) and the remediation policy (:mod:`fmconstructs.remediation.policy`).

Two consumers cannot import it and keep a copy that a test compares with this module
(``tests/health/test_health_metrics.py``, ``tests/remediation/test_remediation_handler_contract.py``): the NCCL job's
report script (:mod:`.nccl_report`, shipped alone to the nodes) and the remediation handler
(``fmconstructs/remediation/handler/faults.py`` and ``kube.py``, the Lambda asset holds only its own directory).

The loop, by name::

    node checks  --textfile-->  fm_node_check_status{check,mode} == 0  --rule-->  FmNodeCheckFailed
    NCCL job     --textfile-->  fm_nccl_suspect_node{node} == 1         --rule-->  FmNcclOutlier
    NCCL job     --textfile-->  max-size busbw < baseline, or < floor   --rule-->  NcclBusBandwidthBelowBaseline
    queue probe  --textfile-->  fm_nccl_check_deferred == 1             --rule-->  NcclCheckStale held back
    each alert carries fmconstructs_trigger="<Trigger value>" --> the remediation handler's action for that trigger
"""

from __future__ import annotations

# --- where node exporter reads textfiles -----------------------------------------------------------------------------
#: The textfile directory of fmconstructs' node exporter (``--collector.textfile.directory``; see
#: :mod:`fmconstructs.observability.collection`). Writers write a temporary file and rename it
#: (prometheus-community/node-exporter-textfile-collector-scripts README: "atomically write the output"); that only
#: ``*.prom`` files are read and that one metric's HELP/TYPE must agree across files is seen in secondary sources, the
#: node_exporter README itself was not opened (UNCONFIRMED there).
NODE_EXPORTER_TEXTFILE_DIR = "/var/lib/node_exporter/textfile"

# --- node checks (fmconstructs.health.checks writes them) ------------------------------------------------------------
#: The file of one mode's node checks: ``fm_node_checks_boot.prom`` or ``fm_node_checks_prolog.prom``. One file per
#: mode, so a prolog run never erases the boot results (each series carries ``mode``: node exporter refuses the same
#: series from two files).
NODE_CHECK_TEXTFILE = "fm_node_checks_{mode}.prom"
#: Last result of one check on one node: 1 pass, 0 fail. Labels ``check`` (a CheckName value), ``mode``.
NODE_CHECK_STATUS = "fm_node_check_status"
#: How long the check took (whole seconds). Labels ``check``, ``mode``.
NODE_CHECK_DURATION = "fm_node_check_duration_seconds"
#: Unix time (seconds) the checks of ``mode`` last finished on the node. Label ``mode``.
NODE_CHECK_LAST_RUN = "fm_node_check_last_run_timestamp_seconds"
#: 1 for each failing check, with the failure as label ``reason`` (at most :data:`NODE_CHECK_REASON_MAX_CHARS`
#: printable ASCII characters; ``\`` and ``"`` escaped with a backslash, newlines become spaces: prometheus.io
#: "UTF-8 metric and label name escaping schemes": inside double quotes ``\``, ``\n`` and ``"`` MUST be escaped).
#: Labels ``check``, ``mode``, ``reason``.
NODE_CHECK_FAILURE_INFO = "fm_node_check_failure_info"
#: Longest ``reason`` label (characters): bounded so a chatty failure cannot blow up the series' size.
NODE_CHECK_REASON_MAX_CHARS = 120
#: Every node-check metric.
NODE_CHECK_METRICS = frozenset({NODE_CHECK_STATUS, NODE_CHECK_DURATION, NODE_CHECK_LAST_RUN, NODE_CHECK_FAILURE_INFO})
#: The prefix of every Slurm drain reason the node checks set (``scontrol update ... Reason="fmconstructs: ..."``).
NODE_CHECK_REASON_PREFIX = "fmconstructs:"

# --- the scheduled NCCL check (fmconstructs.health.nccl_report writes them; it keeps a copy) -------------------------
NCCL_PREFIX = "fm_nccl_"
#: all_reduce_perf bus bandwidth per message size (GB/s). Labels ``placement``, ``size_bytes``.
NCCL_BUSBW = f"{NCCL_PREFIX}allreduce_busbw_gbytes_per_second"
#: The run's ``Avg bus bandwidth`` (GB/s): all sizes averaged, small (latency-bound) ones included.
NCCL_AVG_BUSBW = f"{NCCL_PREFIX}allreduce_avg_busbw_gbytes_per_second"
#: Out-of-place busbw at the run's largest message size (GB/s): what the baseline, the floor and the published
#: figures (:func:`fmconstructs.catalog.nccl_allreduce_reference`) measure. Written for healthy runs only.
NCCL_MAX_SIZE_BUSBW = f"{NCCL_PREFIX}allreduce_max_size_busbw_gbytes_per_second"
#: The run's largest message size (bytes).
NCCL_MAX_SIZE_BYTES = f"{NCCL_PREFIX}allreduce_max_size_bytes"
#: The baseline (GB/s): the window's percentile, never below the floor; the floor alone while the window is empty.
NCCL_BASELINE_BUSBW = f"{NCCL_PREFIX}allreduce_baseline_busbw_gbytes_per_second"
#: The floor (GB/s): a fraction of the catalog's published figure for the type and node count, or the user's.
NCCL_FLOOR_BUSBW = f"{NCCL_PREFIX}allreduce_floor_busbw_gbytes_per_second"
#: The percentile of the runs in the window (GB/s), before the floor.
NCCL_WINDOW_BUSBW = f"{NCCL_PREFIX}allreduce_window_busbw_gbytes_per_second"
#: The drop below the baseline the check tolerates (a ratio: 0.1 for 10 %); the alert reads it.
NCCL_DROP_TOLERANCE = f"{NCCL_PREFIX}allreduce_drop_tolerance_ratio"
#: Runs in the baseline window, and how many it keeps.
NCCL_WINDOW_RUNS = f"{NCCL_PREFIX}baseline_window_runs"
NCCL_WINDOW_MAX_RUNS = f"{NCCL_PREFIX}baseline_window_max_runs"
#: 1 when the last run entered the window (healthy, at or above the floor, within the tolerance of the baseline).
NCCL_LAST_IN_BASELINE = f"{NCCL_PREFIX}last_run_in_baseline"
NCCL_LAST_RUN = f"{NCCL_PREFIX}last_run_timestamp_seconds"
NCCL_LAST_SUCCESS = f"{NCCL_PREFIX}last_run_success"
#: Unix time of the newest run in the window (the baseline last moved then).
NCCL_BASELINE_TIME = f"{NCCL_PREFIX}baseline_timestamp_seconds"
#: The longest time between two scheduled runs (seconds), from the check's schedule.
NCCL_SCHEDULE_INTERVAL = f"{NCCL_PREFIX}schedule_interval_seconds"
#: When the next report is due at the latest: this run + the schedule's interval + the job's time limit.
NCCL_NEXT_RUN_DUE = f"{NCCL_PREFIX}next_run_due_timestamp_seconds"
#: 1 while the scheduled check waits behind other work holding its nodes (Slurm: the job pending for Resources or
#: Priority while other jobs run; EKS: a worker pod unschedulable for lack of GPUs). Written by the queue probe.
NCCL_CHECK_DEFERRED = f"{NCCL_PREFIX}check_deferred"
#: Unix time of the queue probe's last look, and whether it could look (1) or not (0).
NCCL_QUEUE_PROBE_TIME = f"{NCCL_PREFIX}queue_probe_timestamp_seconds"
NCCL_QUEUE_PROBE_SUCCESS = f"{NCCL_PREFIX}queue_probe_success"
#: The queue probe's textfile (Slurm: written next to ``fm_nccl.prom`` in node exporter's textfile directory).
NCCL_QUEUE_TEXTFILE = "fm_nccl_queue.prom"
#: Average bus bandwidth of one two-node test (GB/s). Labels ``pair`` (index), ``node_a``, ``node_b``.
NCCL_PAIR_BUSBW = f"{NCCL_PREFIX}pair_avg_busbw_gbytes_per_second"
#: 1 when the node was in the slowest pair of the last ``N`` pairwise runs in a row. Labels ``node`` (Slurm host
#: name), ``instance_id`` of the node when known (``suspect_instance_id``: the scrape's own ``instance_id`` wins).
NCCL_SUSPECT_NODE = f"{NCCL_PREFIX}suspect_node"
#: How many pairwise runs in a row the node was in the slowest pair.
NCCL_SLOWEST_STREAK = f"{NCCL_PREFIX}slowest_pair_streak"
#: What the report writes (the queue probe's three are :data:`NCCL_QUEUE_METRICS`).
NCCL_REPORT_METRICS = frozenset(
    {
        NCCL_BUSBW,
        NCCL_AVG_BUSBW,
        NCCL_MAX_SIZE_BUSBW,
        NCCL_MAX_SIZE_BYTES,
        NCCL_BASELINE_BUSBW,
        NCCL_FLOOR_BUSBW,
        NCCL_WINDOW_BUSBW,
        NCCL_DROP_TOLERANCE,
        NCCL_WINDOW_RUNS,
        NCCL_WINDOW_MAX_RUNS,
        NCCL_LAST_IN_BASELINE,
        NCCL_LAST_RUN,
        NCCL_LAST_SUCCESS,
        NCCL_BASELINE_TIME,
        NCCL_SCHEDULE_INTERVAL,
        NCCL_NEXT_RUN_DUE,
        NCCL_PAIR_BUSBW,
        NCCL_SUSPECT_NODE,
        NCCL_SLOWEST_STREAK,
    }
)
NCCL_QUEUE_METRICS = frozenset({NCCL_CHECK_DEFERRED, NCCL_QUEUE_PROBE_TIME, NCCL_QUEUE_PROBE_SUCCESS})
NCCL_METRICS = NCCL_REPORT_METRICS | NCCL_QUEUE_METRICS

# --- alerts and the remediation contract ----------------------------------------------------------------------------
#: A node failed a node-join check (critical, per instance, labels ``check``, ``mode``, ``reason``).
ALERT_NODE_CHECK_FAILED = "FmNodeCheckFailed"
#: A node was in the slowest pair of the pairwise NCCL check too many runs in a row.
ALERT_NCCL_OUTLIER = "FmNcclOutlier"
#: The cluster's NCCL busbw fell below its baseline (cluster-wide: no node to remediate).
ALERT_NCCL_BELOW_BASELINE = "NcclBusBandwidthBelowBaseline"
ALERT_NCCL_CHECK_FAILED = "NcclCheckFailed"
ALERT_NCCL_CHECK_STALE = "NcclCheckStale"
#: The alert label that names the remediation trigger (a ``Trigger`` value); it overrides the alert-name mapping.
TRIGGER_LABEL = "fmconstructs_trigger"
#: ``Trigger.NODE_CHECK_FAILED.value``.
TRIGGER_NODE_CHECK_FAILED = "node-check-failed"
#: ``Trigger.NCCL_OUTLIER.value``.
TRIGGER_NCCL_OUTLIER = "nccl-outlier"
#: The node annotation remediation sets when it cordons a Kubernetes node, and its value: the EKS node-check gate
#: uncordons a node carrying it once its checks pass after the reboot (remediation puts the node-checks taint back
#: before it reboots, so the gate runs again: :mod:`fmconstructs.health.kubernetes_gate`); a node cordoned without it
#: is an operator's, which neither side touches. The remediation handler keeps a copy
#: (``fmconstructs/remediation/handler/kube.py``).
CORDONED_BY_ANNOTATION = "fmconstructs.io/cordoned-by"
CORDONED_BY_REMEDIATION = "remediation"
#: Why remediation cordoned the node (``kubectl describe node``); the gate removes it with the cordon.
REMEDIATION_REASON_ANNOTATION = "fmconstructs.io/remediation-reason"
