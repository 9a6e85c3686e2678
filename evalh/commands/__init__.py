"""evalh's sub-commands that live outside ``cli.py``, one module each, registered from ``cli.py``."""
