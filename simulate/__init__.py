"""Fault scenarios with ground truth, and the harness that scores the engine on them
(`faultgraph simulate`, `faultgraph eval`). Kept apart from the engine (`faultgraph.attribution`),
which never imports it: see simulate/README.md."""
