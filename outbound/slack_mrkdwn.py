"""Text for Slack's `mrkdwn`: the one escaper of everything a seller alert shows in a chat channel.

Slack reads `<...>` in message text as a link, a user or a broadcast (`<!channel>`), and `&` as
the start of an entity; it asks senders to escape exactly `&`, `<` and `>`
(https://api.slack.com/reference/surfaces/formatting#escaping). Every value an alert puts in
its text (an account name, a fact statement, the campaign's next step) passes through
`escape_mrkdwn`, so an account called `<!channel>` pings nobody and a statement can never
turn into a link. Links are built by `mrkdwn_link` only, from URLs that passed the URL gate.
"""

from __future__ import annotations

__all__ = ["escape_mrkdwn", "mrkdwn_link"]

# `&` first: escaping it after `<` would turn `&lt;` into `&amp;lt;`.
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
# Characters that end or split Slack's `<url|label>` syntax; a normalised https URL holds none
# of them in practice (the URL gate percent-encodes `<` and `>`), but a `|` is legal in a path.
_LINK_BREAKERS = frozenset("<>|")


def escape_mrkdwn(text: str) -> str:
    """`text` as Slack shows it literally: `&`, `<` and `>` as entities, nothing else changed."""
    for raw, entity in _ESCAPES:
        text = text.replace(raw, entity)
    return text


def mrkdwn_link(url: str | None, label: str) -> str:
    """`<url|label>` with the label escaped; the escaped label alone when there is no usable URL.

    `url` must come from the URL gate (`welcomemat.security.urlgate`): this only refuses what would break
    Slack's syntax, it does not decide whether a link may be shown.
    """
    if not url or any(c in _LINK_BREAKERS or c.isspace() for c in url):
        return escape_mrkdwn(label)
    return f"<{url.replace('&', '&amp;')}|{escape_mrkdwn(label)}>"
