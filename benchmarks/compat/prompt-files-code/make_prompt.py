import json
import sys

context = json.loads(sys.argv[1])
print(f"Tell me about the city {context['vars']['city']}.")
