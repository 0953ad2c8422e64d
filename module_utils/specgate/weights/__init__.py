"""model_weights: hub snapshots, their plan, progress and manifest, the target's and drafter's configs."""
