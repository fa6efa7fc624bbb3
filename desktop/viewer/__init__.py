"""The output viewer. UI: desktop/viewer/window.py (`OutputViewer`, `show_output`).

Nothing is imported here, so the worker process (desktop/viewer/worker.py) starts without Qt.
"""
