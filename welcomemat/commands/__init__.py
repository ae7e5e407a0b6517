"""Subcommand implementations, imported lazily by `welcomemat.cli`."""
