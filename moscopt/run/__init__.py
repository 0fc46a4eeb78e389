"""A run's files: the run directory, its state, its ledger and its history."""
