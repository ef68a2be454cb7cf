"""GitLab merge requests: the webhook service's side (payloads, revisions, commands, the run)."""
