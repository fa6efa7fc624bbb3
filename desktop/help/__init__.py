"""The Help menu (keyboard shortcuts, About) and the window's keyboard actions."""
