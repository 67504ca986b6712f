"""Platforms: where rendered groups run (Kubernetes via kopf, or local processes)."""
