"""Replicas of one memory on several devices: the sync segment format and its clock (pure: no store, no files)."""
