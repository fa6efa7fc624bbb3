"""`reins eval`: tasks, checks, scoring and the runner (docs/EVAL.md; the command is
kernel.cli.cmd_eval)."""
