"""faultgraph.train: the training-side hook (standard library only)."""
