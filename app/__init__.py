"""rayservice-impact's shell: CLI, HTTP service, GitHub and Argo CD integrations (all I/O)."""
