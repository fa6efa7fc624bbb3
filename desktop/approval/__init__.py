"""The approval dialog and its queue."""
