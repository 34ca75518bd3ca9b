"""The chat window's parts: the conversation list, the answer widgets, the composer, the controller."""
