"""Welcomemat: account-aware website personalization for B2B marketing teams.

The shared core: models, contracts, Redis key schema and store, safety choke points,
tokens, settings, the one Streams consumer loop. It imports neither Starlette nor openai.
"""

__version__ = "0.1.0"
