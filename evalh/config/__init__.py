"""The config layer: YAML -> file:// and env -> JSON-Schema check -> semantic checks -> ``evalh.model.Suite``.

``load.py`` is the entry point (``find_config``, ``load_suite``); ``env.py`` renders ``{{ env.X }}`` at
load time where nothing renders later (templates themselves are rendered by ``evalh.templating``);
``schema.py`` locates and loads the JSON Schemas shipped with evalh.
"""

__all__: list[str] = []
