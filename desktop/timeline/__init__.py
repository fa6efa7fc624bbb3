"""The tool-call timeline: `TimelinePanel` (see desktop/timeline/panel.py for its API)."""

from desktop.timeline.panel import TimelinePanel

__all__ = ["TimelinePanel"]
