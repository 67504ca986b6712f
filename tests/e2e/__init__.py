"""End-to-end tests on the real one-node cluster (a package so that its fixtures can be package-scoped)."""
