from dashboard.cli import entry

entry()
