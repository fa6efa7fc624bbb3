"""The readers of what writing programs write, by program family: one module each (files,
editors, archives, compressors, downloads, keys, schedulers, media, sqlite, packages,
compilers, git), over the shared option scanners (options) and target words (targets).
The table of which program is read by which reader, and the entry points, are
kernel.shell.writes'. Pure."""
