"""Reading a run: status, log, diff and the report page."""
