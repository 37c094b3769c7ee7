"""Closed-form theory, one pure module per paper (consensus is shared)."""
