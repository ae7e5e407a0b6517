"""Zone writers behind one small interface: `offline` (default) and model-backed providers."""
