"""Engagement in: events, the beacon, the CTA redirect, conversions, the collector."""
