"""The cluster twin: real Slurm 24.11, node_exporter, Prometheus and Alertmanager on one host, fed with what the
library renders (issue 29). Tests of the tier live in ``tests/twin/``; this package is the reusable harness.

See ``docs/development/twin.md`` for how it runs, the time factor and what it substitutes.
"""
