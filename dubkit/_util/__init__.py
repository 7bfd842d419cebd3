"""Small helpers both stacks use, the client and the sandbox; they import nothing of dubkit's.

``masking``  how a key or secret is shown: ``sk_…3f2a``
``signing``  the webhook signature (HMAC-SHA256 of timestamp + raw body, interface §4.3)
``words``    English for counts in reprs and messages: ``1 line``, ``2 lines``
``deprecation``  old public names kept for one version, warning with the new name
"""
