"""The optimizer: EditAdam, collective evolution, the training engine and its policies."""
