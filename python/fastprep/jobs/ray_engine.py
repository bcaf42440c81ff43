"""The Ray Data engine: placeholder replaced below."""
