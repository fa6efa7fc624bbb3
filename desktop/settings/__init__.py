"""The settings dialog and where settings and the API key are kept."""
