"""outbound: see README.md."""
