"""The Evaluations window (`reins eval` in a child process, its results, charts, comparison)."""
