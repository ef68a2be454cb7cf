"""GitLab: the CI route (:mod:`.ci`, :mod:`.post_note`)."""
