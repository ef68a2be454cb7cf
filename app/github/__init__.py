"""The GitHub pull-request flow: read the change, analyse it, post the comment and the gate.

Shared by the webhook service (:mod:`app.webhooks.github`) and the CI poster
(:mod:`app.github.post_comment`), so both leave the same comment and status.
"""
