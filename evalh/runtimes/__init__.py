"""User code with deadlines: Python in worker processes, programs in their own process groups, patterns
with a time limit. Nothing here can keep evalh from stopping: a timeout or a cancellation kills it."""
