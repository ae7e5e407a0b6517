"""The choke points: tokens and links, the URL gate, escaping, credentials, IP ranges."""
