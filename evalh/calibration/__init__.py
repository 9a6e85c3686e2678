"""``evalh calibrate``: thresholds derived from labelled tests (metrics.py holds the pure math)."""
