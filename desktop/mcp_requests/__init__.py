"""What MCP servers ask of the user in the app: forms (elicitation), sampling approvals, and
the prompt box's `/` menu of their prompts."""
