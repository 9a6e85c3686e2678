import json
import sys

context = json.loads(sys.argv[1])
print(f"Generated prompt about {context['vars']['topic']}")
