"""The runner: plan (pure) -> execute (asyncio) -> score. ``evalh.runner.execute.run_suite`` is the entry."""
