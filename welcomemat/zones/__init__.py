"""Zone sets and zone contracts: the published value, its resolution for a visitor, store, review."""
