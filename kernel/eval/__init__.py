"""`reins eval`: tasks, checks, scoring, the runner and the command (docs/EVAL.md)."""
