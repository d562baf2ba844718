"""Node-side collectors (stdlib-only scripts installed on GPU nodes) and their user data."""
