"""Software-defined assets and asset checks."""
