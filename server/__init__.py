"""server: see README.md."""
