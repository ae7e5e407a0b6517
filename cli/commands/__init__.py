"""One module per subcommand: each `register(subparsers)` adds its parser and sets its handler.

A module imports only argparse and `cli.arg_types` at the top; its handler imports the layer
that does the work (`precompute`, `server`, `outbound` or `cli`'s own modules) when it runs,
so `welcomemat --help` loads none of them. `cli.main.COMMANDS` lists them in the order
`welcomemat --help` shows them.
"""
