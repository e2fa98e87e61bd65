"""The daemon's local status endpoint, its document, and a client for it."""
