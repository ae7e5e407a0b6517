"""The generated reference pages: the command line, the configuration, the source layout.

Each page is rendered from the code it documents; `cli.reference_pages` writes them under
docs/reference/ and checks them. The package itself exports nothing.
"""
