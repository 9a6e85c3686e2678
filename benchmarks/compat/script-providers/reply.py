import sys

print(f"exec says {sys.argv[1]}")
