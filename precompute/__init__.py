"""precompute: see README.md."""
