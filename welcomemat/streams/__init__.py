"""The one Redis Streams consumer loop, its groups and handlers."""
