"""Welcomemat: account-aware website personalization for B2B marketing teams.

The shared core: models, contracts, the campaign config codec and view, zone resolution,
Redis key schema and store, safety choke points, tokens and links, records, arms, lift
maths, settings, the one Streams consumer loop. It imports no package above it (server,
precompute, outbound, cli) and no framework (neither Starlette nor openai).
"""

__version__ = "0.1.0"
