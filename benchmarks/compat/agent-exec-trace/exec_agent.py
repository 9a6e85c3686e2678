"""The traced agent of ../agent-trajectory run as an `exec:` provider by a plain Python (no OpenTelemetry
SDK): its spans go as OTLP/JSON. The trace context comes from the context argument (promptfoo passes
`traceparent` there, as evalh does), else from the TRACEPARENT variable (evalh's `exec:` environment)."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent-trajectory"))
from agent import TRAJECTORIES, export_json

prompt, options, context = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
case = context["vars"]["case"]
traceparent = context.get("traceparent") or os.environ.get("TRACEPARENT")
if traceparent:
    collector = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or options["config"]["collector"]
    export_json(traceparent, TRAJECTORIES[case], collector.rstrip("/"))
print(f"done: {case}")
