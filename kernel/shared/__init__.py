"""Pure modules the UI process shares with the kernel: what a file is as an attachment,
which folders are too broad for a workspace, the API key's names and key file, the demo
model's names. Each imports no kernel module outside the shared vocabularies, so the UI
may import them (tests/desktop/test_desktop_imports.py holds it to that)."""
