"""The chat: Markdown messages, tool cards, and the prompt box."""
