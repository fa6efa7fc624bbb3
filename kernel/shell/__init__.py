"""Reading shell command lines: `parse` splits them into simple commands, `classify` says
which ones the user must be asked about."""
