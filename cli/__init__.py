"""The `welcomemat` command line: the only package that composes server, precompute and outbound.

See `cli.main`. The package itself exports nothing.
"""
