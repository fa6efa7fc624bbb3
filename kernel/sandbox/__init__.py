"""Running shell commands on the user's machine, confined.

`executor.CommandExecutor` runs one command (`launcher` picks how: bubblewrap on Linux, see
`bwrap`; an approved unsandboxed run otherwise), with the environment of `env`, the limits
of `limits`, and reports the sandbox state of `detect` (`doctor` words it for people).
"""
