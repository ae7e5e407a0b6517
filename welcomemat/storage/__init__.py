"""Redis connections: the client, the embedded server, the circuit breaker."""
