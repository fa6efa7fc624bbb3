"""The built-in demo model: its script (`script.py`) and the loopback server that runs it
(`server.py`). Its names, which the UI shows, are kernel.shared.demo."""
