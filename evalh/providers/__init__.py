"""Providers: where outputs, embeddings and grader verdicts come from. See ``registry`` for the ids."""
