"""The model library: models found on this machine, pairing suggestions."""
