"""Ray Serve deployments, HTTP API, batch scoring and the `finrag` CLI."""
