"""Source of the Grafana provisioning Lambda (:mod:`.index`); bundled as a Lambda asset, never imported at synth."""
