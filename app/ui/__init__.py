"""The desktop app's widgets (PySide6). Never imports torch or transformers: from the engine
only the pure-data modules (events, config, compare, errors)."""
