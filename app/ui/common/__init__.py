"""What several windows share: the conversation model and its storage, token styling and the
token view, formatting, translations, latency."""
