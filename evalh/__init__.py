"""evalh: a declarative, YAML-driven evaluator for LLM outputs."""

__all__ = ["__version__"]

__version__ = "0.1.0"
