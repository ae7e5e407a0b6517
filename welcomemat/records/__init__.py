"""The shared records: accounts, what they did, conversions, erasure, the audit log."""
