"""Which facts are trusted: recency, subject, refusals, problems."""
