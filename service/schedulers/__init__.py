"""Schedulers register their jobs themselves (SPEC §4): Slurm's prolog/epilog, Kubernetes' pods."""
