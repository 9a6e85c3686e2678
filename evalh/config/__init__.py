"""The config layer: YAML -> file:// and env -> JSON-Schema check -> semantic checks -> ``evalh.model.Suite``.

``load.py`` is the entry point (``find_config``, ``load_suite``); ``templating.py`` is the one place that
renders templates; ``schema.py`` locates and loads the JSON Schemas shipped with evalh.
"""

__all__: list[str] = []
