"""Engagement back to the systems around the site: sync, CRM webhook, exports, mail, reports.

Folds engagement events into the shared account records, pushes changes and seller alerts
out, writes the sequencer export and the direct-mail files, imports conversions and prints
the lift report. It imports only the core (`welcomemat`), never `server` or `precompute`.
The package itself exports nothing; docs/reference/layout.md lists its modules.
"""
