"""SpecChat: a desktop chat app that makes speculative decoding visible."""

__version__ = "0.1.0"
