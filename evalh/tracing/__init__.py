"""A run's traces: the OTLP/HTTP receiver on loopback, the one decoder of OTLP spans (JSON and protobuf),
the bounded per-trace span collector, and the W3C trace context each provider call gets."""
