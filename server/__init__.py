"""The Starlette renderer: identifies a visitor, resolves their zones and serves them.

Landing and continuation pages, the snippet's `/v1/zones` and `/v1/events`, QR redirects,
conversions from the CRM, and the admin pages. It imports only the core (`welcomemat`), never
`precompute` or `outbound`, so a renderer deploys without the batch job or the sync. The
package itself exports nothing; docs/reference/layout.md lists its modules.
"""
