"""Settings: the typed store over QSettings and the settings dialog."""
