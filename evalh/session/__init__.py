"""Runs built from configs and reports: a run (run.py), a retry of a report's errors (retry.py), shards
merged (merge.py, shard_reports.py) and calibration's collection of labelled runs (calibration.py). The
layer above the runner, the reports and the store; below the faces (docs/architecture.md)."""
