"""RocketMQ's limits on topic and consumer-group names, in a module of their own: the client tools check their
arguments against them without importing the API models (`rules` builds its rules from the same values)."""

from __future__ import annotations

# RocketMQ's TopicValidator: topic (and group) names are ^[%|a-zA-Z0-9_-]+$, topics at most 127 characters;
# Validators.checkGroup allows groups up to 255 characters.
TOPIC_NAME_PATTERN = r"^[%|a-zA-Z0-9_-]+$"
TOPIC_NAME_MAX = 127
GROUP_NAME_MAX = 255
