"""Assertions: one module per family, all registered in ``registry``."""
