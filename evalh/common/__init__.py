"""The small cross-cutting homes, one concern each: deadlines, limits, notices, activity, the cyclic
collector's policy, SQLite file recovery, vector maths and the version. They import nothing of evalh but
``errors`` and ``secrets`` (docs/architecture.md)."""
