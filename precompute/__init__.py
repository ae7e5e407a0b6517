"""The batch job: turns governed account records into checked zone sets and publishes them.

Identity, trust, firmographics, the providers that write drafts, the deterministic checks,
the fallback ladder, publishing, QA and the distributed worker. It imports only the core
(`welcomemat`), never `server` or `outbound`: what the renderer needs from a run is in Redis.
The package itself exports nothing; docs/reference/layout.md lists its modules.
"""
