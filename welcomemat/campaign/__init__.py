"""The campaign contract: `campaign.yaml` and its sections, checks, view, guidelines, voice, experiments."""
