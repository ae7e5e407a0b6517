"""`/admin/...`: the operator's routes, their credential check and payloads."""
