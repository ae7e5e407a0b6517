"""Claims a draft makes, and whether a cited fact backs each one."""
