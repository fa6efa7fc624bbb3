"""Reading shell command lines: `parse` reads them into the simple commands they run (the
ones wrappers and shell text run included), `classify` gives their risk label."""
