"""Compare (a rerun the other way, side by side, with a diff) and the Why panel with its charts."""
