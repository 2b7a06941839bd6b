"""Training progress: per-step timing folded from `train_step` events, for fail-slow detection."""
