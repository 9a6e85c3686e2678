"""``evalh view``: a local, read-only web viewer of runs (the server) and its static assets.

The assets (``evalh/assets/viewer/``: hand-written JavaScript and CSS, no build step) are package data,
shipped in the wheel; the ``.html`` report inlines the same files (``evalh.reports.html``).
"""
